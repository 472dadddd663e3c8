package skills

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// benchDir locates the shared benchmark data next to the repository
// (../shared/bench from the repo root); tests skip when it is absent.
func benchDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "shared", "bench")
	if _, err := os.Stat(filepath.Join(dir, "skills")); err != nil {
		tb.Skipf("bench data not found at %s", dir)
	}
	return dir
}

func TestBenchLibrary(t *testing.T) {
	dir := benchDir(t)
	snap := Load(context.Background(), []string{filepath.Join(dir, "skills")}, Options{})
	if n := len(snap.All()); n != 407 {
		t.Fatalf("found %d skills, want 407", n)
	}
	if n := snap.Len(); n != 407 {
		var skipped []string
		for _, s := range snap.All() {
			if s.Skipped {
				skipped = append(skipped, s.ID+": "+s.Problems[0].Message)
			}
		}
		t.Fatalf("loaded %d skills, want all 407; skipped:\n%s", n, strings.Join(skipped, "\n"))
	}
	warn := func(id, msg string) {
		t.Helper()
		s, ok := snap.Get(id)
		if !ok {
			t.Fatalf("%s not loaded", id)
		}
		if _, ok := findProblem(s.Problems, filepath.ToSlash(filepath.Join(id, SkillFile)), msg); !ok {
			t.Errorf("%s: no warning containing %q; problems:\n%s", id, msg, problemList(s.Problems))
		}
	}
	warn("anthropics/claude-api", "the spec allows at most 1024")
	warn("K-Dense-AI-claude-scientific-skills/database-lookup", "the spec allows at most 1024")
	warn("alirezarezvani-claude-skills/c-level-skills", `name "c-level-advisor" does not match its folder "c-level-skills"`)
	warn("alirezarezvani-claude-skills/pw", `name "playwright-pro" does not match its folder "pw"`)

	long := 0
	for _, p := range snap.Problems() {
		if p.Severity == SeverityError {
			t.Errorf("unexpected error: %s", p)
		}
		if strings.Contains(p.Message, "the spec allows at most 1024") {
			long++
		}
	}
	if long != 2 {
		t.Errorf("%d over-long descriptions reported, want 2", long)
	}
	// Everything renders; the library is too big for an enum.
	list := snap.Skills()
	if !strings.Contains(RenderCatalog(list, CatalogOptions{}), "<id>anthropics/mcp-builder</id>") {
		t.Error("catalog misses anthropics/mcp-builder")
	}
	if strings.Contains(string(LoadSkillTool(list)), `"enum"`) {
		t.Error("407 skills must not produce an enum")
	}
	if s, _ := snap.Get("anthropics/mcp-builder"); !strings.Contains(Envelope(s), "<resource path=\"files.txt\" kind=\"other\"") {
		t.Error("envelope misses the files.txt resource")
	}
	if got := Suggest("mcp-builder", list, 3); len(got) == 0 || got[0] != "anthropics/mcp-builder" {
		t.Errorf("Suggest(mcp-builder) = %q", got)
	}
}

func TestBenchLibraryWithExtra(t *testing.T) {
	dir := benchDir(t)
	roots := []string{filepath.Join(dir, "skills"), filepath.Join(dir, "skills-extra")}
	snap := Load(context.Background(), roots, Options{})
	if n := len(snap.All()); n != 1267 {
		t.Fatalf("found %d skills, want 1267", n)
	}
	skipped := 0
	for _, s := range snap.All() {
		if !s.Skipped {
			Envelope(s) // must not panic
			continue
		}
		skipped++
		if !strings.HasPrefix(s.Root, roots[1]) {
			t.Errorf("%s skipped, but only skills-extra has bad names", s.ID)
		}
		for _, p := range s.Problems {
			if p.Severity == SeverityError && !strings.HasPrefix(p.Message, `name "`) {
				t.Errorf("%s: unexpected error %s", s.ID, p)
			}
		}
	}
	if skipped != 92 {
		t.Errorf("%d skills skipped for errors, want the 92 bad names", skipped)
	}
	if snap.Len() != 1267-92 {
		t.Errorf("loaded %d", snap.Len())
	}
}

// BenchmarkLoadBench scans skills/ + skills-extra/ (1,267 skills). Targets:
// under 150 ms per scan and under 50 MB of live heap for the snapshot.
//
//	go test ./skills -run '^$' -bench LoadBench -benchtime 20x
func BenchmarkLoadBench(b *testing.B) {
	dir := benchDir(b)
	roots := []string{filepath.Join(dir, "skills"), filepath.Join(dir, "skills-extra")}
	ctx := context.Background()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	b.ReportAllocs()
	var snap *Snapshot
	cpu0 := processCPU()
	for b.Loop() {
		snap = Load(ctx, roots, Options{})
	}
	b.StopTimer()
	// CPU time (all threads) per scan: stable even when the machine is busy.
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	}

	// Live heap held by one snapshot: what a running proxy keeps in memory.
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	b.ReportMetric(float64(live)/(1<<20), "live-MB")
	b.ReportMetric(float64(after.HeapAlloc)/(1<<20), "heap-MB")
	b.ReportMetric(float64(len(snap.All())), "skills")
	runtime.KeepAlive(snap)
}
