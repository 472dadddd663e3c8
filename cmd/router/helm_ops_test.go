package main

import (
	"bufio"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// containerfileEnv returns the ENV of each stage of the Containerfile, by
// stage name: what a pod started from that image has before the chart's
// own env entries are applied over it.
func containerfileEnv(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]map[string]string{}
	var cur map[string]string
	var logical []string
	var acc strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			acc.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		acc.WriteString(line)
		logical = append(logical, acc.String())
		acc.Reset()
	}
	for _, l := range logical {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			cur = map[string]string{}
			if len(f) >= 4 && strings.EqualFold(f[2], "AS") {
				stages[f[3]] = cur
			}
		case "ENV":
			for _, kv := range f[1:] {
				if k, v, ok := strings.Cut(kv, "="); ok && cur != nil {
					cur[k] = v
				}
			}
		}
	}
	return stages
}

// TestHelmChartImageEnvironment loads the configuration a pod really runs
// with: the image's ENV (Containerfile) and defaults file, then the
// container's env from the chart, over the chart's config.yaml. The chart
// decides listen, skills and exec.enabled in the file; the image must not
// override them.
func TestHelmChartImageEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	images := containerfileEnv(t, "../../Containerfile")
	for _, c := range []struct {
		name  string
		stage string
		args  []string
	}{
		{"gitSync", "exec", []string{"-f", filepath.Join(chartDir, "ci/gitsync-remote-embedder-values.yaml")}},
		{"service.port", "runtime", []string{"--set", "service.port=9090"}},
		{"skills.path", "runtime", []string{"-f", filepath.Join(chartDir, "ci/configmap-pvc-index-values.yaml"), "--set", "skills.path=/library"}},
		{"exec image, exec off", "exec", []string{"--set", "config.exec.enabled=false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			docs := parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, c.args...)...))
			spec := get(docs["Deployment/r-skillrouter"], "spec", "template", "spec")
			ctr := byName(list(spec, "containers"), "router")
			env := map[string]string{}
			for k, v := range images[c.stage] {
				env[k] = v
			}
			// The image's defaults file, as the Containerfile copies it there.
			if env[envDefaults] != "/usr/share/skillrouter/defaults.yaml" {
				t.Fatalf("the %s image's %s is %q", c.stage, envDefaults, env[envDefaults])
			}
			env[envDefaults] = map[string]string{"runtime": "../../deploy/image/defaults.yaml", "exec": "../../deploy/image/defaults-exec.yaml"}[c.stage]
			for _, e := range list(ctr, "env") {
				env[str(e, "name")] = str(e, "value")
			}
			text := str(docs["ConfigMap/r-skillrouter"], "data", "config.yaml")
			var file struct {
				Listen string   `yaml:"listen"`
				Skills []string `yaml:"skills"`
				Exec   struct {
					Enabled bool `yaml:"enabled"`
				} `yaml:"exec"`
			}
			if err := yaml.Unmarshal([]byte(text), &file); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := loadFor(t, []string{"--config", path}, env)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.Skills, file.Skills) {
				t.Errorf("the pod serves skills %v, the chart configured %v (image ENV SKILLROUTER_SKILLS=%q wins over the file)", cfg.Skills, file.Skills, env["SKILLROUTER_SKILLS"])
			}
			if cfg.Listen != file.Listen {
				t.Errorf("the pod listens on %s, the chart configured %s and points containerPort/probes there (image ENV SKILLROUTER_LISTEN=%q wins)", cfg.Listen, file.Listen, env["SKILLROUTER_LISTEN"])
			}
			if cfg.Exec.Enabled != file.Exec.Enabled {
				t.Errorf("exec.enabled %v in the pod, %v in the chart's config (image ENV SKILLROUTER_EXEC_ENABLED=%q wins)", cfg.Exec.Enabled, file.Exec.Enabled, env["SKILLROUTER_EXEC_ENABLED"])
			}
		})
	}
}

// TestHelmValuesEnvNames: every SKILLROUTER_* variable the chart's example
// values pass (secrets.extraEnv, env) is one the binary reads; a misspelt
// one is silently ignored by the binary.
func TestHelmValuesEnvNames(t *testing.T) {
	known := configEnv()
	files, _ := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	files = append(files, filepath.Join(chartDir, "values.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Secrets struct {
				ExtraEnv map[string]any `yaml:"extraEnv"`
			} `yaml:"secrets"`
			Env []struct {
				Name string `yaml:"name"`
			} `yaml:"env"`
		}
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		names := slices.Collect(func(yield func(string) bool) {
			for n := range v.Secrets.ExtraEnv {
				if !yield(n) {
					return
				}
			}
			for _, e := range v.Env {
				if !yield(e.Name) {
					return
				}
			}
		})
		for _, n := range names {
			if strings.HasPrefix(n, "SKILLROUTER_") && !known[n] {
				t.Errorf("%s: %s is not a variable router reads (ignored without a word)", filepath.Base(f), n)
			}
		}
	}
}

// TestHelmSecretChangeRollsPods: the keys reach the pods as environment
// variables, read once at start; `helm upgrade --set
// secrets.upstreamApiKey=NEW` must change the pod template, else the pods
// keep the old key until something else restarts them.
func TestHelmSecretChangeRollsPods(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	template := func(key string) any {
		docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "secrets.upstreamApiKey="+key))
		return get(docs["Deployment/r-skillrouter"], "spec", "template", "metadata", "annotations")
	}
	a, b := template("sk-old"), template("sk-new")
	if fmt.Sprint(a) == fmt.Sprint(b) {
		t.Errorf("a new upstream key leaves the pod template unchanged (annotations %v): the pods keep the old key", a)
	}
}

// TestHelmConfigMapLibraryChangeRollsPods: without the watch a pod reads
// an inline ConfigMap library at start only, so a changed library rolls
// the pods; with it (the default) the pods reload it and are not rolled.
func TestHelmConfigMapLibraryChangeRollsPods(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	template := func(watch bool, desc string) string {
		docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "skills.source=configMap",
			"--set", fmt.Sprintf("skills.watch=%v", watch),
			"--set-string", "skills.configMap.files.a/SKILL\\.md=---\\nname: a\\ndescription: "+desc+"\\n---\\nbody"))
		return fmt.Sprint(get(docs["Deployment/r-skillrouter"], "spec", "template", "metadata", "annotations"))
	}
	if template(false, "one") == template(false, "two") {
		t.Error("a changed library without the watch leaves the pod template unchanged: replicas started later serve another library")
	}
	if a, b := template(true, "one"), template(true, "two"); a != b {
		t.Errorf("with the watch a library change rolls the pods (%s / %s)", a, b)
	}
}

// TestHelmServiceMonitorWithClientKeys: with client keys (the documented
// secrets.extraEnv SKILLROUTER_AUTH_API_KEYS), /metrics on the API port
// answers 401 without a key (docs/security.md), so the ServiceMonitor must
// either send credentials or scrape a port that asks none
// (server.metrics_listen); otherwise every scrape fails and the
// PrometheusRule's ratios have no data, so its alerts never fire.
func TestHelmServiceMonitorWithClientKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai",
		"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true",
		"--set", "secrets.extraEnv.SKILLROUTER_AUTH_API_KEYS=sk-team"))
	sm := docs["ServiceMonitor/r-skillrouter"]
	ep := get(sm, "spec", "endpoints", 0)
	hasAuth := get(ep, "authorization") != nil || get(ep, "bearerTokenSecret") != nil || get(ep, "basicAuth") != nil
	if !hasAuth && str(ep, "port") == "http" {
		t.Errorf("ServiceMonitor scrapes %s on port http without credentials, where the pods ask a client key (auth.api_keys): every scrape is 401", str(ep, "path"))
	}
	// The port it scrapes is the pods' metrics listener, on the Service and
	// the container alike.
	cfg := checkDeployment(t, docs)
	if cfg.Server.MetricsListen != "0.0.0.0:9090" {
		t.Errorf("server.metrics_listen %q, want 0.0.0.0:9090", cfg.Server.MetricsListen)
	}
	svc := byName(list(docs["Service/r-skillrouter"], "spec", "ports"), str(ep, "port"))
	c := byName(list(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "containers"), "router")
	if cp := byName(list(c, "ports"), "metrics"); svc == nil || svc["targetPort"] != "metrics" || cp == nil || cp["containerPort"] != 9090 {
		t.Errorf("Service port %v, container port %v: want a metrics port 9090 on both", svc, cp)
	}
}

// TestHelmIndexJobGetsExtraEnv: the index build Job must read the
// configuration the pods read ("build the index with the configuration the
// replicas use", docs/deploy.md); a setting passed in env (say
// SKILLROUTER_EMBEDDER_MODEL) that the Job lacks gives an index that does
// not match, and every pod embeds the library itself.
func TestHelmIndexJobGetsExtraEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai",
		"--set", "index.source=pvc", "--set", "index.buildJob.enabled=true",
		"--set", "env[0].name=SKILLROUTER_EMBEDDER_MODEL", "--set", "env[0].value=other-model"))
	c := get(docs["Job/r-skillrouter-index-build"], "spec", "template", "spec", "containers", 0)
	if byName(list(c, "env"), "SKILLROUTER_EMBEDDER_MODEL") == nil {
		t.Errorf("the index build Job lacks the pods' env SKILLROUTER_EMBEDDER_MODEL: it builds with another embedder model than the replicas use")
	}
}

// TestHelmIndexJobPlacement: the index build Job runs where the pods may:
// their nodeSelector, tolerations and node affinity (a tainted pool, a
// node-bound volume), not their pod anti-affinity, which names the
// router's pods.
func TestHelmIndexJobPlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai",
		"--set", "index.source=pvc", "--set", "index.buildJob.enabled=true",
		"--set", "nodeSelector.pool=ai", "--set", "tolerations[0].key=dedicated", "--set", "tolerations[0].operator=Exists",
		"--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=zone",
		"--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
		"--set", "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1",
		"--set", "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=kubernetes.io/hostname"))
	spec := get(docs["Job/r-skillrouter-index-build"], "spec", "template", "spec")
	if get(spec, "nodeSelector", "pool") != "ai" || len(list(spec, "tolerations")) != 1 || get(spec, "affinity", "nodeAffinity") == nil {
		t.Errorf("the Job lacks the pods' placement: %v", spec)
	}
	if get(spec, "affinity", "podAntiAffinity") != nil {
		t.Errorf("the Job got the pods' anti-affinity, which names the router's pods: %v", get(spec, "affinity"))
	}
}

// TestHelmContainerPort: the Service's port is not the one the pods listen
// on; a Service on port 80 must not make a non-root pod listen on 80 (it
// cannot, on most nodes).
func TestHelmContainerPort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "service.port=80"))
	if p := byName(list(docs["Service/r-skillrouter"], "spec", "ports"), "http"); p == nil || fmt.Sprint(p["port"]) != "80" || p["targetPort"] != "http" {
		t.Errorf("Service port: %v", p)
	}
	c := get(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "containers", 0)
	if p := byName(list(c, "ports"), "http"); p == nil || fmt.Sprint(p["containerPort"]) != "8080" {
		t.Errorf("container port: %v", p)
	}
	if cm := fmt.Sprint(get(docs["ConfigMap/r-skillrouter"], "data")); !strings.Contains(cm, "listen: 0.0.0.0:8080") {
		t.Errorf("the configuration does not listen on 8080: %s", cm)
	}
}

// TestHelmEdgeValues: an empty exec section still renders (and leaves
// exec off); a metrics_listen on loopback exposes no port, and with the
// ServiceMonitor it is an error rather than scrapes that never connect.
func TestHelmEdgeValues(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	empty := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(empty, []byte("config:\n  exec:\n    # nothing set\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "-f", empty))
	c := get(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "containers", 0)
	if e := byName(list(c, "env"), "SKILLROUTER_EXEC_ENABLED"); e == nil || e["value"] != "false" {
		t.Errorf("SKILLROUTER_EXEC_ENABLED with an empty exec section: %v", e)
	}

	docs = parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "config.server.metrics_listen=127.0.0.1:9191"))
	if p := byName(list(docs["Service/r-skillrouter"], "spec", "ports"), "metrics"); p != nil {
		t.Errorf("a loopback metrics_listen got a Service port: %v", p)
	}
	out, err := exec.Command(helmBinary(t), "template", "r", chartDir, "--set", "serviceMonitor.enabled=true",
		"--set", "config.server.metrics_listen=127.0.0.1:9191").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "loopback") {
		t.Errorf("a loopback metrics_listen with the ServiceMonitor rendered: %v\n%s", err, out)
	}
}

// helmTemplate renders the chart with args and returns the output and
// helm's error (a render the chart should refuse with `fail`).
func helmTemplate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBinary(t), append([]string{"template", "r", chartDir, "--namespace", "ai"}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// routerContainer is the router container of the rendered Deployment.
func routerContainer(docs map[string]manifest) map[string]any {
	return byName(list(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "containers"), "router")
}

// TestHelmPreStopDelay: an endpoint's removal reaches kube-proxy and
// ingress controllers some time after the pod is marked terminating;
// SIGTERM at once makes the router close its listener while new
// connections still arrive (refused). A preStop sleep keeps it serving
// meanwhile. The default image is FROM scratch, with no sleep binary, so
// the default is the kubelet's own sleep action (Kubernetes >= 1.30), and
// an exec hook is for the exec image only.
func TestHelmPreStopDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	if base := containerfileBase(t, "../../Containerfile", "runtime"); base != "scratch" {
		t.Logf("runtime image base %q", base)
	} else if a := helmDefault(t, "lifecycle", "preStopAction"); a != "sleep" {
		t.Errorf("default lifecycle.preStopAction %v: the default image (FROM scratch) has no sleep binary to exec", a)
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai"))
	if s := get(routerContainer(docs), "lifecycle", "preStop", "sleep", "seconds"); s != 5 {
		t.Errorf("default preStop %v, want the native sleep action of 5 s", get(routerContainer(docs), "lifecycle"))
	}
	docs = parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai",
		"--set", "lifecycle.preStopAction=exec", "--set", "lifecycle.preStopSleepSeconds=8"))
	if cmd := fmt.Sprint(get(routerContainer(docs), "lifecycle", "preStop", "exec", "command")); cmd != "[sleep 8]" {
		t.Errorf("exec preStop %v, want [sleep 8]", get(routerContainer(docs), "lifecycle"))
	}
	docs = parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "lifecycle.preStopSleepSeconds=0"))
	if l := get(routerContainer(docs), "lifecycle"); l != nil {
		t.Errorf("preStopSleepSeconds 0 still renders a hook: %v", l)
	}
	if out, err := helmTemplate(t, "--set", "lifecycle.preStopAction=httpGet"); err == nil || !strings.Contains(out, "lifecycle.preStopAction") {
		t.Errorf("an unknown preStopAction rendered: %v\n%s", err, out)
	}
	if out, err := helmTemplate(t, "--set", "lifecycle.preStopSleepSeconds=2.5"); err == nil || !strings.Contains(out, "lifecycle.preStopSleepSeconds") {
		t.Errorf("a fractional preStopSleepSeconds rendered: %v\n%s", err, out)
	}
}

// TestHelmTerminationGrace: the kubelet kills the container
// terminationGracePeriodSeconds after it starts stopping it, preStop sleep
// included; the router gives in-flight requests server.shutdown_grace after
// SIGTERM, then up to 5 s to drain and 5 s to export traces. Left empty,
// the period is derived from both; set, it must leave the router its grace.
func TestHelmTerminationGrace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	tgps := func(args ...string) any {
		t.Helper()
		docs := parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, args...)...))
		return get(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "terminationGracePeriodSeconds")
	}
	// Go durations as serve reads them: the chart's parse agrees with Go's.
	for _, d := range []string{"30s", "1m30s", "2m", "1h", "1.5s", "500ms", ".5m", "1m0.25s", "1h2m3s4ms5us6ns"} {
		gd, err := time.ParseDuration(d)
		if err != nil {
			t.Fatal(err)
		}
		want := 5 + int(math.Ceil(gd.Seconds())) + 10
		if got := tgps("--set-string", "config.server.shutdown_grace="+d); got != want {
			t.Errorf("shutdown_grace %s: terminationGracePeriodSeconds %v, want %d (preStop 5 + grace + 10)", d, got, want)
		}
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 45}, // serve's default grace, 30 s
		{[]string{"--set", "lifecycle.preStopSleepSeconds=0"}, 40},
		{[]string{"--set", "lifecycle.preStopSleepSeconds=12", "--set", "config.server.shutdown_grace=1m"}, 82},
		// The environment beats the file (env, as the chart passes it).
		{[]string{"--set", "env[0].name=SKILLROUTER_SERVER_SHUTDOWN_GRACE", "--set", "env[0].value=2m"}, 135},
		{[]string{"--set", "terminationGracePeriodSeconds=300"}, 300},
		{[]string{"--set", "terminationGracePeriodSeconds=35"}, 35}, // 5 + 30: the margin is the operator's call
		{[]string{"--set", "terminationGracePeriodSeconds=null"}, 45},
	} {
		if got := tgps(c.args...); got != c.want {
			t.Errorf("%v: terminationGracePeriodSeconds %v, want %d", c.args, got, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--set", "terminationGracePeriodSeconds=30"}, "terminationGracePeriodSeconds 30"},
		{[]string{"--set", "config.server.shutdown_grace=2m", "--set", "terminationGracePeriodSeconds=100"}, "terminationGracePeriodSeconds 100"},
		{[]string{"--set", "config.server.shutdown_grace=30"}, "config.server.shutdown_grace"},
		{[]string{"--set", "config.server.shutdown_grace=soon"}, "config.server.shutdown_grace"},
		{[]string{"--set", "config.server.shutdown_grace=0s"}, "config.server.shutdown_grace"},
		{[]string{"--set", "lifecycle.preStopSleepSeconds=-1"}, "lifecycle.preStopSleepSeconds"},
		{[]string{"--set", "terminationGracePeriodSeconds=1.5"}, "terminationGracePeriodSeconds"},
	} {
		// The chart's own checks name a key dotted; the values schema, as a path.
		if out, err := helmTemplate(t, c.args...); err == nil || !strings.Contains(out, c.msg) && !strings.Contains(out, "/"+strings.ReplaceAll(c.msg, ".", "/")) {
			t.Errorf("%v rendered, or failed without naming %s: %v\n%s", c.args, c.msg, err, out)
		}
	}
}

// TestHelmIndexClaimAccessModes: the index claim is written by the build
// Job and read by every replica, which may run on different nodes. A
// ReadWriteOnce volume attaches to one node: a second node's pod waits in
// ContainerCreating (Multi-Attach error). The default must work with the
// default replicas, and a claim that cannot is refused at render time.
func TestHelmIndexClaimAccessModes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	pvc := []string{"--set", "index.source=pvc"}
	docs := parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai", "--set", "index.buildJob.enabled=true"}, pvc...)...))
	if modes := fmt.Sprint(get(docs["PersistentVolumeClaim/r-skillrouter-index"], "spec", "accessModes")); modes != "[ReadWriteMany]" {
		t.Errorf("default index claim access modes %s, want [ReadWriteMany] (one writer, replicas on any node)", modes)
	}
	// docs/deploy.md says what the default is.
	b, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "`index.pvc.accessModes` defaults to `ReadWriteMany`") {
		t.Error("docs/deploy.md does not state the index claim's default access mode (ReadWriteMany)")
	}
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--set", "index.pvc.accessModes={ReadWriteOnce}"}, false},                                                                    // 2 replicas
		{[]string{"--set", "index.pvc.accessModes={ReadWriteOnce}", "--set", "autoscaling.enabled=true", "--set", "replicaCount=1"}, false},    // the HPA adds pods
		{[]string{"--set", "index.pvc.accessModes={ReadWriteOnce}", "--set", "replicaCount=1", "--set", "index.buildJob.enabled=true"}, false}, // the Job is a second pod
		{[]string{"--set", "index.pvc.accessModes={ReadWriteOnce}", "--set", "replicaCount=1"}, true},
		{[]string{"--set", "index.pvc.accessModes={ReadWriteOnce}", "--set", "index.pvc.singleNode=true", "--set", "index.buildJob.enabled=true"}, true},
		{[]string{"--set", "index.pvc.accessModes={ReadWriteOncePod}", "--set", "index.pvc.singleNode=true"}, false}, // one pod, whatever the node
		{[]string{"--set", "index.pvc.accessModes={ReadWriteOncePod}", "--set", "replicaCount=1"}, false},            // a rolling update's new pod never starts
		{[]string{"--set", "index.pvc.accessModes={ReadOnlyMany}", "--set", "index.buildJob.enabled=true"}, false},   // the Job cannot write it
		{[]string{"--set", "index.pvc.accessModes={ReadOnlyMany}"}, true},                                            // filled by your own pipeline
		{[]string{"--set", "index.pvc.accessModes={ReadWriteOnce}", "--set", "index.pvc.existingClaim=idx"}, true},   // not the chart's claim
	} {
		out, err := helmTemplate(t, append(pvc, c.args...)...)
		if c.ok && err != nil {
			t.Errorf("%v: %v\n%s", c.args, err, out)
		}
		if !c.ok && (err == nil || !strings.Contains(out, "index.pvc.accessModes")) {
			t.Errorf("%v rendered, or failed without naming index.pvc.accessModes: %v\n%s", c.args, err, out)
		}
	}
	// One replica on ReadWriteOnce renders, with a warning: a rolling
	// update's new pod on another node waits for the old one's volume.
	if n := helmNotes(t, append(pvc, "--set", "index.pvc.accessModes={ReadWriteOnce}", "--set", "replicaCount=1")...); !strings.Contains(n, "WARNING") || !strings.Contains(n, "ReadWriteOnce") {
		t.Errorf("NOTES without a warning for a ReadWriteOnce index claim:\n%s", n)
	}
	if n := helmNotes(t, pvc...); strings.Contains(n, "WARNING") {
		t.Errorf("NOTES warn with the default claim:\n%s", n)
	}
}

// helmNotes renders the chart's NOTES.txt, which helm template leaves out:
// in a copy of the chart, as a named template shown in a rendered file.
func helmNotes(t *testing.T, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "skillrouter")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"_notes_test.tpl": `{{- define "notes-test" -}}` + string(notes) + `{{- end -}}`,
		"notes-test.yaml": "notes: {{ include \"notes-test\" . | toJson }}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, "templates", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := runHelm(t, append([]string{"template", "r", dir, "--namespace", "ai", "--show-only", "templates/notes-test.yaml"}, args...)...)
	var v struct {
		Notes string `yaml:"notes"`
	}
	if err := yaml.Unmarshal([]byte(out), &v); err != nil || v.Notes == "" {
		t.Fatalf("rendered NOTES: %v\n%s", err, out)
	}
	return v.Notes
}

// TestHelmIndexJobPodsOutsideSelectors: the index build Job's pod must not
// be one of the router's pods: the Service would send it requests (it
// serves none) and the PodDisruptionBudget would count it. The
// Deployment's selector stays as it was: it is immutable, and a changed one
// fails every `helm upgrade` of an existing release.
func TestHelmIndexJobPodsOutsideSelectors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "-f", filepath.Join(chartDir, "ci/configmap-pvc-index-values.yaml")))
	if sel := fmt.Sprint(get(docs["Deployment/r-skillrouter"], "spec", "selector")); sel != "map[matchLabels:map[app.kubernetes.io/instance:r app.kubernetes.io/name:skillrouter]]" {
		t.Errorf("Deployment selector %s changed: existing releases cannot be upgraded (spec.selector is immutable)", sel)
	}
	if _, ok := docs["PodDisruptionBudget/r-skillrouter"]; !ok {
		t.Fatal("no PodDisruptionBudget")
	}
	jobPod := get(docs["Job/r-skillrouter-index-build"], "spec", "template", "metadata", "labels")
	if str(jobPod, "app.kubernetes.io/component") != "index-build" {
		t.Errorf("index Job pod labels %v: want app.kubernetes.io/component index-build", jobPod)
	}
	if c := str(get(docs["Deployment/r-skillrouter"], "spec", "template", "metadata", "labels"), "app.kubernetes.io/component"); c != "router" {
		t.Errorf("router pods' component label %q, want router", c)
	}
	checkSelectors(t, docs)
}

// checkSelectors: the Deployment's, Service's and PodDisruptionBudget's
// selectors match the router's pods and no Job's pod.
func checkSelectors(t *testing.T, docs map[string]manifest) {
	t.Helper()
	routerPod := get(docs["Deployment/r-skillrouter"], "spec", "template", "metadata", "labels")
	selectors := map[string]any{
		"Deployment":          get(docs["Deployment/r-skillrouter"], "spec", "selector"),
		"Service":             map[string]any{"matchLabels": get(docs["Service/r-skillrouter"], "spec", "selector")},
		"PodDisruptionBudget": get(docs["PodDisruptionBudget/r-skillrouter"], "spec", "selector"),
	}
	for kind, sel := range selectors {
		if sel == nil {
			continue // no PDB with one replica
		}
		if !selectorMatches(t, sel, routerPod) {
			t.Errorf("%s selector %v does not match the router's pods %v", kind, sel, routerPod)
		}
		for key, d := range docs {
			if str(d, "kind") != "Job" {
				continue
			}
			if pod := get(d, "spec", "template", "metadata", "labels"); selectorMatches(t, sel, pod) {
				t.Errorf("%s selector %v matches the pods of %s (%v)", kind, sel, key, pod)
			}
		}
	}
}

// selectorMatches evaluates a LabelSelector (matchLabels, matchExpressions)
// against a pod's labels.
func selectorMatches(t *testing.T, sel, labels any) bool {
	t.Helper()
	lm, _ := labels.(map[string]any)
	ml, _ := get(sel, "matchLabels").(map[string]any)
	for k, v := range ml {
		if lm[k] == nil || fmt.Sprint(lm[k]) != fmt.Sprint(v) {
			return false
		}
	}
	for _, e := range list(sel, "matchExpressions") {
		v, has := lm[str(e, "key")]
		in := slices.ContainsFunc(list(e, "values"), func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) })
		switch str(e, "operator") {
		case "In":
			if !has || !in {
				return false
			}
		case "NotIn":
			if has && in {
				return false
			}
		case "Exists":
			if !has {
				return false
			}
		case "DoesNotExist":
			if has {
				return false
			}
		default:
			t.Fatalf("selector operator %q", str(e, "operator"))
		}
	}
	return true
}

// containerfileBase is the base image of a Containerfile stage.
func containerfileBase(t *testing.T, path, stage string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && strings.EqualFold(f[0], "FROM") && strings.EqualFold(f[2], "AS") && f[3] == stage {
			return f[1]
		}
	}
	t.Fatalf("no stage %s in %s", stage, path)
	return ""
}

// helmDefault reads a key of the chart's values.yaml.
func helmDefault(t *testing.T, path ...any) any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return get(v, path...)
}

// TestHelmServiceSessionAffinity: service.sessionAffinity ClientIP keeps a
// client address's connections on one pod (whose memory of the skills a
// stored conversation holds is its own); off by default, the Service as
// before; values Kubernetes would refuse fail the render (the schema).
func TestHelmServiceSessionAffinity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	for _, c := range []struct {
		name     string
		set      []string
		affinity any // nil: not rendered
		timeout  any
	}{
		{"default", nil, nil, nil},
		{"None", []string{"--set", "service.sessionAffinity=None"}, nil, nil},
		{"ClientIP", []string{"--set", "service.sessionAffinity=ClientIP"}, "ClientIP", 10800},
		{"ClientIP, timeout", []string{"--set", "service.sessionAffinity=ClientIP", "--set", "service.sessionAffinityTimeoutSeconds=600"}, "ClientIP", 600},
	} {
		t.Run(c.name, func(t *testing.T) {
			docs := parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, c.set...)...))
			spec := get(docs["Service/r-skillrouter"], "spec")
			if a := get(spec, "sessionAffinity"); a != c.affinity {
				t.Errorf("sessionAffinity %v, want %v", a, c.affinity)
			}
			if to := get(spec, "sessionAffinityConfig", "clientIP", "timeoutSeconds"); to != c.timeout {
				t.Errorf("sessionAffinityConfig %v, want timeoutSeconds %v", get(spec, "sessionAffinityConfig"), c.timeout)
			}
		})
	}
	for _, c := range []struct{ set, want string }{
		{"service.sessionAffinity=clientIP", "sessionAffinity"},
		{"service.sessionAffinity=Cookie", "sessionAffinity"},
		{"service.sessionAffinityTimeoutSeconds=0", "sessionAffinityTimeoutSeconds"},
		{"service.sessionAffinityTimeoutSeconds=86401", "sessionAffinityTimeoutSeconds"},
	} {
		out, err := helmTemplate(t, "--set", c.set)
		if err == nil {
			t.Errorf("--set %s renders; the API server would refuse the Service", c.set)
		} else if !strings.Contains(out, "values don't meet the specifications of the schema") || !strings.Contains(out, c.want) {
			t.Errorf("--set %s: want a schema error naming %s, got:\n%s", c.set, c.want, out)
		}
	}
}

// TestHelmPDBOnlyOverTwoPods: a PodDisruptionBudget over a single pod
// (one replica, or an HPA allowed down to one) blocks every eviction, so
// node drains hang; it is rendered only when at least two pods always run.
func TestHelmPDBOnlyOverTwoPods(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	for _, tt := range []struct {
		set  []string
		want bool
	}{
		{nil, true}, // the default: two replicas
		{[]string{"replicaCount=1"}, false},
		{[]string{"replicaCount=3"}, true},
		{[]string{"autoscaling.enabled=true", "autoscaling.minReplicas=1"}, false},
		{[]string{"autoscaling.enabled=true", "autoscaling.minReplicas=2", "replicaCount=1"}, true},
		{[]string{"replicaCount=3", "podDisruptionBudget.enabled=false"}, false},
	} {
		args := []string{"template", "r", chartDir, "--namespace", "ai"}
		for _, s := range tt.set {
			args = append(args, "--set", s)
		}
		docs := parseManifests(t, runHelm(t, args...))
		if _, got := docs["PodDisruptionBudget/r-skillrouter"]; got != tt.want {
			t.Errorf("%v: PodDisruptionBudget rendered %v, want %v", tt.set, got, tt.want)
		}
	}
}

// TestHelmRefusesChartMistakes: chart values that would render silently
// wrong (a misspelt key dropped, traces posted nowhere) or fail only at
// install or at the first drain are refused at render, naming the value.
func TestHelmRefusesChartMistakes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"replicaCount=two"}, "replicaCount"},
		{[]string{"podDisruptionBudgt.enabled=false"}, "podDisruptionBudgt"},
		{[]string{"image.digest=sha256:abc"}, "digest"},
		{[]string{"image.pullPolicy=Sometimes"}, "pullPolicy"},
		{[]string{"tracing.endpoint=otel-collector:4318"}, "endpoint"},
		{[]string{"autoscaling.enabled=true", "autoscaling.minReplicas=5", "autoscaling.maxReplicas=2", "resources.requests.cpu=100m"}, "minReplicas 5 is above autoscaling.maxReplicas 2"},
		{[]string{"podDisruptionBudget.minAvailable=2"}, "no pod could ever be evicted"},
		{[]string{"replicaCount=3", "podDisruptionBudget.minAvailable=3"}, "no pod could ever be evicted"},
	} {
		var args []string
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		out, err := helmTemplate(t, args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%v: want a refusal naming %q, got %v:\n%s", c.set, c.want, err, out)
		}
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "image.digest="+digest,
		"--set", "podDisruptionBudget.minAvailable=50%", "--set", "tracing.endpoint=http://otel-collector:4318"))
	if img := routerContainer(docs)["image"]; img != "ghcr.io/skillrouter/skillrouter@"+digest {
		t.Errorf("image %v, want it pinned by digest", img)
	}
	pdb := docs["PodDisruptionBudget/r-skillrouter"]
	if get(pdb, "spec", "minAvailable") != "50%" || get(pdb, "spec", "unhealthyPodEvictionPolicy") != "AlwaysAllow" {
		t.Errorf("PodDisruptionBudget spec %v", get(pdb, "spec"))
	}
}

// TestHelmExtraVolumes: extraVolumes and extraVolumeMounts reach the pod and
// the router container (a private CA bundle, a client-key file).
func TestHelmExtraVolumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai",
		"--set-json", `extraVolumes=[{"name":"ca","configMap":{"name":"corp-ca"}}]`,
		"--set-json", `extraVolumeMounts=[{"name":"ca","mountPath":"/etc/corp-ca","readOnly":true}]`))
	if v := byName(list(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "volumes"), "ca"); v == nil {
		t.Error("no extra volume in the pod")
	}
	if m := byName(list(routerContainer(docs), "volumeMounts"), "ca"); m == nil || m["mountPath"] != "/etc/corp-ca" {
		t.Errorf("router container mount %v", m)
	}
}

// TestHelmIndexJobGetsNoClientKeys: the index build Job serves no client
// and calls no model: secrets.extraEnv's client keys, admin token and
// upstream keys stay out of it; other variables (an embedder's) go in.
func TestHelmIndexJobGetsNoClientKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai",
		"--set", "index.source=pvc", "--set", "index.buildJob.enabled=true",
		"--set", "secrets.extraEnv.SKILLROUTER_AUTH_API_KEYS=sk-team", "--set", "secrets.extraEnv.SKILLROUTER_AUTH_ADMIN_TOKEN=adm",
		"--set", "secrets.extraEnv.SKILLROUTER_UPSTREAM_ANTHROPIC_API_KEY=ak", "--set", "secrets.extraEnv.OPENAI_API_KEY=ok"))
	job := list(get(docs["Job/r-skillrouter-index-build"], "spec", "template", "spec", "containers", 0), "env")
	for _, k := range []string{"SKILLROUTER_AUTH_API_KEYS", "SKILLROUTER_AUTH_ADMIN_TOKEN", "SKILLROUTER_UPSTREAM_ANTHROPIC_API_KEY"} {
		if byName(job, k) != nil {
			t.Errorf("the index build Job gets %s", k)
		}
		if byName(list(routerContainer(docs), "env"), k) == nil {
			t.Errorf("the pods lack %s", k)
		}
	}
	if byName(job, "OPENAI_API_KEY") == nil {
		t.Error("the index build Job lacks a variable an embedder may read")
	}
}

// TestHelmSpreadAcrossNodes: by default the replicas are spread over nodes
// softly (never pending for it); the user's own constraints replace it,
// and spreadAcrossNodes=false drops it.
func TestHelmSpreadAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	spread := func(args ...string) any {
		docs := parseManifests(t, runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, args...)...))
		return get(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "topologySpreadConstraints")
	}
	if c := fmt.Sprint(spread()); !strings.Contains(c, "kubernetes.io/hostname") || !strings.Contains(c, "ScheduleAnyway") {
		t.Errorf("default spread %s", c)
	}
	if c := spread("--set", "spreadAcrossNodes=false"); c != nil {
		t.Errorf("spread with spreadAcrossNodes=false: %v", c)
	}
	if c := fmt.Sprint(spread("--set-json", `topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]`)); strings.Contains(c, "hostname") || !strings.Contains(c, "zone") {
		t.Errorf("own constraints %s", c)
	}
}

// TestHelmAdminNotByLoopback: in a pod a sidecar proxy forwards every client
// from a loopback address, so the chart serves the admin endpoints only
// with auth.admin_token, unless the values say otherwise.
func TestHelmAdminNotByLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	cfg := checkDeployment(t, parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai")))
	if cfg.Auth.AdminLoopback {
		t.Error("the chart's pods serve the admin endpoints to loopback clients without a token")
	}
	cfg = checkDeployment(t, parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "config.auth.admin_loopback=true")))
	if !cfg.Auth.AdminLoopback {
		t.Error("config.auth.admin_loopback=true not kept")
	}
}

// TestHelmNameOverrides: fullnameOverride names every object of the release,
// nameOverride the chart part of it.
func TestHelmNameOverrides(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "fullnameOverride=router"))
	if docs["Deployment/router"] == nil || docs["Service/router"] == nil {
		t.Errorf("fullnameOverride: objects %v", slices.Sorted(maps.Keys(docs)))
	}
	docs = parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "nameOverride=skills"))
	if docs["Deployment/r-skills"] == nil {
		t.Errorf("nameOverride: objects %v", slices.Sorted(maps.Keys(docs)))
	}
}
