package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
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
