package router_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
)

// countingEmbedder counts query embeddings (Embed calls).
type countingEmbedder struct {
	*embed.Builtin
	calls atomic.Int64
	fail  atomic.Pointer[error]
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls.Add(1)
	if p := c.fail.Load(); p != nil {
		return nil, *p
	}
	return c.Builtin.Embed(ctx, texts)
}

// EmbedTerms counts and fails as Embed does (the builtin's hand-over of
// BM25's terms is how the router embeds a query).
func (c *countingEmbedder) EmbedTerms(ctx context.Context, texts []string, terms func(int, []string)) ([][]float32, error) {
	c.calls.Add(1)
	if p := c.fail.Load(); p != nil {
		return nil, *p
	}
	return c.Builtin.EmbedTerms(ctx, texts, terms)
}

func (c *countingEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return c.Builtin.Embed(ctx, texts)
}

func routeMsgs(r *router.Router, msgs ...string) *router.Decision {
	var q router.Query
	for _, m := range msgs {
		q.Messages = append(q.Messages, router.Message{Role: "user", Text: m})
	}
	return r.Route(context.Background(), q)
}

func sameDecision(t *testing.T, a, b *router.Decision) {
	t.Helper()
	x, y := *a, *b
	x.Latency, y.Latency, x.Cached, y.Cached = 0, 0, false, false
	if !reflect.DeepEqual(x, y) {
		t.Errorf("cached decision differs:\n%+v\n%+v", x, y)
	}
}

func TestRankCache(t *testing.T) {
	snap := rankingLibrary(t)
	e := &countingEmbedder{Builtin: fittedBuiltin(t, snap)}
	r := newRouter(t, snap, router.Options{Embedder: e})
	calls := func() int64 { return e.calls.Load() }

	first := routeMsgs(r, "my SQL query is slow")
	if first.Cached {
		t.Fatal("first ranking reported cached")
	}
	n := calls()
	again := routeMsgs(r, "my SQL query is slow")
	if !again.Cached || calls() != n {
		t.Fatalf("repeat: cached %v, %d more query embeddings", again.Cached, calls()-n)
	}
	sameDecision(t, first, again)

	// An agent's tool rounds resend the conversation: the same user turns
	// hit the cache; a new user turn, another strategy or a mention do not
	// reuse a ranking made for something else.
	for _, tc := range []struct {
		name   string
		d      *router.Decision
		cached bool
	}{
		{"earlier turn added", routeMsgs(r, "deploy to kubernetes", "my SQL query is slow"), false},
		{"same two turns", routeMsgs(r, "deploy to kubernetes", "my SQL query is slow"), true},
		{"other strategy", r.Route(context.Background(), router.Query{Messages: []router.Message{{Role: "user", Text: "my SQL query is slow"}}, Strategy: router.StrategyEmbedding}), false},
		{"mention", routeMsgs(r, "#k8s-deploy my SQL query is slow"), false},
	} {
		if tc.d.Cached != tc.cached {
			t.Errorf("%s: cached %v, want %v", tc.name, tc.d.Cached, tc.cached)
		}
	}
	// The mention still forces its skill on a cache hit.
	if d := routeMsgs(r, "#k8s-deploy my SQL query is slow"); !d.Cached || len(d.Selected) == 0 || d.Selected[0] != "k8s-deploy" {
		t.Errorf("mention on a cache hit: cached %v selected %v", d.Cached, d.Selected)
	}

	// A reload starts with an empty cache.
	if err := r.Update(context.Background(), rankingLibrary(t)); err != nil {
		t.Fatal(err)
	}
	if d := routeMsgs(r, "my SQL query is slow"); d.Cached {
		t.Error("ranking cached across a library reload")
	}
}

func TestRankCacheSkipsFallback(t *testing.T) {
	snap := rankingLibrary(t)
	e := &countingEmbedder{Builtin: fittedBuiltin(t, snap)}
	r := newRouter(t, snap, router.Options{Embedder: e})
	down := fmt.Errorf("%w: connection refused", embed.ErrUnavailable)
	e.fail.Store(&down)
	if d := routeMsgs(r, "my SQL query is slow"); !d.Fallback {
		t.Fatalf("no fallback: %+v", d)
	}
	e.fail.Store(nil)
	d := routeMsgs(r, "my SQL query is slow")
	if d.Fallback || d.Cached {
		t.Errorf("after the embedder recovered: fallback %v cached %v (a fallback ranking was kept)", d.Fallback, d.Cached)
	}
}

func TestRankCacheOff(t *testing.T) {
	snap := rankingLibrary(t)
	opts := builtinOptions()
	opts.RankCache = -1
	r := newRouter(t, snap, opts)
	for range 3 {
		if d := routeMsgs(r, "my SQL query is slow"); d.Cached {
			t.Fatal("cached with RankCache < 0")
		}
	}
}

// Concurrent routings share cached rankings safely (run with -race) and
// every one of them gets its own Ranked slice.
func TestRankCacheConcurrent(t *testing.T) {
	snap := rankingLibrary(t)
	r := newRouter(t, snap, builtinOptions())
	msgs := []string{"my SQL query is slow", "deploy to kubernetes", "fill in this PDF form", "write release notes"}
	want := make([]*router.Decision, len(msgs))
	for i, m := range msgs {
		want[i] = routeMsgs(r, m)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 50 {
				i := (g + k) % len(msgs)
				d := routeMsgs(r, msgs[i])
				if !d.Cached || len(d.Ranked) != len(want[i].Ranked) || d.Ranked[0].ID != want[i].Ranked[0].ID {
					t.Errorf("%q: cached %v, ranked %d", msgs[i], d.Cached, len(d.Ranked))
					return
				}
				d.Ranked[0].ID = "scribbled" // must not reach other decisions
			}
		}()
	}
	wg.Wait()
	if d := routeMsgs(r, msgs[0]); d.Ranked[0].ID == "scribbled" {
		t.Error("a caller's change to Ranked leaked into the cache")
	}
}
