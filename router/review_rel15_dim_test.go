package router_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/router"
)

// dimFake is a remote embedder (it learns its size from its first answer,
// as embed's Ollama and OpenAI clients do when embedder.dimensions is not
// set) whose model answers with dim components.
type dimFake struct {
	b        *embed.Builtin
	dim      int
	answered atomic.Bool
}

func (f *dimFake) Name() string  { return "ollama" }
func (f *dimFake) Model() string { return "nomic-embed-text" }
func (f *dimFake) Dimensions() int {
	if f.answered.Load() {
		return f.dim
	}
	return 0
}

func (f *dimFake) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.answered.Store(true)
	vs, err := f.b.Embed(ctx, texts)
	for i, v := range vs {
		vs[i] = v[:f.dim]
	}
	return vs, err
}

func (f *dimFake) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return f.Embed(ctx, texts)
}

// The model behind one name changes its vector size between two starts
// (`ollama pull` of another variant under the same tag, a gateway alias
// pointed at another model, embedder.dimensions left unset): the on-disk
// embedding cache (embed.Cache, on by default for remote embedders) is keyed
// by provider, model name and the *requested* dimensions (0), so it hands
// back the old size for every text it has seen, and the new size only for
// the texts that changed. The router's vectors are then a mix of sizes, or
// all of the old size while queries have the new one: the vector index
// never becomes usable again (the background retry every 30 s reads the
// same cache), and every request falls back to bm25 until an operator
// deletes the cache by hand. The docs promise a size change re-embeds
// ("should the size turn out different, BuildVectors embeds everything
// again").
func TestRel15EmbeddingCacheAcrossADimensionChange(t *testing.T) {
	defer router.SetVectorRetryEvery(100 * time.Millisecond)() // the background retry, often: it does not help
	lib := copyLibrary(t)
	base := fittedBuiltin(t, load(t, lib))
	cache := t.TempDir()
	var logs syncbuf.Buffer // background retries log while the test reads
	start := func(dim int) *router.Router {
		e := embed.NewCache(&dimFake{b: base, dim: dim}, cache, 0)
		r, err := router.New(context.Background(), load(t, lib), router.Options{Embedder: e,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1 := start(64)
	if d := route(r1, router.StrategyEmbedding, "slow sql query"); d.Fallback {
		t.Fatalf("first start falls back: %s", d.FallbackReason)
	}
	r1.Close()

	// One skill changes while the model's size changes.
	entries, _ := os.ReadDir(lib)
	for _, e := range entries {
		p := filepath.Join(lib, e.Name(), "SKILL.md")
		if b, err := os.ReadFile(p); err == nil {
			os.WriteFile(p, append(b, []byte("\nOne more line.\n")...), 0o644)
			break
		}
	}
	logs.Reset()
	r2 := start(96)
	defer r2.Close()
	deadline := time.Now().Add(5 * time.Second)
	var d *router.Decision
	for {
		d = route(r2, router.StrategyEmbedding, "slow sql query")
		if !d.Fallback || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d.Fallback {
		t.Errorf("after the model's size changed, every request falls back: %s (%s)\nlog:\n%s", d.FallbackCode, d.FallbackReason,
			strings.TrimSpace(logs.String()))
	}
}

// The embedder answers with another size than the vectors it built (the
// model behind its name changed): every query's vector is refused until
// the background rebuild, and Degraded (/readyz's ranking_degraded) says
// so rather than nothing.
func TestDegradedOtherSize(t *testing.T) {
	defer router.SetVectorRetryEvery(time.Hour)()
	snap := load(t, copyLibrary(t))
	f := &dimFake{b: fittedBuiltin(t, snap), dim: 64}
	r, err := router.New(context.Background(), snap, router.Options{Embedder: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	if why := r.Degraded(); why != "" {
		t.Fatalf("degraded before the change: %s", why)
	}
	f.dim = 32
	if why := r.Degraded(); !strings.Contains(why, "holds 64-dimension vectors, embedder ollama answers with 32") {
		t.Errorf("Degraded() = %q", why)
	}
}
