package main

// Reliability review, round 15: what `router serve` leaves behind when it
// stops.

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// `router serve` writes the index it built to routing.index_dir in the
// background (so the next start is warm), but never closes its routers:
// runServe returns, and the process exits, without waiting for that write.
// A server stopped soon after a cold start (a rollout, a crash-looping pod,
// an operator's restart after a config mistake) loses the index it just
// built, so every such start is cold, and strands the write's temporary
// file in the folder. docs/deploy.md promises "every process keeps the
// index it built"; the router's own Close waits for the write ("so a
// short-lived process (router route) leaves a complete index behind"),
// serve just does not call it.
func TestRel15ServeKeepsItsIndexWhenStoppedAfterStart(t *testing.T) {
	lib := "/work/shared/bench/skills"
	if _, err := os.Stat(lib); err != nil {
		t.Skip("needs the bench library")
	}
	cfg := defaultsFor(t)
	cfg.Upstream.CheckInterval = 0
	cfg.MCP.Enabled = false
	idx := t.TempDir()
	cfg.Routing.IndexDir = idx
	sp := startServeOn(t, cfg, http.NotFoundHandler(), lib)
	if err := sp.stop(); err != nil { // SIGTERM, right after the start
		t.Fatal(err)
	}
	// runServe has returned: the process would exit now.
	entries, _ := os.ReadDir(idx)
	var names []string
	manifest := false
	for _, e := range entries {
		names = append(names, e.Name())
		manifest = manifest || strings.HasPrefix(e.Name(), "prebuilt-")
	}
	if !manifest {
		t.Errorf("serve returned before the index it built was kept; the folder holds %v", names)
	}
	time.Sleep(3 * time.Second) // let the abandoned writer finish before TempDir's cleanup
}
