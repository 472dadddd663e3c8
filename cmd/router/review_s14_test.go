package main

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"
)

// Review s14 (container defaults, chart).

// TestReviewHelmConfigMountHidesImageDefaults: the images set
// SKILLROUTER_DEFAULTS=/etc/skillrouter/defaults.yaml, and the chart mounts
// its config ConfigMap (one key, config.yaml) as a directory at
// /etc/skillrouter, in the router container and in the index build Job. A
// volume mounted over a folder replaces the image's files in it: the pod
// has no /etc/skillrouter/defaults.yaml, and loadConfig fails on a missing
// defaults file ("SKILLROUTER_DEFAULTS: config: open ...: no such file"),
// so every pod of the chart with a new image exits at start.
// (TestHelmChartImageEnvironment points SKILLROUTER_DEFAULTS at the
// repository's copy and so never sees the mount.)
func TestReviewHelmConfigMountHidesImageDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	images := containerfileEnv(t, "../../Containerfile")
	docs := parseManifests(t, runHelm(t, "template", "r", chartDir, "--namespace", "ai",
		"--set", "index.source=pvc", "--set", "index.buildJob.enabled=true"))
	for _, w := range []struct{ doc, container string }{
		{"Deployment/r-skillrouter", "router"},
		{"Job/r-skillrouter-index-build", "index-build"},
	} {
		spec := get(docs[w.doc], "spec", "template", "spec")
		ctr := byName(list(spec, "containers"), w.container)
		if ctr == nil {
			t.Fatalf("%s: no container %s", w.doc, w.container)
		}
		for _, stage := range []string{"runtime", "exec"} {
			env := maps.Clone(images[stage])
			for _, e := range list(ctr, "env") {
				env[str(e, "name")] = str(e, "value")
			}
			path := env[envDefaults]
			if path == "" {
				continue
			}
			for _, m := range list(ctr, "volumeMounts") {
				mp := strings.TrimSuffix(str(m, "mountPath"), "/")
				if !strings.HasPrefix(path, mp+"/") || str(m, "subPath") != "" {
					continue
				}
				rel := strings.TrimPrefix(path, mp+"/")
				vol := byName(list(spec, "volumes"), str(m, "name"))
				provided := false
				if cm := str(vol, "configMap", "name"); cm != "" {
					data, _ := get(docs["ConfigMap/"+cm], "data").(map[string]any)
					_, provided = data[rel]
				}
				if provided {
					continue
				}
				// What serve does when the file is not there.
				env[envDefaults] = filepath.Join(t.TempDir(), "etc/skillrouter/defaults.yaml")
				_, err := loadFor(t, []string{"--config", "../../examples/config.yaml"}, env)
				t.Errorf("%s, %s image: volume %q mounted at %s hides the image's %s=%s; serve then fails: %v",
					w.doc, stage, str(m, "name"), mp, envDefaults, path, err)
			}
		}
	}
}

// TestReviewDefaultsFileValueErrorsNameIt: docs/proxy.md says every error
// names where the value was written. A value from the SKILLROUTER_DEFAULTS
// file that fails validation, or a skills folder from it that does not
// exist (the image's /skills when nothing is mounted: the most common
// first-run error), is reported with no origin at all; the images' old
// ENV said "(environment SKILLROUTER_SKILLS)".
func TestReviewDefaultsFileValueErrorsNameIt(t *testing.T) {
	d := writeFile(t, "defaults.yaml", "server:\n  shutdown_grace: 0s\n")
	_, err := loadFor(t, nil, map[string]string{envDefaults: d})
	if err == nil || (!strings.Contains(err.Error(), envDefaults) && !strings.Contains(err.Error(), d)) {
		t.Errorf("a bad value from the defaults file: error %v names neither %s nor the file", err, envDefaults)
	}
	d = writeFile(t, "defaults2.yaml", "skills: [/nonexistent/review-s14/skills]\n")
	cfg, err := loadFor(t, nil, map[string]string{envDefaults: d})
	if err != nil {
		t.Fatal(err)
	}
	_, err = requireRoots(&cfg, "router serve --skills builtin:examples")
	if err == nil || (!strings.Contains(err.Error(), envDefaults) && !strings.Contains(err.Error(), d)) {
		t.Errorf("a missing skills folder from the defaults file: error %v names neither %s nor the file", err, envDefaults)
	}
}

// TestReviewHelmShutdownGraceAsServeReadsIt: the chart derives
// terminationGracePeriodSeconds from the grace "where serve reads it", but
// (1) secrets.extraEnv ("any other SKILLROUTER_* variable") can set
// SKILLROUTER_SERVER_SHUTDOWN_GRACE, which serve reads and the chart
// ignores: the kubelet kills the pod before the router's grace is over;
// (2) config.server.shutdown_grace: null is accepted by serve (the default
// 30s stays) but fails the render.
func TestReviewHelmShutdownGraceAsServeReadsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	tgps := func(args ...string) (any, string) {
		t.Helper()
		out, err := helmTemplate(t, args...)
		if err != nil {
			return nil, out
		}
		docs := parseManifests(t, out)
		return get(docs["Deployment/r-skillrouter"], "spec", "template", "spec", "terminationGracePeriodSeconds"), ""
	}
	if got, out := tgps("--set", "secrets.extraEnv.SKILLROUTER_SERVER_SHUTDOWN_GRACE=2m"); got != 135 {
		t.Errorf("shutdown grace 2m from secrets.extraEnv: terminationGracePeriodSeconds %v, want 135 (5 + 120 + 10) %s", got, out)
	}
	vals := writeFile(t, "values.yaml", "config:\n  server:\n    shutdown_grace: null\n")
	if got, out := tgps("-f", vals); got != 45 {
		t.Errorf("config.server.shutdown_grace: null (serve keeps 30s): terminationGracePeriodSeconds %v, want 45\n%s", got, out)
	}
}

// TestReviewHelmIndexClaimModeErrors: render-time refusals of the index
// claim's access modes should name the value and the reason that applies.
// A string instead of a list fails inside sprig's has ("Cannot find has on
// type string"), naming no value; an unknown mode without the build Job is
// refused because "the index build Job writes the claim".
func TestReviewHelmIndexClaimModeErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm on first use")
	}
	out, err := helmTemplate(t, "--set", "index.source=pvc", "--set", "index.pvc.accessModes=ReadWriteMany")
	if err == nil || !strings.Contains(out, "index.pvc.accessModes") {
		t.Errorf("accessModes given as a string: %v, error does not name index.pvc.accessModes:\n%s", err, out)
	}
	out, err = helmTemplate(t, "--set", "index.source=pvc", "--set", "index.pvc.accessModes={ReadWriteMny}")
	if err == nil || strings.Contains(out, "Job") {
		t.Errorf("an unknown access mode without the build Job: %v, refused for a Job that is not there:\n%s", err, out)
	}
}
