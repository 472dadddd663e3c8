package embed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

// countingEmbedder counts texts embedded.
type countingEmbedder struct {
	model string
	texts atomic.Int64
	calls atomic.Int64
	docs  atomic.Int64
}

func (c *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	c.calls.Add(1)
	c.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeVector(t, 8)
		normalize(out[i])
	}
	return out, nil
}

func (c *countingEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	c.docs.Add(1)
	return c.Embed(ctx, texts)
}
func (c *countingEmbedder) Name() string    { return "fake" }
func (c *countingEmbedder) Model() string   { return c.model }
func (c *countingEmbedder) Dimensions() int { return 8 }

func TestCacheReusesVectors(t *testing.T) {
	dir := t.TempDir()
	inner := &countingEmbedder{model: "m:latest"}
	c := NewCache(inner, dir, 0)
	ctx := context.Background()
	first, err := c.EmbedDocuments(ctx, []string{"a", "b", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.texts.Load() != 2 || inner.docs.Load() != 1 {
		t.Fatalf("embedded %d texts in %d document calls, want 2 in 1 (duplicates once)", inner.texts.Load(), inner.docs.Load())
	}
	// A new process: a new Cache over the same directory.
	c2 := NewCache(inner, dir, 0)
	second, err := c2.EmbedDocuments(ctx, []string{"b", "a", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.texts.Load() != 3 {
		t.Fatalf("embedded %d texts in total, want 3 (only c is new)", inner.texts.Load())
	}
	if !reflect.DeepEqual(second[0], first[1]) || !reflect.DeepEqual(second[1], first[0]) {
		t.Error("cached vectors differ from the originals")
	}
	// Queries are never cached.
	c2.Embed(ctx, []string{"a"})
	c2.Embed(ctx, []string{"a"})
	if inner.texts.Load() != 5 {
		t.Errorf("queries: %d texts embedded, want 5", inner.texts.Load())
	}
	// No temp files left behind.
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if strings.HasPrefix(filepath.Base(p), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestCacheKeyedByModelAndDimensions(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := &countingEmbedder{model: "m1"}
	NewCache(a, dir, 0).EmbedDocuments(ctx, []string{"x"})
	for _, tt := range []struct {
		model string
		dims  int
	}{{"m2", 0}, {"m1", 256}, {"m1/", 0}} {
		b := &countingEmbedder{model: tt.model}
		NewCache(b, dir, tt.dims).EmbedDocuments(ctx, []string{"x"})
		if b.texts.Load() != 1 {
			t.Errorf("model %q dims %d: served from another model's cache", tt.model, tt.dims)
		}
	}
}

func TestCacheIgnoresDamagedEntries(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	inner := &countingEmbedder{model: "m"}
	c := NewCache(inner, dir, 0)
	want, _ := c.EmbedDocuments(ctx, []string{"x", "y", "z"})
	damage := map[string]func([]byte) []byte{
		"x": func(b []byte) []byte { return b[:len(b)/2] },                  // truncated
		"y": func(b []byte) []byte { b[10] ^= 0xff; return b },              // bit flip: checksum
		"z": func(b []byte) []byte { return []byte("not a vector at all") }, // garbage
	}
	for text, f := range damage {
		p := c.path(textKey(text))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, f(b), 0o644)
	}
	got, err := c.EmbedDocuments(ctx, []string{"x", "y", "z"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("damaged entries were not re-embedded correctly")
	}
	if inner.texts.Load() != 6 {
		t.Errorf("embedded %d texts, want 6 (all three again)", inner.texts.Load())
	}
	// Rewritten: the next call hits.
	c.EmbedDocuments(ctx, []string{"x", "y", "z"})
	if inner.texts.Load() != 6 {
		t.Error("damaged entries were not rewritten")
	}
}

func TestCacheUnwritableDegrades(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(dir, []byte("a file, not a directory"), 0o644)
	inner := &countingEmbedder{model: "m"}
	v, err := NewCache(inner, dir, 0).EmbedDocuments(context.Background(), []string{"x"})
	if err != nil || len(v) != 1 {
		t.Fatalf("unwritable cache should still embed: %v", err)
	}
}

func TestCacheDir(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	tests := map[string]string{"-": "", "": filepath.Join(xdg, "skillrouter"), "/custom": "/custom"}
	for in, want := range tests {
		if got, err := CacheDir(in); err != nil || got != want {
			t.Errorf("CacheDir(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", t.TempDir())
	if got, _ := CacheDir(""); !strings.HasSuffix(got, "skillrouter") {
		t.Errorf("CacheDir fallback = %q", got)
	}
}

// The default cache folder is this user's own: created 0700, and one an
// older build left readable by others is closed. A folder configured is
// left alone.
func TestCacheDirPrivate(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	dir := filepath.Join(xdg, "skillrouter")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // past the umask
		t.Fatal(err)
	}
	if _, err := CacheDir(""); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("default cache folder mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	own := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(own, 0o755)
	if _, err := CacheDir(own); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(own); fi.Mode().Perm() != 0o755 {
		t.Errorf("a configured folder was changed to %v", fi.Mode().Perm())
	}
}

// failingAfter embeds until it has embedded limit texts, then fails.
type failingAfter struct {
	countingEmbedder
	limit int64
}

func (f *failingAfter) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	if f.texts.Load()+int64(len(texts)) > f.limit {
		return nil, unavailable("fake", errors.New("down"))
	}
	return f.countingEmbedder.EmbedDocuments(ctx, texts)
}

// TestCacheKeepsWhatAFailedRunEmbedded: an embedder that fails part way
// through a library leaves the parts it embedded cached; the retry embeds
// only the rest.
func TestCacheKeepsWhatAFailedRunEmbedded(t *testing.T) {
	texts := make([]string, 3*cacheChunk)
	for i := range texts {
		texts[i] = fmt.Sprintf("skill %d", i)
	}
	inner := &failingAfter{countingEmbedder: countingEmbedder{model: "m"}, limit: cacheChunk}
	c := NewCache(inner, t.TempDir(), 0)
	if _, err := c.EmbedDocuments(context.Background(), texts); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v, want the embedder's failure", err)
	}
	inner.limit = 1 << 30
	if _, err := c.EmbedDocuments(context.Background(), texts); err != nil {
		t.Fatal(err)
	}
	if n := inner.texts.Load(); n != int64(len(texts)) {
		t.Errorf("embedded %d texts over both runs, want %d: the first run's part was lost", n, len(texts))
	}
}
