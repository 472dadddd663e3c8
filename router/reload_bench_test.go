package router_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/bench"
	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// BenchmarkRebuildOneSkillOf1267: the library of skills/ + skills-extra/
// (the bench data), one skill's description edited per op, the router
// rebuilt (issue 14, goal: under 100 ms with the builtin embedder; one
// embedding call with a remote one):
//
//	go test ./router -run '^$' -bench RebuildOneSkill -benchtime 20x
//
// It reports the rebuild's ms/op, the full build it replaces (full-ms) and
// their ratio (speedup), and for the remote embedder (a counting fake)
// embedding calls and texts per op.
func BenchmarkRebuildOneSkillOf1267(b *testing.B) {
	dir := benchDir(b)
	tmp := b.TempDir()
	extra := filepath.Join(tmp, "extra")
	if out, err := exec.Command("cp", "-r", filepath.Join(dir, "skills-extra"), extra).CombinedOutput(); err != nil {
		b.Fatalf("copying skills-extra: %v %s", err, out)
	}
	roots := []string{filepath.Join(dir, "skills"), extra}
	ctx := context.Background()
	// A skill that loads (some of the bench skills are skipped as broken).
	var edited string
	for _, s := range skills.Load(ctx, roots, skills.Options{}).Skills() {
		if s.Root == extra && strings.Contains(s.Content(), "\ndescription: ") {
			edited = s.Path
			break
		}
	}
	original, err := os.ReadFile(edited)
	if err != nil {
		b.Fatal(err)
	}
	load := func(i int) *skills.Snapshot {
		text := strings.Replace(string(original), "description: ", "description: Revision "+strconv.Itoa(i)+". ", 1)
		if err := os.WriteFile(edited, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
		return skills.Load(ctx, roots, skills.Options{})
	}
	run := func(b *testing.B, opts router.Options, remote *remoteCounter) {
		snap := load(0)
		start := time.Now()
		r, err := router.New(ctx, snap, opts)
		if err != nil {
			b.Fatal(err)
		}
		full := time.Since(start)
		defer r.Close()
		var calls, texts int64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			next := load(i + 1)
			if remote != nil {
				calls, texts = calls-remote.docCalls.Load(), texts-remote.docTexts.Load()
			}
			b.StartTimer()
			if err := r.Update(ctx, next); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if remote != nil {
				calls, texts = calls+remote.docCalls.Load(), texts+remote.docTexts.Load()
			}
			b.StartTimer()
		}
		b.StopTimer()
		per := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(per.Microseconds())/1000, "ms/op")
		b.ReportMetric(float64(full.Microseconds())/1000, "full-ms")
		b.ReportMetric(float64(full)/float64(per), "speedup")
		if remote != nil {
			b.ReportMetric(float64(calls)/float64(b.N), "embed-calls/op")
			b.ReportMetric(float64(texts)/float64(b.N), "embed-texts/op")
		}
	}
	b.Run("builtin", func(b *testing.B) { run(b, builtinOptions(), nil) })
	b.Run("remote", func(b *testing.B) {
		remote := &remoteCounter{Builtin: embed.NewBuiltin(embed.Config{}).Fit([]string{"a library of skills"})}
		run(b, router.Options{Embedder: remote}, remote)
	})
}

// BenchmarkSettle: what settling costs after an edit, against library
// size (the scale libraries of BenchmarkWarmStart, builtin embedder): per
// op one skill's description is edited, the incremental build installed,
// then the index settled (the embedder fitted, every skill embedded and
// the scores calibrated again; BM25 statistics and signatures reused).
// It reports the settle's wall time and the process's CPU for it, beside
// the edit's own build and a cold build of the same library:
//
//	go test ./router -run '^$' -bench Settle -benchtime 3x
//	SCALE_SIZES=10000 go test ./router -run '^$' -bench Settle -benchtime 3x
func BenchmarkSettle(b *testing.B) {
	for _, size := range scaleSizes() {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			snap, tmp := scaleLibrary(b, size)
			defer os.RemoveAll(tmp)
			ctx := context.Background()
			edited := snap.Skills()[0].Path
			original, err := os.ReadFile(edited)
			if err != nil {
				b.Fatal(err)
			}
			opts := builtinOptions()
			opts.SettleAfter = time.Millisecond
			cpu0, start := bench.ProcessCPU(), time.Now()
			r, err := router.New(ctx, snap, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			coldCPU, cold := bench.ProcessCPU()-cpu0, time.Since(start)
			var edit, settle, editCPU, settleCPU time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				text := strings.Replace(string(original), "description: ", "description: Revision "+strconv.Itoa(i)+". ", 1)
				if err := os.WriteFile(edited, []byte(text), 0o644); err != nil {
					b.Fatal(err)
				}
				next := skills.Load(ctx, snap.Roots(), skills.Options{})
				cpu0, start := bench.ProcessCPU(), time.Now()
				if err := r.Update(ctx, next); err != nil {
					b.Fatal(err)
				}
				cpu1, mid := bench.ProcessCPU(), time.Now()
				if err := r.Settled(ctx); err != nil {
					b.Fatal(err)
				}
				edit, editCPU = edit+mid.Sub(start), editCPU+cpu1-cpu0
				settle, settleCPU = settle+time.Since(mid), settleCPU+bench.ProcessCPU()-cpu1
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(edit), "edit-ms/op")
			b.ReportMetric(ms(editCPU), "edit-cpu-ms/op")
			b.ReportMetric(ms(settle), "settle-ms/op")
			b.ReportMetric(ms(settleCPU), "settle-cpu-ms/op")
			b.ReportMetric(float64(cold.Microseconds())/1000, "cold-ms")
			b.ReportMetric(float64(coldCPU.Microseconds())/1000, "cold-cpu-ms")
		})
	}
}
