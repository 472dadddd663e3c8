package router

// Rewrite cost on the 407-skill bench library:
//
//	go test ./router -run '^$' -bench 'Rewrite' -benchtime 2000x
//
// BenchmarkRewriteWith measures the rewrite alone (given a decision: catalog,
// envelopes, tools, JSON splicing, token counts); BenchmarkRewriteChat adds
// routing with the builtin embedder (hybrid), i.e. everything the proxy
// spends before forwarding.

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/coldcache"
	"github.com/skillrouter/skillrouter/skills"
)

func upstreamQueries(tb testing.TB) []string {
	tb.Helper()
	f, err := os.Open(filepath.Join(benchRoot(tb), "upstream-queries", "queries.jsonl"))
	if err != nil {
		tb.Skip(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(sc.Bytes(), &q) == nil && q.Query != "" {
			qs = append(qs, q.Query)
		}
	}
	return qs
}

func chatBodies(tb testing.TB, qs []string) [][]byte {
	out := make([][]byte, len(qs))
	for i, q := range qs {
		out[i] = chat(tb, "system", "You are a helpful assistant.", "user", q)
	}
	return out
}

func BenchmarkRewriteWith(b *testing.B) {
	snap := benchLibrary(b)
	bodies := chatBodies(b, upstreamQueries(b))
	r := newTestRouter(b, snap)
	decs := make([]*Decision, len(bodies))
	for i, body := range bodies {
		msgs, _ := MessagesFromChat(body)
		decs[i] = r.Route(context.Background(), Query{Messages: msgs})
	}
	for _, mode := range []CatalogMode{CatalogAuto, CatalogAll} {
		b.Run(string(mode), func(b *testing.B) {
			opts := RewriteOptions{CatalogMode: mode}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				k := i % len(bodies)
				if _, err := rewriteWithChat(context.Background(), bodies[k], snap, decs[k], opts, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRewriteChat(b *testing.B) { benchRewriteChat(b, false, 0) }

// BenchmarkRewriteChatCold is BenchmarkRewriteChat with the CPU caches
// flushed before each request, as they are when the proxy idles between
// requests waiting on the model: what a request costs when the index has to
// come from memory. The untimed flush (64 MB) dominates the run time; use
// -benchtime 1000x.
func BenchmarkRewriteChatCold(b *testing.B) { benchRewriteChat(b, true, 0) }

// BenchmarkRewriteChatIdle is BenchmarkRewriteChat with 20 ms of idle
// (untimed) before each request, as one client of a model answering in 20
// ms leaves the proxy: the caches are as the rest of the machine left them,
// and the core may have slept. Use -benchtime 500x.
func BenchmarkRewriteChatIdle(b *testing.B) { benchRewriteChat(b, false, 20*time.Millisecond) }

// benchChatRouter returns a router over the bench library with the
// builtin embedder, closed at the benchmark's end, and the upstream queries
// as Chat bodies. Its ranking cache is off: the bodies repeat, and each
// rewrite should rank afresh.
func benchChatRouter(b *testing.B) (*Router, [][]byte) {
	snap := benchLibrary(b)
	bodies := chatBodies(b, upstreamQueries(b))
	emb := embed.NewBuiltin(embed.Config{})
	r, err := New(context.Background(), snap, Options{Embedder: emb, Fit: func(c []string) Embedder { return emb.Fit(c) }, RankCache: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	return r, bodies
}

// benchRewriteChat rewrites the upstream queries one after another, the
// caches flushed (cold) or the process idle for idle before each.
func benchRewriteChat(b *testing.B, cold bool, idle time.Duration) {
	r, bodies := benchChatRouter(b)
	var flush *coldcache.Flusher
	if cold {
		flush = coldcache.New()
	}
	durs := make([]time.Duration, 0, 4096)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		flush.Before(b)
		if idle > 0 {
			b.StopTimer()
			time.Sleep(idle)
			b.StartTimer()
		}
		start := time.Now()
		rw, err := rewriteChat(context.Background(), r, bodies[i%len(bodies)], RewriteOptions{}, Overrides{})
		durs = append(durs, time.Since(start))
		if err != nil || rw.Decision.Fallback {
			b.Fatalf("%v %+v", err, rw.Decision)
		}
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkRewriteChatParallel is BenchmarkRewriteChat on every core at
// once (-cpu sets how many goroutines), as concurrent requests run: what
// the requests share (caches, locks, counters) shows here and not in the
// one-at-a-time benchmark. ns/op is wall time per rewrite over all of them.
func BenchmarkRewriteChatParallel(b *testing.B) {
	r, bodies := benchChatRouter(b)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1))
			rw, err := rewriteChat(context.Background(), r, bodies[i%len(bodies)], RewriteOptions{}, Overrides{})
			if err != nil || rw.Decision.Fallback {
				b.Errorf("%v %+v", err, rw.Decision)
				return
			}
		}
	})
}

// TestAddedTokensBenchLibrary reports the prompt tokens a rewrite adds on the
// bench library in auto and all modes, and checks the auto-mode bounds.
func TestAddedTokensBenchLibrary(t *testing.T) {
	snap := skills.Load(context.Background(), []string{filepath.Join(benchRoot(t), "skills")}, skills.Options{})
	r := newTestRouter(t, snap)
	qs := upstreamQueries(t)
	for _, mode := range []CatalogMode{CatalogAuto, CatalogAll} {
		var added, catalog, tools, env []int
		for _, q := range qs {
			p, err := r.Prompt(context.Background(), Query{Messages: []Message{{Role: "system", Text: "s"}, {Role: "user", Text: q}}}, RewriteOptions{CatalogMode: mode})
			if err != nil {
				t.Fatal(err)
			}
			e := 0
			for _, x := range p.Envelopes {
				e += x.Tokens
			}
			added, catalog, tools, env = append(added, p.AddedTokens), append(catalog, p.CatalogTokens), append(tools, p.ToolTokens), append(env, e)
			if mode == CatalogAuto && (p.CatalogTokens > DefaultCatalogBudgetTokens || e > DefaultAutoLoadBudgetTokens && len(p.Decision.Pinned) == 0) {
				t.Errorf("%q: catalog %d, envelopes %d tokens over budget", q, p.CatalogTokens, e)
			}
		}
		t.Logf("%-5s mode, %d queries: added tokens median %d (min %d, max %d); catalog median %d; tools median %d; envelopes median %d (max %d)",
			mode, len(qs), medianInt(added), slices.Min(added), slices.Max(added), medianInt(catalog), medianInt(tools), medianInt(env), slices.Max(env))
	}
}

func medianInt(xs []int) int {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// BenchmarkPromptNewQueries routes and plans (Prompt: the proxy's shallow
// ranking, hybrid) queries like `make bench-compare`'s: 50 words drawn from
// the upstream queries, a new one every time, so no cache answers and every
// query word is analysed.
func BenchmarkPromptNewQueries(b *testing.B) {
	r, _ := benchChatRouter(b)
	var words []string
	for _, q := range upstreamQueries(b) {
		words = append(words, strings.Fields(q)...)
	}
	queries := make([]string, 4096)
	for i := range queries {
		rnd := rand.New(rand.NewPCG(uint64(i), 7))
		w := make([]string, 50)
		for k := range w {
			w[k] = words[rnd.IntN(len(words))]
		}
		queries[i] = strings.Join(w, " ")
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p, err := r.Prompt(context.Background(), Query{Messages: []Message{{Role: "user", Text: queries[i%len(queries)]}}}, RewriteOptions{})
		if err != nil || p.Decision.Fallback {
			b.Fatalf("%v %+v", err, p.Decision)
		}
	}
}
