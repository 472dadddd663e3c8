package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHelmIngress: an Ingress to the Service's http port, whose hosts the
// router then serves (server.allowed_hosts: without them every request
// through it would get 403 host_not_allowed); none by default.
func TestHelmIngress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	if docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai")); docs["Ingress/r-skillrouter"] != nil {
		t.Error("an Ingress rendered by default")
	}
	set := []string{"--set", "ingress.enabled=true", "--set", "ingress.className=nginx",
		"--set", "ingress.hosts[0].host=llm.example.com", "--set", "ingress.hosts[0].paths[0].path=/",
		"--set", "ingress.hosts[1].host=llm2.example.com",
		"--set", "ingress.tls[0].secretName=llm-tls", "--set", "ingress.tls[0].hosts[0]=llm.example.com",
		"--set-string", "ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/proxy-body-size=8m",
		"--set", "config.server.allowed_hosts[0]=llm.example.com"}
	runHelm(t, append([]string{"lint", "--strict", chartDir}, set...)...)
	docs := parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, set...)...))
	ing := docs["Ingress/r-skillrouter"]
	if ing == nil {
		t.Fatalf("no Ingress (got %v)", keys(docs))
	}
	if str(ing, "spec", "ingressClassName") != "nginx" || str(ing, "metadata", "annotations", "nginx.ingress.kubernetes.io/proxy-body-size") != "8m" {
		t.Errorf("class or annotations lost: %v", ing)
	}
	if str(ing, "spec", "tls", 0, "secretName") != "llm-tls" {
		t.Errorf("tls %v", get(ing, "spec", "tls"))
	}
	rules := list(ing, "spec", "rules")
	if len(rules) != 2 || str(rules[0], "host") != "llm.example.com" || str(rules[1], "host") != "llm2.example.com" {
		t.Fatalf("rules %v", rules)
	}
	for _, r := range rules {
		p := get(r, "http", "paths", 0)
		if str(p, "path") != "/" || str(p, "pathType") != "Prefix" || str(p, "backend", "service", "name") != "r-skillrouter" ||
			str(p, "backend", "service", "port", "name") != "http" {
			t.Errorf("path %v: want / (Prefix) to the Service's http port", p)
		}
	}
	cfg := checkDeployment(t, docs)
	hosts := cfg.Server.AllowedHosts
	for _, h := range []string{"llm.example.com", "llm2.example.com", "r-skillrouter.ai.svc"} {
		if !slices.Contains(hosts, h) {
			t.Errorf("server.allowed_hosts %v lacks %s", hosts, h)
		}
	}
	if n := strings.Count(strings.Join(hosts, ","), "llm.example.com"); n != 1 {
		t.Errorf("server.allowed_hosts %v names llm.example.com %d times", hosts, n)
	}
	// An Ingress without rules is refused by the API server: refused here.
	for _, set := range [][]string{{"--set", "ingress.hosts=null"}, {"--set", "ingress.hosts={}"}} {
		if out, err := helmTemplate(t, append([]string{"--set", "ingress.enabled=true"}, set...)...); err == nil || !strings.Contains(out, "ingress.hosts") {
			t.Errorf("%v rendered: %v\n%s", set, err, out)
		}
	}
}

// TestHelmNetworkPolicy: the router's pods (not the index Job's) accept
// the API port from the peers given and the metrics port from its own;
// egress stays open unless rules are given, and then DNS is among them.
func TestHelmNetworkPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	if docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai")); docs["NetworkPolicy/r-skillrouter"] != nil {
		t.Error("a NetworkPolicy rendered by default")
	}
	base := []string{"-f", filepath.Join(chartDir, "ci/configmap-pvc-index-values.yaml"), "--set", "networkPolicy.enabled=true"}

	docs := parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, base...)...))
	np := docs["NetworkPolicy/r-skillrouter"]
	if np == nil {
		t.Fatalf("no NetworkPolicy (got %v)", keys(docs))
	}
	routerPod := get(docs["Deployment/r-skillrouter"], "spec", "template", "metadata", "labels")
	if !selectorMatches(t, get(np, "spec", "podSelector"), routerPod) {
		t.Errorf("podSelector %v does not match the router's pods %v", get(np, "spec", "podSelector"), routerPod)
	}
	if jobPod := get(docs["Job/r-skillrouter-index-build"], "spec", "template", "metadata", "labels"); selectorMatches(t, get(np, "spec", "podSelector"), jobPod) {
		t.Errorf("podSelector matches the index Job's pod %v", jobPod)
	}
	if types := fmt.Sprint(get(np, "spec", "policyTypes")); types != "[Ingress]" {
		t.Errorf("policyTypes %s: egress must stay open without rules", types)
	}
	in := list(np, "spec", "ingress")
	if len(in) != 2 || str(in[0], "ports", 0, "port") != "http" || str(in[1], "ports", 0, "port") != "metrics" {
		t.Fatalf("ingress rules %v: want the http port and (ServiceMonitor) the metrics port", in)
	}
	if get(in[0], "from") != nil {
		t.Errorf("from %v without peers given: want from anywhere", get(in[0], "from"))
	}
	for _, port := range []string{"http", "metrics"} {
		if byName(list(routerContainer(docs), "ports"), port) == nil {
			t.Errorf("the policy names port %s, which the router's container does not", port)
		}
	}

	peers := append(slices.Clone(base),
		"--set", "networkPolicy.from[0].namespaceSelector.matchLabels.team=agents",
		"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring",
		"--set", "networkPolicy.egress[0].ports[0].port=443")
	runHelm(t, append([]string{"lint", "--strict", chartDir}, peers...)...)
	np = parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, peers...)...))["NetworkPolicy/r-skillrouter"]
	in = list(np, "spec", "ingress")
	if fmt.Sprint(get(in[0], "from")) != "[map[namespaceSelector:map[matchLabels:map[team:agents]]]]" ||
		fmt.Sprint(get(in[1], "from")) != "[map[namespaceSelector:map[matchLabels:map[name:monitoring]]]]" {
		t.Errorf("peers: api %v, metrics %v", get(in[0], "from"), get(in[1], "from"))
	}
	if types := fmt.Sprint(get(np, "spec", "policyTypes")); types != "[Ingress Egress]" {
		t.Errorf("policyTypes %s with egress rules", types)
	}
	eg := list(np, "spec", "egress")
	if len(eg) != 2 || fmt.Sprint(get(eg[0], "ports", 0, "port")) != "53" || fmt.Sprint(get(eg[1], "ports", 0, "port")) != "443" {
		t.Errorf("egress %v: want DNS, then the rules given", eg)
	}
}

// TestHelmGitSyncAuth: a private repository's credentials come from the
// operator's Secret: a token as git-sync's environment (HTTPS), or a key
// and known_hosts mounted read-only with git-sync running as the image's
// own user, whom ssh can look up (SSH); both containers alike. A type
// without a Secret, or an unknown type, is refused.
func TestHelmGitSyncAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	gitsync := []string{"-f", filepath.Join(chartDir, "ci/gitsync-remote-embedder-values.yaml")}
	containers := func(docs map[string]manifest) []map[string]any {
		spec := get(docs["Deployment/r-skillrouter"], "spec", "template", "spec")
		return []map[string]any{byName(list(spec, "initContainers"), "git-sync-init"), byName(list(spec, "containers"), "git-sync")}
	}

	docs := parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, gitsync...)...))
	for _, c := range containers(docs) {
		if c == nil {
			t.Fatal("no git-sync containers")
		}
		if byName(list(c, "env"), "GITSYNC_PASSWORD") != nil || byName(list(c, "volumeMounts"), "git-secret") != nil || get(c, "securityContext", "runAsUser") != nil {
			t.Errorf("%s has credentials without auth: %v", c["name"], c)
		}
		if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--repo=https://github.com/example/skills") {
			t.Errorf("%s args %s", c["name"], args)
		}
	}
	init, side := containers(docs)[0], containers(docs)[1]
	if !slices.Contains(list(init, "args"), any("--one-time")) || slices.Contains(list(side, "args"), any("--one-time")) || !slices.Contains(list(side, "args"), any("--period=60s")) {
		t.Errorf("init args %v, sidecar args %v", list(init, "args"), list(side, "args"))
	}

	https := append(slices.Clone(gitsync), "--set", "skills.gitSync.auth.type=https", "--set", "skills.gitSync.auth.existingSecret=skills-git")
	runHelm(t, append([]string{"lint", "--strict", chartDir}, https...)...)
	docs = parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, https...)...))
	checkDeployment(t, docs)
	for _, c := range containers(docs) {
		for name, key := range map[string]string{"GITSYNC_USERNAME": "username", "GITSYNC_PASSWORD": "password"} {
			e := byName(list(c, "env"), name)
			if str(e, "valueFrom", "secretKeyRef", "name") != "skills-git" || str(e, "valueFrom", "secretKeyRef", "key") != key {
				t.Errorf("%s: %s = %v, want the Secret's key %s", c["name"], name, e, key)
			}
		}
	}
	if strings.Contains(fmt.Sprint(routerContainer(docs)), "skills-git") {
		t.Error("the router container gets the git credentials")
	}

	ssh := append(slices.Clone(gitsync), "--set", "skills.gitSync.repo=git@github.com:example/skills.git",
		"--set", "skills.gitSync.auth.type=ssh", "--set", "skills.gitSync.auth.existingSecret=skills-git")
	runHelm(t, append([]string{"lint", "--strict", chartDir}, ssh...)...)
	docs = parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, ssh...)...))
	checkDeployment(t, docs)
	vol := byName(list(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "volumes"), "git-secret")
	if str(vol, "secret", "secretName") != "skills-git" || fmt.Sprint(get(vol, "secret", "defaultMode")) != "288" {
		t.Errorf("git-secret volume %v: want the Secret, mode 0440", vol)
	}
	for _, c := range containers(docs) {
		args := fmt.Sprint(c["args"])
		for _, a := range []string{"--ssh-key-file=/etc/git-secret/ssh", "--ssh-known-hosts=true", "--ssh-known-hosts-file=/etc/git-secret/known_hosts"} {
			if !strings.Contains(args, a) {
				t.Errorf("%s args %s lack %s", c["name"], args, a)
			}
		}
		if m := byName(list(c, "volumeMounts"), "git-secret"); str(m, "mountPath") != "/etc/git-secret" || m["readOnly"] != true {
			t.Errorf("%s mounts the key at %v", c["name"], m)
		}
		if fmt.Sprint(get(c, "securityContext", "runAsUser")) != "65533" || get(c, "securityContext", "readOnlyRootFilesystem") != true {
			t.Errorf("%s securityContext %v: want git-sync's own user, the root filesystem still read-only", c["name"], get(c, "securityContext"))
		}
	}
	if byName(list(routerContainer(docs), "volumeMounts"), "git-secret") != nil {
		t.Error("the router container mounts the git key")
	}
	// The user is set in the values' context, not added to it: a context
	// that names a user, or none at all, still renders one runAsUser.
	for _, set := range [][]string{{"--set", "securityContext.runAsUser=1000"}, {"--set", "securityContext=null"}} {
		out := runHelm(t, append(append([]string{"template", "r", chartDir, "--namespace", "ai"}, ssh...), set...)...)
		if n := strings.Count(out, "runAsUser: 65533"); n != 2 || strings.Contains(out, "runAsUser: 1000\n            runAsUser") {
			t.Errorf("%v: %d git-sync containers run as 65533:\n%s", set, n, out)
		}
		if docs := parseManifests(t, out); set[1] != "securityContext=null" {
			checkDeployment(t, docs)
		}
	}

	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"--set", "skills.gitSync.auth.type=ssh"}, "existingSecret"},
		{[]string{"--set", "skills.gitSync.auth.type=https"}, "username and password"},
		{[]string{"--set", "skills.gitSync.auth.type=token", "--set", "skills.gitSync.auth.existingSecret=s"}, "want none, https or ssh"},
	} {
		out, err := helmTemplate(t, append(slices.Clone(gitsync), c.set...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%v: want a refusal naming %q, got %v:\n%s", c.set, c.want, err, out)
		}
	}
}

// TestHelmSkillsClaimRequired: the pods mount the library read-only, so a
// claim the chart created would stay empty and every pod would serve no
// skills. skills.source pvc names the operator's claim or is refused.
func TestHelmSkillsClaimRequired(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	out, err := helmTemplate(t, "--set", "skills.source=pvc")
	if err == nil || !strings.Contains(out, "skills.pvc.existingClaim") || !strings.Contains(out, "helm.sh/resource-policy=keep") {
		t.Errorf("skills.source=pvc without a claim rendered: %v\n%s", err, out)
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "-f", filepath.Join(chartDir, "ci/pvc-values.yaml")))
	for k := range docs {
		if strings.HasPrefix(k, "PersistentVolumeClaim/") {
			t.Errorf("%s rendered for an existing claim", k)
		}
	}
}

// TestHelmRefusesPodsThatFail: values that render pods which then crash or
// an HPA that never scales are refused when the chart renders.
func TestHelmRefusesPodsThatFail(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	git := []string{"--set", "skills.source=gitSync", "--set", "skills.gitSync.repo=https://example.com/skills"}
	for _, tt := range []struct {
		name string
		set  []string
		want string
	}{
		{"metrics on the API port", []string{"--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.port=8080"}, "needs a port of its own"},
		{"metrics_listen on the API port", []string{"--set", "config.server.metrics_listen=0.0.0.0:8080"}, "needs a port of its own"},
		{"tracing protocol serve refuses", []string{"--set", "tracing.endpoint=http://c:4318", "--set", "tracing.protocol=http/json"}, "/tracing/protocol"},
		{"unknown sampler", []string{"--set", "tracing.sampler=bogus"}, "/tracing/sampler"},
		{"HPA without a CPU request", []string{"--set", "autoscaling.enabled=true", "--set", "resources=null"}, "resources.requests.cpu"},
		{"HPA with git-sync without one", append(git, "--set", "autoscaling.enabled=true", "--set", "skills.gitSync.resources=null"), "skills.gitSync.resources.requests.cpu"},
	} {
		if out, err := helmTemplate(t, tt.set...); err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("%s: rendered (err %v), want a refusal naming %q:\n%.400s", tt.name, err, tt.want, out)
		}
	}
	// The defaults scale with git-sync: it has a CPU request of its own; a
	// CPU limit alone sets the request, and a LimitRange may give one.
	for _, set := range [][]string{
		append(git, "--set", "autoscaling.enabled=true"),
		{"--set", "autoscaling.enabled=true", "--set", "resources.requests=null", "--set", "resources.limits.cpu=1"},
		{"--set", "autoscaling.enabled=true", "--set", "resources=null", "--set", "autoscaling.skipRequestCheck=true"},
	} {
		if out, err := helmTemplate(t, set...); err != nil {
			t.Errorf("%v: %v\n%s", set, err, out)
		}
	}
}
