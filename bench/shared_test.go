package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// sharedBench locates ../shared/bench from the repository root, or skips.
func sharedBench(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "shared", "bench")
	if _, err := os.Stat(filepath.Join(dir, "metatool", "tools.jsonl")); err != nil {
		t.Skipf("shared bench data not found at %s", dir)
	}
	return dir
}

// Every MetaTool tool must become a loaded skill under its own id: a tool
// that the loader rejects would silently turn its queries into misses.
func TestMetaToolEveryToolLoads(t *testing.T) {
	dir := sharedBench(t)
	m, err := LoadMetaTool(filepath.Join(dir, "metatool"), Selection{Split: "single"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools) != 199 || len(m.Queries) != 20550 {
		t.Fatalf("%d tools, %d single-tool queries; want 199, 20550", len(m.Tools), len(m.Queries))
	}
	snap, tmp, missing, err := Materialize(context.Background(), m.SkillFiles(), skills.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, ms := range missing {
		t.Errorf("not loaded: %s", ms)
	}
	if got := len(snap.Skills()); got != 199 {
		t.Fatalf("%d skills loaded, want 199", got)
	}
	for _, tl := range m.Tools {
		s, ok := snap.Get(tl.ID)
		if !ok || s.Description != tl.Description {
			t.Errorf("tool %s: loaded %v, description %q", tl.ID, ok, s.Description)
		}
	}
	multi, err := LoadMetaTool(filepath.Join(dir, "metatool"), Selection{Split: "multi"})
	if err != nil || len(multi.Queries) != 497 {
		t.Fatalf("multi: %v, %v", len(multi.Queries), err)
	}
	up, err := LoadQueries(filepath.Join(dir, "upstream-queries", "queries.jsonl"))
	if err != nil || len(up) != 44 {
		t.Fatalf("upstream: %d, %v", len(up), err)
	}
}
