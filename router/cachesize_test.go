package router_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/router"
)

// TestCachedVectorsOfAnOldSizeAreReplaced: the model behind one name
// changes its size while no skill changes, so the start-up build finds
// every vector in the embedding cache, at the old size, before the
// embedder knows its new one. The first query teaches it; the background
// retry then rebuilds, the cache treats the old size as misses, and the
// vector index serves again.
func TestCachedVectorsOfAnOldSizeAreReplaced(t *testing.T) {
	defer router.SetVectorRetryEvery(50 * time.Millisecond)()
	lib := copyLibrary(t)
	base := fittedBuiltin(t, load(t, lib))
	cache := t.TempDir()
	for _, tt := range []struct {
		name string
		dim  int
	}{{"first start", 64}, {"the model's size changed", 96}} {
		t.Run(tt.name, func(t *testing.T) {
			e := &dimFake{b: base, dim: tt.dim}
			r, err := router.New(context.Background(), load(t, lib), router.Options{Embedder: embed.NewCache(e, cache, 0)})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			deadline := time.Now().Add(5 * time.Second)
			for {
				d := route(r, router.StrategyEmbedding, "slow sql query")
				if !d.Fallback {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("still falling back after 5 s: %s (%s)", d.FallbackCode, d.FallbackReason)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestVectorsRetriedWhileIdle: a vector index that failed to build is
// retried in the background on an idle router too: no request ranks, and
// once the embedder is back ranking is no longer degraded.
func TestVectorsRetriedWhileIdle(t *testing.T) {
	defer router.SetVectorRetryEvery(50 * time.Millisecond)()
	lib := copyLibrary(t)
	snap := load(t, lib)
	e := &stubEmbedder{Builtin: fittedBuiltin(t, snap), name: "remote-stub"}
	down := error(embed.ErrUnavailable)
	e.failDoc.Store(&down)
	var logs syncbuf.Buffer
	r, err := router.New(context.Background(), snap, router.Options{Embedder: e, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Degraded() == "" {
		t.Fatal("the vectors built without the embedder")
	}
	if l := logs.String(); !strings.Contains(l, `msg="routing index built"`) || !strings.Contains(l, `vectors="unavailable`) {
		t.Errorf("the build's line does not say it has no vectors:\n%s", l)
	}
	e.failDoc.Store(nil)
	for deadline := time.Now().Add(5 * time.Second); r.Degraded() != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still degraded 5 s after the embedder came back, with no request: %s", r.Degraded())
		}
	}
}
