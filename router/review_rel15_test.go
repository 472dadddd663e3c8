package router_test

// Reliability review, round 15: the kept index (routing.index_dir).

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/router"
)

// A kept (or prebuilt) index whose vector file is damaged without changing
// its length (bit rot, a block of zeros written back after a crash: the
// files are renamed into place without an fsync, so after a power loss a
// file may have its size but not its data) is loaded as if whole: the
// format checks only the tables' lengths and order, and neither the file
// nor the manifest carries a digest of the rows. The router then ranks
// with the damaged vectors, silently and until the library changes,
// where docs/deploy.md promises "an unreadable file" is a reason to build
// the index here instead.
func TestRel15WarmVectorsDamagedInPlaceAreRebuilt(t *testing.T) {
	lib := copyLibrary(t)
	warm := t.TempDir()
	opts := func(logs *syncbuf.Buffer) router.Options {
		b := embed.NewBuiltin(embed.Config{})
		return router.Options{Embedder: b, WarmDir: warm,
			Fit:     func(c []string) router.Embedder { return b.Fit(c) },
			Restore: func(s []byte) (router.Embedder, error) { return embed.RestoreBuiltin(s) },
			Logger:  slog.New(slog.NewTextHandler(logs, nil))}
	}
	start := func(o router.Options) *router.Router {
		r, err := router.New(context.Background(), load(t, lib), o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	queries := []string{"slow sql query", "write a regex for dates", "deploy to kubernetes", "profile this csv file"}
	rankings := func(r *router.Router) [][]string {
		var out [][]string
		for _, q := range queries {
			out = append(out, ranking(route(r, router.StrategyEmbedding, q)))
		}
		return out
	}
	var logs syncbuf.Buffer
	r1 := start(opts(&logs))
	want := rankings(r1)
	r1.Close()

	// Zero the second half of the vector rows (the rows are the end of
	// the file), keeping the file's length.
	vec := filepath.Join(warm, indexFiles(t, warm, "builtin")[2])
	b, err := os.ReadFile(vec)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[len(b)-len(b)/4:])
	if err := os.WriteFile(vec, b, 0o644); err != nil {
		t.Fatal(err)
	}

	logs.Reset()
	r2 := start(opts(&logs))
	defer r2.Close()
	got := rankings(r2)
	if strings.Contains(logs.String(), "loaded the routing index kept from the last start") {
		t.Errorf("a damaged vector file was loaded as the kept index:\n%s", logs.String())
	}
	// Said as a warning: not a library change, but the disk.
	if !strings.Contains(logs.String(), "level=WARN msg=\"building the routing index: the one kept from the last start is damaged\"") {
		t.Errorf("a damaged kept index was not warned about:\n%s", logs.String())
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rankings after the damaged warm start differ from the build's:\n got %v\nwant %v", got, want)
	}
}

// Index files are written through a temporary file (".tmp-*") renamed into
// place. A write that never finishes (the process killed: OOM, SIGKILL at
// the end of terminationGracePeriodSeconds, a second SIGTERM, which "exits
// at once", or any SIGTERM within the seconds after a cold start: `router
// serve` never closes its routers, so the background write of the kept
// index is simply abandoned) leaves its temporary file behind. Nothing ever
// removes it: removeStale only knows the vectors-/state-/lexical- names. At
// 10,000 skills each such file is tens of MB, and a crash-looping pod with
// a persistent cache folder fills its volume with them.
func TestRel15StrandedTempFilesAreRemoved(t *testing.T) {
	lib := copyLibrary(t)
	warm := t.TempDir()
	// What a killed writer left a day ago (past atomicfile's cutoff for a
	// writer it cannot check), in the folder and in the embedding cache
	// beside it.
	stranded := filepath.Join(warm, ".tmp-1234567890")
	if err := os.WriteFile(stranded, bytes.Repeat([]byte{1}, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-24 * time.Hour)
	os.Chtimes(stranded, old, old)

	b := embed.NewBuiltin(embed.Config{})
	var logs syncbuf.Buffer
	r, err := router.New(context.Background(), load(t, lib), router.Options{Embedder: b, WarmDir: warm,
		Fit:     func(c []string) router.Embedder { return b.Fit(c) },
		Restore: func(s []byte) (router.Embedder, error) { return embed.RestoreBuiltin(s) },
		Logger:  slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the kept index is written: a save that cleans up stale files
	indexFiles(t, warm, "builtin")
	if _, err := os.Stat(stranded); err == nil {
		t.Errorf("a temporary file an interrupted write left a day ago is still in the index folder after a save: %s", stranded)
	}
}

// Two A/B arms whose embedders share a provider but not a model (the
// natural experiment: two Ollama embedding models) get the same warm
// folder (cmd/router's warmDir is keyed by the library's roots only) and
// the same manifest name (prebuilt-<provider>.json): each arm's save
// replaces the other's manifest, so at every restart one of them finds
// "built with embedder fake/m1, configured fake/m2" and builds cold (every
// skill embedded again with a remote model), and removeStale deletes the
// other arm's files a minute later.
func TestRel15ArmsOfOneProviderKeepTheirWarmIndexes(t *testing.T) {
	lib := copyLibrary(t)
	base := fittedBuiltin(t, load(t, lib))
	warm := t.TempDir()
	start := func(model string, logs *bytes.Buffer) (*router.Router, *remoteFake) {
		e := &remoteFake{b: base, model: model}
		r, err := router.New(context.Background(), load(t, lib), router.Options{Embedder: e, WarmDir: warm,
			Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return r, e
	}
	// First start: both arms build and keep their index.
	var l1, l2 bytes.Buffer
	a, _ := start("m1", &l1)
	b, _ := start("m2", &l2)
	a.Close()
	b.Close()
	// Second start, library unchanged: both should load.
	l1.Reset()
	l2.Reset()
	a, ea := start("m1", &l1)
	b, eb := start("m2", &l2)
	defer a.Close()
	defer b.Close()
	if n := ea.docs.Load(); n != 0 {
		t.Errorf("arm m1 embedded the library again on a warm start (%d calls):\n%s", n, l1.String())
	}
	if n := eb.docs.Load(); n != 0 {
		t.Errorf("arm m2 embedded the library again on a warm start (%d calls):\n%s", n, l2.String())
	}
}
