package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// The Helm chart in deploy/helm/skillrouter, checked the way CI can without
// a cluster: `helm lint --strict` and `helm template` with each values file
// (the defaults and ci/*-values.yaml), then the rendered manifests are
// read here: probes, security context, volumes, and the configuration file
// the pods would read, loaded by serve's own configuration code.

// helmVersion is the Helm release the chart is checked with, built from
// the Go module proxy (helm.sh/helm/v3/cmd/helm), once per machine.
const helmVersion = "v3.22.0"

const chartDir = "../../deploy/helm/skillrouter"

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary returns a helm executable: $SKILLROUTER_HELM when set, else
// one built into the user cache folder (keyed by version and platform), so
// only the first run on a machine pays for compiling it (about 2.5 minutes
// on 2 cores; `go run helm.sh/helm/v3/cmd/helm@v3.22.0` would link it again
// on every call).
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if p := os.Getenv("SKILLROUTER_HELM"); p != "" {
			helmPath = p
			return
		}
		if userCacheErr != nil {
			helmErr = userCacheErr
			return
		}
		dir := filepath.Join(userCache, "skillrouter-ci", fmt.Sprintf("helm-%s-%s-%s", helmVersion, runtime.GOOS, runtime.GOARCH))
		helmPath = filepath.Join(dir, "helm")
		if _, err := os.Stat(helmPath); err == nil {
			return
		}
		t.Logf("building helm %s into %s (once per machine)", helmVersion, dir)
		// Into a temporary folder, then renamed: a concurrent or
		// interrupted build never leaves half a binary in the cache.
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			helmErr = err
			return
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), ".helm-build-*")
		if err != nil {
			helmErr = err
			return
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command("go", "install", "helm.sh/helm/v3/cmd/helm@"+helmVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
		cmd.Dir = tmp // outside this module: the install resolves helm's own
		if out, err := cmd.CombinedOutput(); err != nil {
			helmErr = fmt.Errorf("go install helm.sh/helm/v3/cmd/helm@%s: %v\n%s", helmVersion, err, out)
			return
		}
		if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
			if _, serr := os.Stat(helmPath); serr != nil { // another build won the race: fine
				helmErr = err
			}
		}
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// runHelm runs helm hermetically (its config and cache in a temporary folder).
func runHelm(t *testing.T, args ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

type manifest = map[string]any

// get walks a decoded manifest: get(m, "spec", "template", 0, "name").
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any, path ...any) string { s, _ := get(v, path...).(string); return s }

func list(v any, path ...any) []any { l, _ := get(v, path...).([]any); return l }

// byName finds the element of a list of objects with that name.
func byName(l []any, name string) map[string]any {
	for _, x := range l {
		if m, ok := x.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

func parseManifests(t *testing.T, out string) map[string]manifest {
	t.Helper()
	docs := map[string]manifest{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("rendered manifests are not YAML: %v", err)
		}
		if m == nil {
			continue
		}
		key := str(m, "kind") + "/" + str(m, "metadata", "name")
		if _, dup := docs[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		docs[key] = m
	}
	return docs
}

func TestHelmChart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	cases := []struct {
		values string // "" = the chart's defaults
		kinds  []string
		check  func(t *testing.T, docs map[string]manifest, cfg config)
	}{
		{"", []string{"ConfigMap/r-skillrouter", "Deployment/r-skillrouter", "Service/r-skillrouter", "ServiceAccount/r-skillrouter", "PodDisruptionBudget/r-skillrouter"},
			func(t *testing.T, docs map[string]manifest, cfg config) {
				if cfg.Embedder.Provider != "builtin" || cfg.Routing.Prebuilt != "" || len(cfg.Skills) != 1 || cfg.Skills[0] != "/skills" {
					t.Errorf("default configuration: embedder %q, prebuilt %q, skills %v", cfg.Embedder.Provider, cfg.Routing.Prebuilt, cfg.Skills)
				}
			}},
		{"ci/configmap-pvc-index-values.yaml", []string{"ConfigMap/r-skillrouter-skills", "PersistentVolumeClaim/r-skillrouter-index", "Job/r-skillrouter-index-build",
			"HorizontalPodAutoscaler/r-skillrouter", "ServiceMonitor/r-skillrouter", "PrometheusRule/r-skillrouter", "Secret/r-skillrouter-secrets"},
			func(t *testing.T, docs map[string]manifest, cfg config) {
				if cfg.Routing.Prebuilt != "/index" || cfg.Upstream.APIKey == "" {
					t.Errorf("prebuilt index %q, upstream key set %v", cfg.Routing.Prebuilt, cfg.Upstream.APIKey != "")
				}
				job := docs["Job/r-skillrouter-index-build"]
				c := get(job, "spec", "template", "spec", "containers", 0)
				if args := fmt.Sprint(get(c, "args")); args != "[index build --config /etc/skillrouter/config.yaml --out /index]" {
					t.Errorf("index build job args %s", args)
				}
				if m := byName(list(c, "volumeMounts"), "index"); m == nil || m["readOnly"] == true {
					t.Errorf("the index build job must mount the index writable: %v", m)
				}
				// It embeds the library and calls no model: no upstream key,
				// and resources for a cold build's peak.
				if byName(list(c, "env"), "SKILLROUTER_UPSTREAM_API_KEY") != nil {
					t.Error("the index build job gets the upstream key")
				}
				if byName(list(get(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "containers", 0), "env"), "SKILLROUTER_UPSTREAM_API_KEY") == nil {
					t.Error("the pods lost the upstream key")
				}
				if get(c, "resources", "limits", "memory") == nil || get(c, "resources", "requests", "memory") == nil {
					t.Errorf("the index build job has no memory request and limit: %v", get(c, "resources"))
				}
				// Skills arrive as a ConfigMap whose keys map to skill folders.
				skillsCM := docs["ConfigMap/r-skillrouter-skills"]
				vol := byName(list(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "volumes"), "skills")
				items := list(vol, "configMap", "items")
				if len(items) != 2 {
					t.Fatalf("skills volume items %v", items)
				}
				for _, it := range items {
					key, path := str(it, "key"), str(it, "path")
					if _, ok := get(skillsCM, "data").(map[string]any)[key]; !ok || !strings.HasSuffix(path, "/SKILL.md") {
						t.Errorf("item %s -> %s does not map a ConfigMap key to a SKILL.md", key, path)
					}
				}
				if _, ok := get(docs["Deployment/r-skillrouter"], "spec", "replicas").(int); ok {
					t.Error("replicas set although the HPA owns them")
				}
				rules := fmt.Sprint(get(docs["PrometheusRule/r-skillrouter"], "spec"))
				for _, alert := range []string{"SkillrouterErrorRatio", "SkillrouterFallbackRatio", "SkillrouterRoutingLatencyP99"} {
					if !strings.Contains(rules, alert) {
						t.Errorf("PrometheusRule lacks %s", alert)
					}
				}
				// Each selector is the release's in its namespace: the same
				// release name elsewhere (staging) has the same job.
				if n, all := strings.Count(rules, `namespace="ai"`), strings.Count(rules, `job="r-skillrouter"`); n == 0 || n != all {
					t.Errorf("%d of %d selectors name the namespace:\n%s", n, all, rules)
				}
			}},
		{"ci/gitsync-remote-embedder-values.yaml", []string{"Deployment/r-skillrouter"},
			func(t *testing.T, docs map[string]manifest, cfg config) {
				if cfg.Skills[0] != "/git/current/skills" || cfg.Embedder.Provider != "ollama" || !cfg.Exec.Enabled || cfg.Routing.Prebuilt != "/index" {
					t.Errorf("git-sync configuration: skills %v embedder %q exec %v prebuilt %q", cfg.Skills, cfg.Embedder.Provider, cfg.Exec.Enabled, cfg.Routing.Prebuilt)
				}
				spec := get(docs["Deployment/r-skillrouter"], "spec", "template", "spec")
				if byName(list(spec, "containers"), "git-sync") == nil || byName(list(spec, "initContainers"), "git-sync-init") == nil {
					t.Error("no git-sync sidecar and init container")
				}
				if _, ok := docs["Secret/r-skillrouter-secrets"]; ok {
					t.Error("a Secret was created although existingSecret names one")
				}
			}},
		{"ci/pvc-values.yaml", []string{"Deployment/r-skillrouter"},
			func(t *testing.T, docs map[string]manifest, cfg config) {
				vol := byName(list(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "volumes"), "skills")
				if str(vol, "persistentVolumeClaim", "claimName") != "team-skills" {
					t.Errorf("skills volume %v", vol)
				}
				if _, ok := docs["PodDisruptionBudget/r-skillrouter"]; ok {
					t.Error("a PodDisruptionBudget for a single replica blocks node drains")
				}
			}},
	}
	for _, c := range cases {
		name := c.values
		if name == "" {
			name = "defaults"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{}
			if c.values != "" {
				args = append(args, "-f", filepath.Join(chartDir, c.values))
			}
			runHelm(t, append([]string{"lint", "--strict", chartDir}, args...)...)
			out := runHelm(t, append([]string{"template", "r", chartDir, "--namespace", "ai"}, args...)...)
			docs := parseManifests(t, out)
			for _, k := range c.kinds {
				if _, ok := docs[k]; !ok {
					t.Errorf("no %s rendered (got %v)", k, keys(docs))
				}
			}
			cfg := checkDeployment(t, docs)
			c.check(t, docs, cfg)
		})
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkDeployment checks what every values file must give: probes, a
// locked-down security context, writable folders where the binary writes,
// every mount backed by a volume, every referenced object rendered, and a
// configuration that serve accepts. It returns that configuration.
func checkDeployment(t *testing.T, docs map[string]manifest) config {
	t.Helper()
	d := docs["Deployment/r-skillrouter"]
	if d == nil {
		t.Fatalf("no Deployment (got %v)", keys(docs))
	}
	spec := get(d, "spec", "template", "spec")
	c := byName(list(spec, "containers"), "router")
	if c == nil {
		t.Fatal("no router container")
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if str(c, probe, "httpGet", "path") != path || str(c, probe, "httpGet", "port") != "http" {
			t.Errorf("%s: %v, want GET %s on port http", probe, get(c, probe), path)
		}
	}
	port := byName(list(c, "ports"), "http")
	if port == nil || port["containerPort"] != 8080 {
		t.Errorf("container port %v", port)
	}
	if svc := docs["Service/r-skillrouter"]; str(svc, "spec", "ports", 0, "targetPort") != "http" {
		t.Errorf("service does not target the http port: %v", get(svc, "spec", "ports"))
	}
	if get(spec, "securityContext", "runAsNonRoot") != true || get(spec, "securityContext", "runAsUser") != 65532 {
		t.Errorf("pod security context %v", get(spec, "securityContext"))
	}
	if str(spec, "securityContext", "seccompProfile", "type") != "RuntimeDefault" {
		t.Errorf("seccomp profile %v", get(spec, "securityContext", "seccompProfile"))
	}
	var all []any
	all = append(all, list(spec, "containers")...)
	all = append(all, list(spec, "initContainers")...)
	for _, x := range all {
		sc := get(x, "securityContext")
		if get(sc, "readOnlyRootFilesystem") != true || get(sc, "allowPrivilegeEscalation") != false || fmt.Sprint(get(sc, "capabilities", "drop")) != "[ALL]" {
			t.Errorf("container %s security context %v: want read-only root, no privilege escalation, all capabilities dropped", str(x, "name"), sc)
		}
		// Every mount has its volume.
		for _, m := range list(x, "volumeMounts") {
			if byName(list(spec, "volumes"), str(m, "name")) == nil {
				t.Errorf("container %s mounts %q, which is no volume", str(x, "name"), str(m, "name"))
			}
		}
	}
	mounts := map[string]map[string]any{}
	for _, m := range list(c, "volumeMounts") {
		mounts[str(m, "mountPath")] = m.(map[string]any)
	}
	// With a read-only root, the binary writes to /tmp and its cache only.
	for _, p := range []string{"/tmp", "/var/cache/skillrouter"} {
		m := mounts[p]
		if m == nil || m["readOnly"] == true {
			t.Errorf("no writable mount at %s", p)
		} else if v := byName(list(spec, "volumes"), str(m, "name")); get(v, "emptyDir") == nil {
			t.Errorf("%s is not an emptyDir: %v", p, v)
		}
	}
	// Referenced ConfigMaps and PVCs are rendered (or named in the values
	// as existing: team-skills, skillrouter-keys).
	existing := map[string]bool{"PersistentVolumeClaim/team-skills": true, "Secret/skillrouter-keys": true}
	for _, v := range list(spec, "volumes") {
		if n := str(v, "configMap", "name"); n != "" && docs["ConfigMap/"+n] == nil {
			t.Errorf("volume %s: ConfigMap %s not rendered", str(v, "name"), n)
		}
		if n := str(v, "persistentVolumeClaim", "claimName"); n != "" && docs["PersistentVolumeClaim/"+n] == nil && !existing["PersistentVolumeClaim/"+n] {
			t.Errorf("volume %s: PVC %s not rendered", str(v, "name"), n)
		}
		if str(v, "name") == "index" && get(v, "persistentVolumeClaim", "readOnly") != true {
			t.Errorf("the prebuilt index must be mounted read-only: %v", v)
		}
	}
	env := map[string]string{}
	for _, e := range list(c, "env") {
		name := str(e, "name")
		if n := str(e, "valueFrom", "secretKeyRef", "name"); n != "" {
			if docs["Secret/"+n] == nil && !existing["Secret/"+n] {
				t.Errorf("env %s: Secret %s not rendered", name, n)
			}
			env[name] = "from-secret-" + str(e, "valueFrom", "secretKeyRef", "key")
			continue
		}
		env[name] = str(e, "value")
	}
	if m := mounts["/etc/skillrouter"]; m == nil || m["readOnly"] != true {
		t.Fatalf("config not mounted read-only at /etc/skillrouter: %v", m)
	}

	// The configuration the pod reads: the ConfigMap's config.yaml and the
	// container's environment, through serve's own loading and validation
	// (what `router serve --print-config` runs), with the container's args.
	cmName := str(byName(list(spec, "volumes"), str(mounts["/etc/skillrouter"], "name")), "configMap", "name")
	text, _ := get(docs["ConfigMap/"+cmName], "data", "config.yaml").(string)
	if text == "" {
		t.Fatalf("ConfigMap %s has no config.yaml", cmName)
	}
	dir := t.TempDir()
	args := fmt.Sprint(get(c, "args"))
	if args != "[serve --config /etc/skillrouter/config.yaml]" {
		t.Fatalf("container args %s", args)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadFor(t, []string{"--config", path}, env)
	if err != nil {
		t.Fatalf("serve rejects the chart's configuration: %v\n%s", err, text)
	}
	if cfg.Listen != "0.0.0.0:8080" {
		t.Errorf("listen %q: pods must listen on every interface, on the Service's port", cfg.Listen)
	}
	// In-cluster clients call the Service by name: the Host check lets them.
	if hosts := strings.Join(cfg.Server.AllowedHosts, ","); !strings.Contains(hosts, "r-skillrouter,") || !strings.Contains(hosts, ".svc.cluster.local") {
		t.Errorf("server.allowed_hosts %q lacks the Service's names", hosts)
	}
	// Every configured folder is mounted (or comes with the image).
	for _, root := range cfg.Skills {
		if !mountedUnder(mounts, root) && !strings.HasPrefix(root, "/skills") {
			t.Errorf("skills root %s is not mounted", root)
		}
	}
	// The kubelet kills the container terminationGracePeriodSeconds after
	// it starts stopping it, preStop sleep included: the router's
	// shutdown_grace (as serve reads it) must fit after the sleep.
	preStop, _ := get(c, "lifecycle", "preStop", "sleep", "seconds").(int)
	if cmd := list(c, "lifecycle", "preStop", "exec", "command"); len(cmd) == 2 && cmd[0] == "sleep" {
		preStop, _ = strconv.Atoi(fmt.Sprint(cmd[1]))
	}
	if tgps, _ := get(spec, "terminationGracePeriodSeconds").(int); float64(tgps) < float64(preStop)+math.Ceil(cfg.Server.ShutdownGrace.Seconds()) {
		t.Errorf("terminationGracePeriodSeconds %d < preStop %d s + shutdown_grace %s: streams are killed before the grace ends", tgps, preStop, cfg.Server.ShutdownGrace)
	}
	checkSelectors(t, docs)
	var printed bytes.Buffer
	enc := yaml.NewEncoder(&printed)
	if err := enc.Encode(cfg.redacted()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(printed.String(), "from-secret-") {
		t.Error("--print-config shows a secret")
	}
	return cfg
}

func mountedUnder(mounts map[string]map[string]any, p string) bool {
	for m := range mounts {
		if p == m || strings.HasPrefix(p, strings.TrimSuffix(m, "/")+"/") {
			return true
		}
	}
	return false
}
