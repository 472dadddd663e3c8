package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
)

// version is set at link time for releases (-ldflags "-X main.version=v1.2.3");
// otherwise buildVersion reads what the Go toolchain recorded.
var version = "dev"

// buildVersion is the running build's version: the one set at link time,
// the module's version (go install …@v1.2.3), or the commit it was built
// from, "-dirty" when the tree had changes. Pods of a rolling update tell
// their builds apart by it (logs, /metrics, traces, MCP serverInfo).
func buildVersion() string {
	if version != "dev" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev-" + rev
}

// buildInfo is skillrouter_build_info{version,go_version} 1.
func buildInfo() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "skillrouter", Name: "build_info",
		Help:        "The running build: its version and the Go version it was built with (always 1).",
		ConstLabels: prometheus.Labels{"version": buildVersion(), "go_version": runtime.Version()},
	})
	g.Set(1)
	return g
}

// versionLine is what `router version` and `router --version` print.
func versionLine() string { return "skillrouter " + buildVersion() + " (" + runtime.Version() + ")" }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this build",
		Args:  noArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
		},
	}
}
