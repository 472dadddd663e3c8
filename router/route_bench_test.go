package router_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/bench"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// Speed goals (issue 3), on the bench library with the builtin embedder:
//
//	go test ./router -run '^$' -bench 'Route|Build' -benchtime 2000x
//
// BenchmarkRoute reports ns/op, the p50/p99 of the per-call durations it
// records (goal: p99 under 2 ms) and CPU time per call (wall time on an
// oversubscribed machine overstates it); BenchmarkBuild1267 builds every index for
// skills/ + skills-extra/ (goal: under 3 s per op).

func benchQueries(b *testing.B) []string {
	dir := benchDir(b)
	var qs []string
	for _, q := range readJSONL[labelled](b, filepath.Join(dir, "upstream-queries", "queries.jsonl")) {
		qs = append(qs, q.Query)
	}
	return qs
}

func BenchmarkRoute(b *testing.B) {
	for _, s := range router.Strategies {
		b.Run(string(s), func(b *testing.B) {
			dir := benchDir(b)
			ctx := context.Background()
			snap := skills.Load(ctx, []string{filepath.Join(dir, "skills")}, skills.Options{})
			// The 44 queries repeat: without the ranking cache every call
			// is timed as a fresh ranking.
			opts := builtinOptions()
			opts.RankCache = -1
			r, err := router.New(ctx, snap, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			qs := benchQueries(b)
			durs := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := bench.ProcessCPU()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				d := r.Route(ctx, router.Query{Messages: []router.Message{{Role: "user", Text: qs[i%len(qs)]}}, Strategy: s})
				durs = append(durs, time.Since(start))
				if d.Fallback {
					b.Fatalf("fallback: %s", d.FallbackReason)
				}
			}
			b.StopTimer()
			if cpu := bench.ProcessCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			}
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
		})
	}
}

func BenchmarkBuild1267(b *testing.B) {
	dir := benchDir(b)
	ctx := context.Background()
	snap := skills.Load(ctx, []string{filepath.Join(dir, "skills"), filepath.Join(dir, "skills-extra")}, skills.Options{})
	if n := len(snap.Skills()); n < 1100 {
		b.Fatalf("%d skills loaded, want about 1,267", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := router.New(ctx, snap, builtinOptions())
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
