package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// hpaMetrics is the rendered HPA's metrics, "cpu=70 memory=80": each an
// autoscaling/v2 Resource metric on average utilization.
func hpaMetrics(t *testing.T, docs map[string]manifest) string {
	t.Helper()
	hpa := docs["HorizontalPodAutoscaler/r-skillrouter"]
	if hpa == nil {
		t.Fatalf("no HorizontalPodAutoscaler (got %v)", keys(docs))
	}
	if v := str(hpa, "apiVersion"); v != "autoscaling/v2" {
		t.Errorf("HPA apiVersion %s, want autoscaling/v2", v)
	}
	var out []string
	for _, m := range list(hpa, "spec", "metrics") {
		if str(m, "type") != "Resource" || str(m, "resource", "target", "type") != "Utilization" {
			t.Errorf("metric %v: want a Resource metric on Utilization", m)
		}
		out = append(out, fmt.Sprintf("%s=%v", str(m, "resource", "name"), get(m, "resource", "target", "averageUtilization")))
	}
	return strings.Join(out, " ")
}

// TestHelmChartAutoscalingMetrics: the HPA scales on CPU utilization,
// memory utilization or both; null leaves a metric out, and the defaults
// render CPU alone, as before the memory target existed. Refused at
// render: an HPA with no metric, and one on memory while a container has
// no memory request (the HPA would report "missing request for memory"
// and never scale); the schema refuses a memory target outside 1-100.
func TestHelmChartAutoscalingMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	with := func(sets ...[]string) []string { return slices.Concat(sets...) }
	hpa := []string{"--set", "autoscaling.enabled=true"}
	mem := with(hpa, []string{"--set", "autoscaling.targetMemoryUtilizationPercentage=80"})
	noCPU := []string{"--set", "autoscaling.targetCPUUtilizationPercentage=null"}
	git := []string{"--set", "skills.source=gitSync", "--set", "skills.gitSync.repo=https://example.com/skills"}
	noMemRequest := []string{"--set", "resources.requests.memory=null", "--set", "resources.limits.memory=null"}
	for _, c := range []struct {
		name string
		set  []string
		want string // the metrics, or the words of the refusal
		ok   bool
	}{
		{"defaults: CPU only", hpa, "cpu=70", true},
		{"memory beside CPU", mem, "cpu=70 memory=80", true},
		{"memory only", with(mem, noCPU), "memory=80", true},
		// Without a CPU metric no CPU request is needed.
		{"memory only, no CPU request", with(mem, noCPU, []string{"--set", "resources.requests.cpu=null"}), "memory=80", true},
		{"memory with git-sync", with(mem, git), "cpu=70 memory=80", true},
		// A memory limit alone sets the request to it.
		{"memory request from the limit", with(mem, []string{"--set", "resources.requests.memory=null"}), "cpu=70 memory=80", true},
		{"a LimitRange gives the requests", with(mem, []string{"--set", "resources=null", "--set", "autoscaling.skipRequestCheck=true"}), "cpu=70 memory=80", true},
		{"CPU target changed", with(hpa, []string{"--set", "autoscaling.targetCPUUtilizationPercentage=150"}), "cpu=150", true},

		{"no metric", with(hpa, noCPU), "needs a metric to scale on", false},
		{"no metric, memory null too", with(hpa, noCPU, []string{"--set", "autoscaling.targetMemoryUtilizationPercentage=null"}), "needs a metric to scale on", false},
		{"memory without a memory request", with(mem, noMemRequest), "resources.requests.memory", false},
		{"memory without one, CPU off", with(mem, noCPU, noMemRequest), "resources.requests.memory", false},
		{"memory with git-sync without one", with(mem, git, []string{"--set", "skills.gitSync.resources.requests.memory=null"}), "skills.gitSync.resources.requests.memory", false},
		// The CPU check still holds beside memory.
		{"CPU without a CPU request", with(mem, []string{"--set", "resources.requests.cpu=null"}), "resources.requests.cpu", false},
		{"memory above 100", with(hpa, []string{"--set", "autoscaling.targetMemoryUtilizationPercentage=101"}), "targetMemoryUtilizationPercentage", false},
		{"memory 0", with(hpa, []string{"--set", "autoscaling.targetMemoryUtilizationPercentage=0"}), "targetMemoryUtilizationPercentage", false},
		{"memory not a number", with(hpa, []string{"--set", "autoscaling.targetMemoryUtilizationPercentage=high"}), "targetMemoryUtilizationPercentage", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := helmTemplate(t, c.set...)
			if !c.ok {
				if err == nil || !strings.Contains(out, c.want) {
					t.Errorf("%v: rendered (err %v), want a refusal naming %q:\n%.600s", c.set, err, c.want, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v: %v\n%s", c.set, err, out)
			}
			if got := hpaMetrics(t, parseManifests(t, out)); got != c.want {
				t.Errorf("HPA metrics %q, want %q", got, c.want)
			}
			runHelm(t, append([]string{"lint", "--strict", chartDir}, c.set...)...)
		})
	}
	// Without the HPA the targets are not looked at.
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai", "--set", "autoscaling.targetCPUUtilizationPercentage=null"))
	if _, ok := docs["HorizontalPodAutoscaler/r-skillrouter"]; ok {
		t.Error("an HPA rendered with autoscaling.enabled false")
	}
}

// emptyDirLimits lists the rendered pods' emptyDir volumes with their
// sizeLimit ("none" without one), "Deployment:cache=2Gi Job:tmp=none",
// sorted.
func emptyDirLimits(docs map[string]manifest) string {
	var out []string
	for _, k := range keys(docs) {
		for _, v := range list(docs[k], "spec", "template", "spec", "volumes") {
			ed, ok := get(v, "emptyDir").(map[string]any)
			if !ok {
				continue
			}
			limit := "none"
			if l, ok := ed["sizeLimit"]; ok {
				limit = fmt.Sprint(l)
			}
			kind, _, _ := strings.Cut(k, "/")
			out = append(out, fmt.Sprintf("%s:%s=%s", kind, str(v, "name"), limit))
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// TestHelmChartScratchSizeLimits: every emptyDir of the pods (the router's
// /tmp and cache, git-sync's checkout and /tmp, the index build Job's /tmp
// and cache) has a sizeLimit by default, so a runaway folder (tier-3
// output, the kept routing index) gets its pod evicted instead of filling
// the node's disk; emptyDirs.<volume>.sizeLimit changes one, null or ""
// drops it, and what is no quantity, or no volume, is refused.
func TestHelmChartScratchSizeLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	git := []string{"--set", "skills.source=gitSync", "--set", "skills.gitSync.repo=https://example.com/skills"}
	job := []string{"-f", chartDir + "/ci/configmap-pvc-index-values.yaml"}
	for _, c := range []struct {
		name string
		set  []string
		want string // the emptyDirs' limits, or the words of the refusal
		ok   bool
	}{
		{"defaults", nil, "Deployment:cache=2Gi Deployment:tmp=256Mi", true},
		{"git-sync", git, "Deployment:cache=2Gi Deployment:git-tmp=64Mi Deployment:git=1Gi Deployment:tmp=256Mi", true},
		{"index build Job", job, "Deployment:cache=2Gi Deployment:tmp=256Mi Job:cache=2Gi Job:tmp=256Mi", true},
		{"cache raised", slices.Concat(job, []string{"--set", "emptyDirs.cache.sizeLimit=10Gi"}),
			"Deployment:cache=10Gi Deployment:tmp=256Mi Job:cache=10Gi Job:tmp=256Mi", true},
		{"bytes", []string{"--set-string", "emptyDirs.tmp.sizeLimit=1073741824"}, "Deployment:cache=2Gi Deployment:tmp=1073741824", true},
		{"cache without a limit", slices.Concat(job, []string{"--set", "emptyDirs.cache.sizeLimit=null"}),
			"Deployment:cache=none Deployment:tmp=256Mi Job:cache=none Job:tmp=256Mi", true},
		{"empty: no limit", []string{"--set", "emptyDirs.tmp.sizeLimit="}, "Deployment:cache=2Gi Deployment:tmp=none", true},
		{"a volume null", slices.Concat(git, []string{"--set", "emptyDirs.git=null"}),
			"Deployment:cache=2Gi Deployment:git-tmp=64Mi Deployment:git=none Deployment:tmp=256Mi", true},
		{"no limits", slices.Concat(git, []string{"--set", "emptyDirs=null"}),
			"Deployment:cache=none Deployment:git-tmp=none Deployment:git=none Deployment:tmp=none", true},

		{"not a quantity", []string{"--set", "emptyDirs.cache.sizeLimit=lots"}, "/emptyDirs/cache/sizeLimit", false},
		{"a negative size", []string{"--set", "emptyDirs.cache.sizeLimit=-1Gi"}, "/emptyDirs/cache/sizeLimit", false},
		{"a bare number of bytes", []string{"--set", "emptyDirs.cache.sizeLimit=1073741824"}, "Deployment:cache=1073741824 Deployment:tmp=256Mi", true},
		{"a misspelt volume", []string{"--set", "emptyDirs.cach.sizeLimit=1Gi"}, "cach", false},
		{"a misspelt key", []string{"--set", "emptyDirs.cache.sizelimit=1Gi"}, "sizelimit", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := helmTemplate(t, c.set...)
			if !c.ok {
				if err == nil || !strings.Contains(out, "values don't meet the specifications of the schema") || !strings.Contains(out, c.want) {
					t.Errorf("%v: rendered (err %v), want a schema error naming %q:\n%.600s", c.set, err, c.want, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v: %v\n%s", c.set, err, out)
			}
			docs := parseManifests(t, out)
			if got := emptyDirLimits(docs); got != c.want {
				t.Errorf("emptyDir size limits\n got %s\nwant %s", got, c.want)
			}
			// Still the pods the chart test accepts (writable emptyDirs at
			// /tmp and the cache, every mount backed by a volume).
			checkDeployment(t, docs)
			runHelm(t, append([]string{"lint", "--strict", chartDir}, c.set...)...)
		})
	}
}
