package router_test

import (
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
)

// TestKeptVectorsOfAnotherSize: vectors kept for a remote embedder whose
// size was configured (OpenAI's `dimensions`) are reused at any size on the
// next start, before the model has answered and told its size; when it
// answers with another size, and no skill changed (so nothing was embedded
// to find out), queries cannot be compared with the kept vectors. Those
// requests fall back to bm25, and a rebuild at the model's own size must
// follow, after which hybrid ranking is back.
func TestKeptVectorsOfAnotherSize(t *testing.T) {
	snap := rankingLibrary(t)
	corpus := func(dims int) *embed.Builtin {
		var c []string
		for _, s := range snap.Skills() {
			c = append(c, s.Name+"\n"+s.Description+"\n"+s.Body())
		}
		return embed.NewBuiltin(embed.Config{Dimensions: dims}).Fit(c)
	}
	warm := t.TempDir()
	small := &remoteFake{b: corpus(64), model: "m"}
	small.answered.Store(true) // configured size: known from the start
	r1 := newRouter(t, snap, router.Options{Embedder: small, WarmDir: warm})
	r1.Close() // waits for the warm index to be written

	full := &remoteFake{b: corpus(1024), model: "m"} // the model's own size, learned on first answer
	r2 := newRouter(t, snap, router.Options{Embedder: full, WarmDir: warm})
	if n := full.docs.Load(); n != 0 {
		t.Fatalf("test premise: the start embedded documents (%d calls) instead of reusing the kept vectors", n)
	}
	deadline := time.Now().Add(30 * time.Second) // a liveness guard, not a timing assertion
	for {
		d := route(r2, router.StrategyHybrid, "slow sql query")
		if !d.Fallback {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hybrid ranking never recovered from vectors of another size: %s", d.FallbackReason)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if full.docs.Load() == 0 {
		t.Error("recovered without embedding the documents at the model's size")
	}
	for _, q := range []string{"slow sql query", "write a regex for dates"} {
		if d := route(r2, router.StrategyHybrid, q); d.Fallback {
			t.Errorf("%q: fell back to bm25 after the rebuild: %s", q, d.FallbackReason)
		}
	}

	// The rebuild is what the next start finds: vectors at the model's
	// size, nothing to embed, no fallback.
	r2.Close() // waits for the warm index to be written
	again := &remoteFake{b: full.b, model: "m"}
	r3 := newRouter(t, snap, router.Options{Embedder: again, WarmDir: warm})
	if d := route(r3, router.StrategyHybrid, "slow sql query"); d.Fallback {
		t.Errorf("after a restart: fell back to bm25: %s", d.FallbackReason)
	}
	if n := again.docs.Load(); n != 0 {
		t.Errorf("after a restart: embedded documents again (%d calls)", n)
	}
}
