package router_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
)

// slowFake is a remote embedder that takes its time on every call (an
// Ollama on a busy CPU: 300 ms a batch), honouring cancellation.
type slowFake struct {
	b     *embed.Builtin
	delay time.Duration
}

func (f *slowFake) Name() string    { return "ollama" }
func (f *slowFake) Model() string   { return "nomic-embed-text" }
func (f *slowFake) Dimensions() int { return f.b.Dimensions() }
func (f *slowFake) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f.b.Embed(ctx, texts) // queries: fast
}

func (f *slowFake) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return f.b.Embed(ctx, texts)
}

// Every reload hands the router a snapshot (the watcher reloads on any
// event under the library: a script's output file, a sync tool touching
// files, an editor's save of unchanged text), and Follow cancels the build
// in progress even when the new snapshot is the very library that build
// is indexing. With reloads coming more often than a build takes (the
// watcher's debounce caps the wait at 2.5 s, a remote embedder needs
// longer than that for a batch), an edit is never indexed: every build is
// cancelled by a reload of the same content, and the router keeps ranking
// the old text (and keeps no warm index of the new one), indefinitely.
func TestRel15IdenticalReloadsDoNotStarveTheBuild(t *testing.T) {
	lib := copyLibrary(t)
	base := fittedBuiltin(t, load(t, lib))
	r, err := router.New(context.Background(), load(t, lib), router.Options{Embedder: &slowFake{b: base, delay: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// An edit: a new skill only the new text can rank.
	dir := filepath.Join(lib, "tide-tables")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: tide-tables\ndescription: Predict ocean tide tables for harbours. Use when asked about high tide or low tide times.\n---\nTide tables.\n"), 0o644)
	r.Follow(load(t, lib))
	// Then the same library, reloaded every 150 ms for 3 s (20 reloads):
	// nothing in it changes.
	stop := time.Now().Add(3 * time.Second)
	for time.Now().Before(stop) {
		time.Sleep(150 * time.Millisecond)
		r.Follow(load(t, lib))
	}
	// A build of the edited library (300 ms) had ten times the time it
	// needs: the new skill is ranked.
	d := route(r, router.StrategyBM25, "when is high tide in the harbour")
	if top := ranking(d); len(top) == 0 || top[0] != "tide-tables" {
		t.Errorf("after 3 s of reloads of an unchanged library, the skill added before them is still not indexed; top: %v", top[:min(3, len(top))])
	}
}
