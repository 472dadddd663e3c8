package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

const rankingFixture = "testdata/ranking"

func rankingLibrary(t testing.TB) *skills.Snapshot {
	t.Helper()
	snap := skills.Load(context.Background(), []string{rankingFixture}, skills.Options{})
	if n := len(snap.Skills()); n != 8 {
		t.Fatalf("fixture: %d skills, want 8: %v", n, snap.Problems())
	}
	return snap
}

func newRouter(t testing.TB, snap *skills.Snapshot, opts router.Options) *router.Router {
	t.Helper()
	r, err := router.New(context.Background(), snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func route(r *router.Router, s router.Strategy, msgs ...string) *router.Decision {
	var m []router.Message
	for i, text := range msgs {
		role := "user"
		if i%2 == 1 && len(msgs)%2 == 1 {
			role = "assistant"
		}
		m = append(m, router.Message{Role: role, Text: text})
	}
	return r.Route(context.Background(), router.Query{Messages: m, Strategy: s})
}

func TestRouteSelects(t *testing.T) {
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	tests := []struct {
		msg  string
		want string // first selected; "" = nothing selected
	}{
		{"my SQL query is really slow, should I add an index?", "sql-tuning"},
		{"write the release notes for v2.0 from the merged pull requests", "release-notes"},
		{"deploy this service to our kubernetes cluster with helm", "k8s-deploy"},
		{"extract the text from this PDF form", "pdf-forms"},
		{"hi, how are you?", ""},
		{"what's the capital of Australia?", ""},
		{"thanks!", ""},
	}
	for _, s := range []router.Strategy{router.StrategyBM25, router.StrategyEmbedding, router.StrategyHybrid} {
		for _, tt := range tests {
			d := route(r, s, tt.msg)
			if d.Fallback {
				t.Errorf("%s %q: fallback %s", s, tt.msg, d.FallbackReason)
			}
			got := ""
			if len(d.Selected) > 0 {
				got = d.Selected[0]
			}
			if got != tt.want {
				t.Errorf("%s %q: selected %v, want first %q (top %v)", s, tt.msg, d.Selected, tt.want, topScores(d, 3))
			}
			if len(d.Selected) > router.DefaultMaxAutoLoad {
				t.Errorf("%s %q: %d selected", s, tt.msg, len(d.Selected))
			}
			wantEmb := "builtin"
			if !router.UsesEmbedder(s) {
				wantEmb = "" // bm25 ranks without it
			}
			if len(d.Ranked) != 8 || d.Query != tt.msg || d.Strategy != s || d.Embedder != wantEmb {
				t.Errorf("%s %q: decision %+v", s, tt.msg, d)
			}
		}
	}
}

func TestRouteComponents(t *testing.T) {
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	want := map[router.Strategy][]string{
		router.StrategyKeyword:   {"keyword"},
		router.StrategyBM25:      {"bm25", "bm25_norm"},
		router.StrategyEmbedding: {"bm25", "bm25_norm", "cosine"},
		router.StrategyHybrid:    {"bm25", "bm25_norm", "confidence", "cosine"},
	}
	for s, keys := range want {
		d := route(r, s, "slow sql query")
		for _, sc := range d.Ranked {
			got := sc.Components.Names()
			if !reflect.DeepEqual(got, keys) {
				t.Fatalf("%s: components %v, want %v", s, got, keys)
			}
		}
		for i := 1; i < len(d.Ranked); i++ {
			if d.Ranked[i].Score > d.Ranked[i-1].Score {
				t.Fatalf("%s: ranked out of order at %d", s, i)
			}
		}
	}
}

func TestKeywordStrategy(t *testing.T) {
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	d := route(r, router.StrategyKeyword, "I need the sql-tuning thing")
	if len(d.Selected) == 0 || d.Selected[0] != "sql-tuning" {
		t.Errorf("name match: selected %v", d.Selected)
	}
	d = route(r, router.StrategyKeyword, "hello")
	if len(d.Selected) != 0 {
		t.Errorf("no keyword: selected %v", d.Selected)
	}
}

func TestMentions(t *testing.T) {
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	tests := []struct {
		msg    string
		pinned []string
	}{
		{"/sql-tuning please", []string{"sql-tuning"}},
		{"use #release-notes and /k8s-deploy.", []string{"release-notes", "k8s-deploy"}},
		{"#team/code-review this diff", []string{"team/code-review"}},
		{"(/other/code-review) and #TEAM/CODE-REVIEW", []string{"other/code-review", "team/code-review"}},
		{"/code-review this", nil}, // ambiguous last element
		{"see https://example.com/sql-tuning", nil},
		{"run /usr/bin/env python", nil},
		{"issue #42 and path a/sql-tuning", nil},
		{"/fax-sender the contract", []string{"fax-sender"}}, // pinned even though disabled
		{"/sql-tuning /sql-tuning", []string{"sql-tuning"}},
	}
	for _, tt := range tests {
		d := route(r, router.StrategyHybrid, tt.msg)
		if !reflect.DeepEqual(d.Pinned, tt.pinned) {
			t.Errorf("%q: pinned %v, want %v", tt.msg, d.Pinned, tt.pinned)
		}
		if len(tt.pinned) > 0 && !reflect.DeepEqual(d.Selected[:len(tt.pinned)], tt.pinned) {
			t.Errorf("%q: selected %v, want the pinned first", tt.msg, d.Selected)
		}
	}
	// Pins survive TopK < 0 (no auto-loading).
	d := r.Route(context.Background(), router.Query{Messages: []router.Message{{Role: "user", Text: "/pdf-forms my slow sql query"}}, TopK: -1})
	if !reflect.DeepEqual(d.Selected, []string{"pdf-forms"}) {
		t.Errorf("TopK -1: selected %v, want only the pin", d.Selected)
	}
}

func TestFrontmatterOptOut(t *testing.T) {
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	for msg, id := range map[string]string{
		"fax this document to the legacy gateway":                   "fax-sender",
		"generate invoices as PDF from billing data for a customer": "invoice-builder",
	} {
		d := route(r, router.StrategyHybrid, msg)
		if d.Ranked[0].ID != id {
			t.Fatalf("%q: ranked first %s, want %s", msg, d.Ranked[0].ID, id)
		}
		if slices.Contains(d.Selected, id) {
			t.Errorf("%q: %s auto-loaded despite its frontmatter", msg, id)
		}
		if !strings.Contains(d.Reasons[id], "frontmatter") {
			t.Errorf("%q: reason for %s = %q", msg, id, d.Reasons[id])
		}
	}
}

func TestMaxAutoLoad(t *testing.T) {
	opts := builtinOptions()
	opts.MaxAutoLoad = 1
	opts.RelativeScore = -1
	r := newRouter(t, rankingLibrary(t), opts)
	d := route(r, router.StrategyBM25, "review the pull request and write release notes for it")
	if len(d.Selected) != 1 {
		t.Fatalf("selected %v, want exactly one", d.Selected)
	}
	found := false
	for _, why := range d.Reasons {
		found = found || strings.Contains(why, "max_auto_load 1")
	}
	if !found {
		t.Errorf("no max_auto_load reason in %v", d.Reasons)
	}
	// MinScore overrides the calibrated threshold.
	opts.MinScore = map[router.Strategy]float64{router.StrategyBM25: 1e9}
	r = newRouter(t, rankingLibrary(t), opts)
	if d := route(r, router.StrategyBM25, "slow sql query"); len(d.Selected) != 0 {
		t.Errorf("unreachable threshold: selected %v", d.Selected)
	}
}

func TestHistory(t *testing.T) {
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	// A vague follow-up keeps the earlier topic...
	d := route(r, router.StrategyHybrid, "my SQL query takes 30 seconds", "Let me look at it.", "what should I check first?")
	if d.Ranked[0].ID != "sql-tuning" {
		t.Errorf("follow-up: ranked %v", topScores(d, 2))
	}
	if d.Query != "what should I check first?" {
		t.Errorf("Query = %q, want the latest user message", d.Query)
	}
	// ...but a new topic wins over it.
	d = route(r, router.StrategyHybrid, "my SQL query takes 30 seconds", "Fixed with an index.", "now deploy it to kubernetes with helm")
	if d.Ranked[0].ID != "k8s-deploy" {
		t.Errorf("topic change: ranked %v", topScores(d, 2))
	}
	// With history off, the follow-up alone matches nothing.
	opts := builtinOptions()
	opts.HistoryTurns = -1
	r2 := newRouter(t, rankingLibrary(t), opts)
	d = route(r2, router.StrategyHybrid, "my SQL query takes 30 seconds", "Let me look at it.", "what should I check first?")
	if len(d.Selected) != 0 {
		t.Errorf("history off: selected %v", d.Selected)
	}
}

func TestLongMessageIsCapped(t *testing.T) {
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	msg := "my SQL query is slow. " + strings.Repeat("log line noise ", 2000) + " what index should I add?"
	d := route(r, router.StrategyHybrid, msg)
	if len(d.Query) > router.DefaultMaxQueryChars+10 {
		t.Errorf("query of %d bytes, want it capped", len(d.Query))
	}
	if !strings.HasPrefix(d.Query, "my SQL query is slow.") || !strings.HasSuffix(d.Query, "what index should I add?") {
		t.Errorf("cap lost the start or the end: %.40q…%.40q", d.Query, d.Query[len(d.Query)-40:])
	}
	if d.Ranked[0].ID != "sql-tuning" {
		t.Errorf("ranked %v", topScores(d, 2))
	}
}

// stubEmbedder wraps the builtin and can fail or stall on queries.
type stubEmbedder struct {
	*embed.Builtin
	name    string
	failDoc atomic.Pointer[error]
	failQ   atomic.Pointer[error]
	delay   time.Duration
	docs    atomic.Int64
	queries atomic.Int64 // Embed calls
}

func (s *stubEmbedder) Name() string { return s.name }

// Offline: a stand-in for a remote provider gets a latency budget.
func (s *stubEmbedder) Offline() bool { return false }

func (s *stubEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	s.queries.Add(1)
	if p := s.failQ.Load(); p != nil {
		return nil, *p
	}
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Builtin.Embed(ctx, texts)
}

func (s *stubEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	s.docs.Add(int64(len(texts)))
	if p := s.failDoc.Load(); p != nil {
		return nil, *p
	}
	return s.Builtin.Embed(ctx, texts)
}

func fittedBuiltin(t testing.TB, snap *skills.Snapshot) *embed.Builtin {
	var corpus []string
	for _, s := range snap.Skills() {
		corpus = append(corpus, s.Name+"\n"+s.Description+"\n"+s.Body())
	}
	return embed.NewBuiltin(embed.Config{}).Fit(corpus)
}

func TestFallback(t *testing.T) {
	snap := rankingLibrary(t)
	down := fmt.Errorf("ollama: %w: connection refused", embed.ErrUnavailable)

	t.Run("query embedding fails", func(t *testing.T) {
		e := &stubEmbedder{Builtin: fittedBuiltin(t, snap), name: "ollama"}
		r := newRouter(t, snap, router.Options{Embedder: e})
		e.failQ.Store(&down)
		d := route(r, router.StrategyHybrid, "my SQL query is slow")
		if !d.Fallback || d.Strategy != router.StrategyBM25 || !strings.Contains(d.FallbackReason, "unavailable") {
			t.Fatalf("decision %+v", d)
		}
		if len(d.Selected) == 0 || d.Selected[0] != "sql-tuning" {
			t.Errorf("fallback ranking selected %v", d.Selected)
		}
		e.failQ.Store(nil)
		if d := route(r, router.StrategyHybrid, "my SQL query is slow"); d.Fallback {
			t.Errorf("recovered embedder still falls back: %s", d.FallbackReason)
		}
	})
	t.Run("query embedding rate limited: not asked until its Retry-After", func(t *testing.T) {
		e := &stubEmbedder{Builtin: fittedBuiltin(t, snap), name: "openai"}
		r := newRouter(t, snap, router.Options{Embedder: e})
		var limited error = waitError{fmt.Errorf("openai: %w: HTTP 429", embed.ErrUnavailable), time.Hour}
		e.failQ.Store(&limited)
		if d := route(r, router.StrategyHybrid, "my SQL query is slow"); !d.Fallback {
			t.Fatalf("decision %+v", d)
		}
		e.failQ.Store(nil)
		d := route(r, router.StrategyHybrid, "the SQL query got slow again")
		if !d.Fallback || !strings.Contains(d.FallbackReason, "not asked") {
			t.Fatalf("asked again before its Retry-After: %+v", d)
		}
	})
	t.Run("query embedding too slow", func(t *testing.T) {
		e := &stubEmbedder{Builtin: fittedBuiltin(t, snap), name: "ollama"}
		r := newRouter(t, snap, router.Options{Embedder: e, EmbedTimeout: 20 * time.Millisecond})
		e.delay = 5 * time.Second
		start := time.Now()
		d := route(r, router.StrategyEmbedding, "my SQL query is slow")
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Route took %v, want about the 20ms budget", took)
		}
		if !d.Fallback || !strings.Contains(d.FallbackReason, "latency budget") {
			t.Fatalf("decision %+v", d)
		}
	})
	t.Run("no embedder", func(t *testing.T) {
		r := newRouter(t, snap, router.Options{})
		d := route(r, router.StrategyHybrid, "my SQL query is slow")
		if !d.Fallback || d.FallbackReason != "no embedder configured" || d.Embedder != "" {
			t.Fatalf("decision %+v", d)
		}
		if d := route(r, router.StrategyBM25, "my SQL query is slow"); d.Fallback {
			t.Error("bm25 needs no embedder")
		}
	})
	t.Run("library embedding fails, then recovers", func(t *testing.T) {
		defer router.SetVectorRetryEvery(10 * time.Millisecond)()
		e := &stubEmbedder{Builtin: fittedBuiltin(t, snap), name: "ollama"}
		e.failDoc.Store(&down)
		r := newRouter(t, snap, router.Options{Embedder: e})
		d := route(r, router.StrategyHybrid, "my SQL query is slow")
		if !d.Fallback || !strings.Contains(d.FallbackReason, "vector index unavailable") {
			t.Fatalf("decision %+v", d)
		}
		e.failDoc.Store(nil)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			if d := route(r, router.StrategyHybrid, "my SQL query is slow"); !d.Fallback {
				return
			}
		}
		t.Error("vector index never rebuilt in the background")
	})
	t.Run("library embedding rate limited: left alone until its Retry-After", func(t *testing.T) {
		defer router.SetVectorRetryEvery(10 * time.Millisecond)()
		e := &stubEmbedder{Builtin: fittedBuiltin(t, snap), name: "openai"}
		var limited error = waitError{fmt.Errorf("openai: %w: HTTP 429", embed.ErrUnavailable), time.Hour}
		e.failDoc.Store(&limited)
		r := newRouter(t, snap, router.Options{Embedder: e})
		e.failDoc.Store(nil)
		for range 10 {
			time.Sleep(20 * time.Millisecond)
			if d := route(r, router.StrategyHybrid, "my SQL query is slow"); !d.Fallback {
				t.Fatal("vectors rebuilt before the embedder's Retry-After passed")
			}
		}
	})
}

// A background retry refused with a longer Retry-After than the first
// build's is waited for too, although its failed index is not installed.
func TestVectorRetryKeepsTheLatestRetryAfter(t *testing.T) {
	defer router.SetVectorRetryEvery(10 * time.Millisecond)()
	snap := rankingLibrary(t)
	e := &stubEmbedder{Builtin: fittedBuiltin(t, snap), name: "openai"}
	var short error = waitError{fmt.Errorf("openai: %w: HTTP 429", embed.ErrUnavailable), 30 * time.Millisecond}
	var long error = waitError{fmt.Errorf("openai: %w: HTTP 429", embed.ErrUnavailable), time.Hour}
	e.failDoc.Store(&short)
	r := newRouter(t, snap, router.Options{Embedder: e})
	first := e.docs.Load()
	e.failDoc.Store(&long)
	deadline := time.Now().Add(10 * time.Second)
	for e.docs.Load() < 2*first && time.Now().Before(deadline) {
		route(r, router.StrategyHybrid, "my SQL query is slow") // requests start retries too
		time.Sleep(5 * time.Millisecond)
	}
	if e.docs.Load() < 2*first {
		t.Fatal("no background retry")
	}
	e.failDoc.Store(nil)
	for range 20 {
		time.Sleep(10 * time.Millisecond)
		if d := route(r, router.StrategyHybrid, "my SQL query is slow"); !d.Fallback {
			t.Fatal("retried before the failed retry's Retry-After passed")
		}
	}
}

// waitError is an embedder error that asks for a wait, as package embed's
// errors for a 429 with Retry-After do.
type waitError struct {
	error
	after time.Duration
}

func (e waitError) Unwrap() error             { return e.error }
func (e waitError) RetryAfter() time.Duration { return e.after }

// Every fallback carries a short code, fit for clients and metric labels: it
// names no URL or error text. FallbackReason keeps the details.
func TestFallbackCode(t *testing.T) {
	snap := rankingLibrary(t)
	refused := fmt.Errorf(`ollama: %w: Post "http://127.0.0.1:9/api/embed": dial tcp 127.0.0.1:9: connect: connection refused`, embed.ErrUnavailable)
	stub := func(t *testing.T) *stubEmbedder {
		return &stubEmbedder{Builtin: fittedBuiltin(t, snap), name: "ollama"}
	}
	tests := []struct {
		name     string
		router   func(t *testing.T) *router.Router
		strategy router.Strategy
		code     router.FallbackCode
		reason   string // in FallbackReason
	}{
		{"no index", func(*testing.T) *router.Router { return &router.Router{} },
			router.StrategyHybrid, router.FallbackNoIndex, "router has no index"},
		{"no embedder", func(t *testing.T) *router.Router { return newRouter(t, snap, router.Options{}) },
			router.StrategyHybrid, router.FallbackNoEmbedder, "no embedder configured"},
		{"embedder down", func(t *testing.T) *router.Router {
			e := stub(t)
			e.failQ.Store(&refused)
			return newRouter(t, snap, router.Options{Embedder: e})
		}, router.StrategyEmbedding, router.FallbackEmbedderUnavailable, `Post "http://127.0.0.1:9/api/embed"`},
		{"embedder slow", func(t *testing.T) *router.Router {
			e := stub(t)
			r := newRouter(t, snap, router.Options{Embedder: e, EmbedTimeout: 20 * time.Millisecond})
			e.delay = 5 * time.Second // the library's vectors are built
			return r
		}, router.StrategyHybrid, router.FallbackEmbedderTimeout, "ollama exceeded its 20ms latency budget"},
		{"library vectors failed", func(t *testing.T) *router.Router {
			e := stub(t)
			e.failDoc.Store(&refused)
			return newRouter(t, snap, router.Options{Embedder: e})
		}, router.StrategyHybrid, router.FallbackVectorsUnavailable, "vector index unavailable: ollama: embedder unavailable: Post"},
		{"no fallback", func(t *testing.T) *router.Router { return newRouter(t, snap, router.Options{}) },
			router.StrategyBM25, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := route(tc.router(t), tc.strategy, "my SQL query is slow")
			if d.Fallback != (tc.code != "") || d.FallbackCode != tc.code {
				t.Fatalf("fallback %v code %q, want code %q (reason %q)", d.Fallback, d.FallbackCode, tc.code, d.FallbackReason)
			}
			if !strings.Contains(d.FallbackReason, tc.reason) {
				t.Errorf("reason %q lacks %q", d.FallbackReason, tc.reason)
			}
			if tc.code != "" && !slices.Contains(router.FallbackCodes, d.FallbackCode) {
				t.Errorf("code %q not in FallbackCodes", d.FallbackCode)
			}
			b, _ := json.Marshal(d)
			if got, want := strings.Contains(string(b), `"fallback_code":"`+string(tc.code)+`"`), tc.code != ""; got != want {
				t.Errorf("decision JSON has fallback_code: %v, want %v: %s", got, want, b)
			}
		})
	}
}

// An embedder failing request after request is left alone for a while:
// each request would otherwise wait for it (up to the latency budget)
// before BM25 ranks it.
func TestEmbedderBreaker(t *testing.T) {
	snap := rankingLibrary(t)
	e := &stubEmbedder{Builtin: fittedBuiltin(t, snap), name: "ollama"}
	r := newRouter(t, snap, router.Options{Embedder: e})
	refused := fmt.Errorf("ollama: %w: connection refused", embed.ErrUnavailable)
	e.failQ.Store(&refused)
	before := e.queries.Load() // building the index may ask too
	if why := r.Degraded(); why != "" {
		t.Errorf("a healthy router is degraded: %q", why)
	}
	now := time.Unix(1_000_000, 0)
	router.SetBreakerClock(r, func() time.Time { return now })
	for i := range 3 {
		now = now.Add(time.Second) // failures spread over time: an outage
		if d := route(r, router.StrategyHybrid, fmt.Sprintf("my SQL query %d is slow", i)); !strings.Contains(d.FallbackReason, "connection refused") {
			t.Fatalf("failure %d: %+v", i, d)
		}
	}
	d := route(r, router.StrategyHybrid, "my SQL query 4 is slow")
	if d.FallbackCode != router.FallbackEmbedderUnavailable || !strings.Contains(d.FallbackReason, "not asked after 3 failures") ||
		!strings.Contains(d.FallbackReason, "connection refused") {
		t.Errorf("after 3 failures: %q %q", d.FallbackCode, d.FallbackReason)
	}
	if n := e.queries.Load() - before; n != 3 {
		t.Errorf("the embedder was asked %d times, want 3", n)
	}
	if why := r.Degraded(); !strings.Contains(why, "skipped after 3 failures in a row") {
		t.Errorf("Degraded() = %q", why)
	}
}

func TestSearch(t *testing.T) {
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	got := r.Search(context.Background(), "kubernetes helm deploy", 3)
	if len(got) != 3 || got[0].ID != "k8s-deploy" {
		t.Errorf("Search = %v", got)
	}
	if all := r.Search(context.Background(), "x", 0); len(all) != 8 {
		t.Errorf("limit 0 returned %d, want all 8", len(all))
	}
}

func TestDeterministic(t *testing.T) {
	snap := rankingLibrary(t)
	a := newRouter(t, snap, builtinOptions())
	b := newRouter(t, skills.Load(context.Background(), []string{rankingFixture}, skills.Options{}), builtinOptions())
	for _, msg := range []string{"slow sql", "review my PR", "hello", "/k8s-deploy now", "pdf"} {
		for _, s := range router.Strategies {
			da, _ := json.Marshal(route(a, s, msg))
			db, _ := json.Marshal(route(b, s, msg))
			if string(da) != string(db) {
				t.Errorf("%s %q: decisions differ:\n%s\n%s", s, msg, da, db)
			}
		}
	}
}

func TestUpdateSwapsAtomically(t *testing.T) {
	ctx := context.Background()
	full := rankingLibrary(t)
	dir := t.TempDir()
	for _, id := range []string{"sql-tuning", "pdf-forms"} {
		b, _ := os.ReadFile(filepath.Join(rankingFixture, id, "SKILL.md"))
		os.MkdirAll(filepath.Join(dir, id), 0o755)
		os.WriteFile(filepath.Join(dir, id, "SKILL.md"), b, 0o644)
	}
	small := skills.Load(ctx, []string{dir}, skills.Options{})
	r := newRouter(t, full, builtinOptions())
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var bad atomic.Value
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				d := route(r, router.StrategyHybrid, "slow sql query")
				if n := len(d.Ranked); n != 8 && n != 2 {
					bad.Store(fmt.Sprintf("half-built index: %d ranked", n))
				}
				if d.Fallback {
					bad.Store("fallback during update: " + d.FallbackReason)
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		snap := small
		if i%2 == 1 {
			snap = full
		}
		if err := r.Update(ctx, snap); err != nil {
			t.Fatal(err)
		}
		if r.Snapshot() != snap {
			t.Fatal("Snapshot() is not the updated snapshot")
		}
	}
	close(stop)
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Error(v)
	}
	if !r.Ready() {
		t.Error("not ready")
	}
}

func TestIndexDirReusesVectors(t *testing.T) {
	snap := rankingLibrary(t)
	dir := t.TempDir()
	b := fittedBuiltin(t, snap)
	e1 := &stubEmbedder{Builtin: b, name: "ollama"}
	first := newRouter(t, snap, router.Options{Embedder: e1, IndexDir: dir})
	if e1.docs.Load() == 0 {
		t.Fatal("nothing embedded on the first build")
	}
	first.Close() // the file is written in the background; Close waits for it
	if _, err := os.Stat(filepath.Join(dir, "vectors-ollama.gob.gz")); err != nil {
		t.Fatalf("index not persisted: %v", err)
	}
	// A restart: a new router over the same directory embeds nothing.
	e2 := &stubEmbedder{Builtin: b, name: "ollama"}
	r := newRouter(t, snap, router.Options{Embedder: e2, IndexDir: dir})
	if n := e2.docs.Load(); n != 0 {
		t.Errorf("restart embedded %d texts, want 0", n)
	}
	if d := route(r, router.StrategyEmbedding, "slow sql query"); d.Fallback || d.Ranked[0].ID != "sql-tuning" {
		t.Errorf("decision from the persisted index: %v %s", topScores(d, 2), d.FallbackReason)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := router.New(context.Background(), rankingLibrary(t), router.Options{Strategy: "magic"}); err == nil {
		t.Error("unknown strategy accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := router.New(ctx, rankingLibrary(t), builtinOptions()); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled build: err = %v", err)
	}
}

func TestDecisionJSON(t *testing.T) {
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	b, err := json.Marshal(route(r, router.StrategyHybrid, "slow sql query"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"query", "strategy", "embedder", "fallback", "ranked", "selected"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	first := m["ranked"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "score", "components"} {
		if _, ok := first[k]; !ok {
			t.Errorf("ranked entry lacks %q", k)
		}
	}
}

func TestTinyLibraries(t *testing.T) {
	ctx := context.Background()
	empty := skills.Load(ctx, []string{t.TempDir()}, skills.Options{})
	one := t.TempDir()
	os.MkdirAll(filepath.Join(one, "only"), 0o755)
	os.WriteFile(filepath.Join(one, "only", "SKILL.md"), []byte("---\nname: only\ndescription: Tune slow SQL queries.\n---\nbody\n"), 0o644)
	for name, snap := range map[string]*skills.Snapshot{"empty": empty, "one": skills.Load(ctx, []string{one}, skills.Options{})} {
		r := newRouter(t, snap, builtinOptions())
		for _, s := range router.Strategies {
			d := route(r, s, "my sql query is slow")
			if d.Fallback || len(d.Ranked) != len(snap.Skills()) {
				t.Errorf("%s %s: %+v", name, s, d)
			}
		}
		if got := r.Search(ctx, "sql", 5); len(got) != len(snap.Skills()) {
			t.Errorf("%s: Search = %v", name, got)
		}
	}
	// No messages at all.
	r := newRouter(t, rankingLibrary(t), builtinOptions())
	if d := r.Route(ctx, router.Query{}); len(d.Selected) != 0 || d.Fallback {
		t.Errorf("empty query: %+v", d)
	}
}

// TestMentionsListed: Mentions reads #mentions as the router does (the
// lead, the id's characters, trailing punctuation, case), whether or not
// they name a skill, each once; /paths are left out.
func TestMentionsListed(t *testing.T) {
	got := router.Mentions("use #PDF-Tools, #nosuch. and #pdf-tools again; see https://x/#frag and /usr/bin (#café)")
	var raws, keys []string
	for _, m := range got {
		raws, keys = append(raws, m.Raw), append(keys, m.Key)
	}
	if want := []string{"PDF-Tools", "nosuch", "café"}; !slices.Equal(raws, want) {
		t.Errorf("raw %q, want %q", raws, want)
	}
	if want := []string{"pdf-tools", "nosuch", "café"}; !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
}
