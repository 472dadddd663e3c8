package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/chat"
)

// benchDir is the shared benchmark data, next to the repository.
func benchDir(b *testing.B) string {
	dir := filepath.Join("..", "..", "..", "shared", "bench")
	if _, err := os.Stat(filepath.Join(dir, "skills")); err != nil {
		b.Skipf("benchmark data not found at %s", dir)
	}
	return dir
}

// benchAPI is one client API in the latency benchmark: its path under /v1,
// the request it makes of a query, and headers its clients send.
type benchAPI struct {
	name   string
	path   string
	body   func(query string) []byte
	header map[string]string
}

var benchAPIs = []benchAPI{
	{"chat", "/chat/completions", func(q string) []byte {
		body, _ := json.Marshal(map[string]any{"model": "bench", "messages": []any{
			map[string]string{"role": "system", "content": "You are a helpful coding assistant."},
			map[string]string{"role": "user", "content": q},
		}})
		return body
	}, nil},
	{"responses", "/responses", func(q string) []byte {
		body, _ := json.Marshal(map[string]any{"model": "bench", "instructions": "You are a helpful coding assistant.",
			"input": []any{map[string]string{"role": "user", "content": q}}, "store": false})
		return body
	}, nil},
	{"messages", "/messages", func(q string) []byte {
		body, _ := json.Marshal(map[string]any{"model": "bench", "max_tokens": 1024, "system": "You are a helpful coding assistant.",
			"messages": []any{map[string]string{"role": "user", "content": q}}})
		return body
	}, map[string]string{"anthropic-version": "2023-06-01", "x-api-key": "sk-bench"}},
}

// benchBodies are requests of api built from the upstream queries.
func benchBodies(b *testing.B, dir string, api benchAPI) [][]byte {
	f, err := os.Open(filepath.Join(dir, "upstream-queries", "queries.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(sc.Bytes(), &q) != nil || q.Query == "" {
			continue
		}
		out = append(out, api.body(q.Query))
	}
	if len(out) == 0 {
		b.Fatal("no queries")
	}
	return out
}

// BenchmarkAddedLatency measures what the proxy adds with routing on: the
// 407-skill library, the builtin embedder, hybrid strategy, default rewrite.
// Each iteration sends the same chat request once straight to the fake
// upstream and once through the proxy (order alternating), from 16
// concurrent clients, so both see the same machine load. It reports p50 and
// p99 of each side, their differences (added-p50-ms, added-p99-ms: what the
// issue asks for), and percentiles of the per-pair differences (pair-p50-ms,
// pair-p99-ms; both requests of a pair wait the same upstream time).
//
//	go test -run '^$' -bench AddedLatency -benchtime 4000x ./proxy/e2e
//
// routing=off forwards unmodified (a Rewriter that changes nothing): the
// proxy's own mechanics. routing=precomputed sends the same rewritten bodies
// with no routing work at all (see precomputed). routing=repeat keeps the
// router's cache of recent rankings, which every request then hits (the
// agent tool-round case); the others rank every request from scratch.
//
// The upstream=10-30ms variants are the measurement the latency target is
// checked against: the upstream answers after waiting 10-30 ms (no CPU;
// spread evenly, the same for both requests of a pair), as a model does
// (real ones take far longer, which only lowers the load), so the clients
// do not move in lockstep; that is the added latency a client of a real
// deployment sees. With an instant upstream, 16 closed-loop clients keep
// both cores busy with the clients, the fake upstream and the proxy all in
// this process, so any CPU spent anywhere becomes queueing for everyone:
// those rows measure throughput as much as latency.
func BenchmarkAddedLatency(b *testing.B) {
	dir := benchDir(b)
	bodies := benchBodies(b, dir, benchAPIs[0])
	ctx := context.Background()
	reg := skills.NewRegistry([]string{filepath.Join(dir, "skills")}, skills.Options{})
	emb := embed.NewBuiltin(embed.Config{})
	newRouter := func(rankCache int) *router.Router {
		r, err := router.New(ctx, reg.Snapshot(), router.Options{
			Embedder: emb, Fit: func(c []string) router.Embedder { return emb.Fit(c) },
			RankCache: rankCache,
		})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	// The 44 bodies repeat, so a router with its ranking cache would only
	// measure cache hits: "on" ranks every request from scratch; "repeat"
	// keeps the cache, as for an agent whose tool rounds resend the same
	// user turn.
	on := proxy.NewRewriter(newRouter(-1), router.RewriteOptions{})
	repeat := proxy.NewRewriter(newRouter(0), router.RewriteOptions{})
	pre := precomputed{}
	for _, body := range bodies {
		req, err := chat.Parse(body)
		if err != nil {
			b.Fatal(err)
		}
		rw, err := on.Rewrite(ctx, req.View(), router.Overrides{})
		if err != nil {
			b.Fatal(err)
		}
		pre[precomputedKey(req.View())] = &proxy.Rewrite{Plan: rw.Plan, Decision: rw.Decision, AddedTokens: rw.AddedTokens}
	}
	for _, mode := range []struct {
		name        string
		rw          proxy.Rewriter
		concurrency int
		upstream    time.Duration // delay of the upstream's answer
		jitter      time.Duration // ± around upstream, uniform
	}{
		{"routing=on/clients=16", on, 16, 0, 0},
		{"routing=off/clients=16", identity{}, 16, 0, 0},
		{"routing=precomputed/clients=16", pre, 16, 0, 0},
		{"routing=repeat/clients=16", repeat, 16, 0, 0},
		{"routing=on/clients=1", on, 1, 0, 0}, // no queueing: the intrinsic cost
		{"routing=off/clients=1", identity{}, 1, 0, 0},
		{"routing=precomputed/clients=1", pre, 1, 0, 0},
		{"routing=on/clients=16/upstream=10-30ms", on, 16, 20 * time.Millisecond, 10 * time.Millisecond},
		{"routing=off/clients=16/upstream=10-30ms", identity{}, 16, 20 * time.Millisecond, 10 * time.Millisecond},
		{"routing=precomputed/clients=16/upstream=10-30ms", pre, 16, 20 * time.Millisecond, 10 * time.Millisecond},
	} {
		b.Run(mode.name, func(b *testing.B) {
			benchAdded(b, benchAPIs[0], mode.rw, reg, bodies, mode.concurrency, mode.upstream-mode.jitter, mode.upstream+mode.jitter)
		})
	}
}

// BenchmarkAddedLatencyAPIs is BenchmarkAddedLatency's target measurement
// (routing on, 16 clients, upstream answering in 10-30 ms) for each client
// API side by side in one run, plus the instant-upstream row:
//
//	go test -run '^$' -bench AddedLatencyAPIs -benchtime 4000x ./proxy/e2e
func BenchmarkAddedLatencyAPIs(b *testing.B) {
	dir := benchDir(b)
	ctx := context.Background()
	reg := skills.NewRegistry([]string{filepath.Join(dir, "skills")}, skills.Options{})
	emb := embed.NewBuiltin(embed.Config{})
	r, err := router.New(ctx, reg.Snapshot(), router.Options{
		Embedder: emb, Fit: func(c []string) router.Embedder { return emb.Fit(c) }, RankCache: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	on := proxy.NewRewriter(r, router.RewriteOptions{})
	for _, upstream := range []struct {
		name          string
		delay, jitter time.Duration
	}{{"upstream=10-30ms", 20 * time.Millisecond, 10 * time.Millisecond}, {"upstream=instant", 0, 0}} {
		for _, api := range benchAPIs {
			bodies := benchBodies(b, dir, api)
			b.Run("api="+api.name+"/routing=on/clients=16/"+upstream.name, func(b *testing.B) {
				benchAdded(b, api, on, reg, bodies, 16, upstream.delay-upstream.jitter, upstream.delay+upstream.jitter)
			})
		}
	}
}

// precomputed answers each benchmark body with its rewrite made in advance:
// the same bytes go upstream as with routing on, at no routing cost. Its
// added latency is a floor for any router that adds these prompts: the proxy
// hop plus the upstream reading the larger request.
type precomputed map[string]*proxy.Rewrite

// precomputedKey identifies a request by its turns.
func precomputedKey(req *wire.Request) string {
	var b strings.Builder
	for _, t := range req.Turns {
		b.WriteString(t.Role + "\x00" + t.Text + "\x00")
	}
	return b.String()
}

func (precomputed) Ready() bool { return true }
func (p precomputed) Rewrite(ctx context.Context, req *wire.Request, ov router.Overrides) (*proxy.Rewrite, error) {
	rw, ok := p[precomputedKey(req)]
	if !ok {
		return nil, errors.New("request not precomputed")
	}
	out := *rw
	return &out, nil
}

// identity is a Rewriter that changes nothing.
type identity struct{}

func (identity) Ready() bool { return true }
func (identity) Rewrite(ctx context.Context, req *wire.Request, ov router.Overrides) (*proxy.Rewrite, error) {
	return &proxy.Rewrite{Decision: &router.Decision{}}, nil
}

func benchAdded(b *testing.B, api benchAPI, rw proxy.Rewriter, reg *skills.Registry, bodies [][]byte, concurrency int, delayLo, delayHi time.Duration) {
	up := fakeai.New()
	defer up.Close()
	// Each pair's two requests wait the same upstream time (a header the
	// proxy forwards), so the upstream's variation cancels in the pair's
	// difference.
	up.Handle("/v1"+api.path, fakeai.DelayFromHeader(fakeai.Reply(fakeai.Turn{Content: "ok"})))
	u, _ := url.Parse(up.BaseURL())
	srv, err := proxy.New(proxy.Config{Upstream: u, Rewriter: rw, Library: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	post := func(base string, body []byte, delay time.Duration) time.Duration {
		req, _ := http.NewRequest(http.MethodPost, base+api.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range api.header {
			req.Header.Set(k, v)
		}
		if delay > 0 {
			req.Header.Set(fakeai.DelayHeader, strconv.FormatInt(delay.Microseconds(), 10))
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Errorf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	// Warm up connections and caches.
	for i := 0; i < 32; i++ {
		post(up.BaseURL(), bodies[i%len(bodies)], 0)
		post(ps.URL+"/v1", bodies[i%len(bodies)], 0)
	}
	up.StopRecording()

	var mu sync.Mutex
	var direct, proxied, diffs []time.Duration
	var next int64
	var nextMu sync.Mutex
	worker := func(pb interface{ Next() bool }) {
		var d, p, df []time.Duration
		for pb.Next() {
			nextMu.Lock()
			i := next
			next++
			nextMu.Unlock()
			body := bodies[i%int64(len(bodies))]
			delay := delayLo
			if delayHi > delayLo { // spread evenly and deterministically over [lo, hi]
				delay += time.Duration(uint64(i)*0x9e3779b97f4a7c15>>40) * (delayHi - delayLo) / (1 << 24)
			}
			var dd, pp time.Duration
			if i%2 == 0 { // alternate the order so neither side always goes first
				dd = post(up.BaseURL(), body, delay)
				pp = post(ps.URL+"/v1", body, delay)
			} else {
				pp = post(ps.URL+"/v1", body, delay)
				dd = post(up.BaseURL(), body, delay)
			}
			d, p, df = append(d, dd), append(p, pp), append(df, pp-dd)
		}
		mu.Lock()
		direct = append(direct, d...)
		proxied = append(proxied, p...)
		diffs = append(diffs, df...)
		mu.Unlock()
	}
	b.ResetTimer()
	if concurrency == 1 {
		worker(&serial{n: b.N})
	} else {
		// RunParallel starts parallelism × GOMAXPROCS goroutines.
		b.SetParallelism((concurrency + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) { worker(pb) })
	}
	b.StopTimer()
	dp50, dp99 := percentiles(direct)
	pp50, pp99 := percentiles(proxied)
	fp50, fp99 := percentiles(diffs)
	b.ReportMetric(ms(dp50), "direct-p50-ms")
	b.ReportMetric(ms(dp99), "direct-p99-ms")
	b.ReportMetric(ms(pp50), "proxy-p50-ms")
	b.ReportMetric(ms(pp99), "proxy-p99-ms")
	b.ReportMetric(ms(pp50-dp50), "added-p50-ms")
	b.ReportMetric(ms(pp99-dp99), "added-p99-ms")
	b.ReportMetric(ms(fp50), "pair-p50-ms")
	b.ReportMetric(ms(fp99), "pair-p99-ms")
	b.Logf("%d pairs, %d skills, concurrency %d: direct p50 %.3f ms p99 %.3f ms; proxy p50 %.3f ms p99 %.3f ms; per-pair difference p50 %.3f ms p99 %.3f ms",
		len(direct), len(reg.Snapshot().Skills()), concurrency, ms(dp50), ms(dp99), ms(pp50), ms(pp99), ms(fp50), ms(fp99))
}

// serial hands out b.N iterations to one goroutine.
type serial struct{ n int }

func (s *serial) Next() bool { s.n--; return s.n >= 0 }

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
