package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The build tells its version: `router version`, `router --version`, and
// skillrouter_build_info on /metrics (pods of a rolling update apart).
func TestVersion(t *testing.T) {
	old := version
	version = "v9.8.7"
	defer func() { version = old }()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out bytes.Buffer
		root := newRootCmd()
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "skillrouter v9.8.7") {
			t.Errorf("%v: %q", args, out.String())
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildInfo())
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "skillrouter_build_info" {
		t.Fatalf("gathered %v, %v", mfs, err)
	}
	labels := map[string]string{}
	for _, l := range mfs[0].GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["version"] != "v9.8.7" || labels["go_version"] != runtime.Version() || mfs[0].GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Errorf("build_info %v = %v", labels, mfs[0].GetMetric()[0].GetGauge().GetValue())
	}
}
