package router_test

// Per-request cost against library size (issue 19):
//
//	go test ./router -run '^$' -bench 'RewriteScale' -benchtime 3000x
//	SCALE_SIZES=407,10000 go test ./router -run '^$' -bench 'RewriteScale/size=10000' -cpuprofile cpu.out
//
// Each size is a library built as `router bench --scale` builds it (the real
// skills of ../shared/bench first, then synthetic variants), routed with the
// builtin embedder (hybrid, ranking cache off) and rewritten as the proxy
// does for a Chat Completions request: parse, route, plan, render. Queries
// differ on every request (pairs of the upstream prompts), as in a load run.
// It reports CPU µs per request; compare sizes within one run.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/bench"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire/chat"
)

func scaleSizes() []int {
	s := os.Getenv("SCALE_SIZES")
	if s == "" {
		s = "407,10000"
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// scaleLibrary writes and loads a scale library of size skills; the caller
// removes dir.
func scaleLibrary(b *testing.B, size int) (*skills.Snapshot, string) {
	dir := benchDir(b)
	real := skills.Load(context.Background(), []string{filepath.Join(dir, "skills")}, skills.Options{})
	qs, err := bench.LoadQueries(filepath.Join(dir, "upstream-queries", "queries.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	files := bench.ScaleLibrary(bench.ScaleOrder(real.Skills(), bench.ExpectedIDs(qs), 1), size, 1)
	snap, tmp, missing, err := bench.Materialize(context.Background(), files, skills.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if len(missing) > 0 {
		b.Fatalf("%d generated skills did not load: %v", len(missing), missing[0])
	}
	return snap, tmp
}

// scaleBodies returns n distinct chat bodies made of pairs of the upstream
// prompts.
func scaleBodies(b *testing.B, n int) [][]byte {
	qs := benchQueries(b)
	out := make([][]byte, n)
	for i := range out {
		a, c := qs[i%len(qs)], qs[(i/len(qs)+i*7+3)%len(qs)]
		words := strings.Fields(c)
		q := a + " " + strings.Join(words[:min(len(words), 12)], " ") + fmt.Sprintf(" (%d)", i)
		out[i] = []byte(fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":%q}]}`, q))
	}
	return out
}

func BenchmarkRewriteScale(b *testing.B) {
	for _, size := range scaleSizes() {
		// Built once per size: the sub-benchmark runs twice (b.N = 1
		// first), and building 10,000 skills takes seconds.
		var r *router.Router
		var tmp string
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			ctx := context.Background()
			if r == nil {
				var snap *skills.Snapshot
				snap, tmp = scaleLibrary(b, size)
				opts := builtinOptions()
				opts.RankCache = -1
				var err error
				if r, err = router.New(ctx, snap, opts); err != nil {
					b.Fatal(err)
				}
			}
			bodies := scaleBodies(b, 4096)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := bench.ProcessCPU()
			for i := 0; i < b.N; i++ {
				req, err := chat.Parse(bodies[i%len(bodies)])
				if err != nil {
					b.Fatal(err)
				}
				rw, err := r.Rewrite(ctx, req.View(), router.RewriteOptions{}, router.Overrides{})
				if err != nil || rw.Decision.Fallback {
					b.Fatalf("%v %+v", err, rw.Decision)
				}
				if _, err := req.Render(rw.Plan); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if cpu := bench.ProcessCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			}
		})
		if r != nil {
			r.Close()
		}
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}
}
