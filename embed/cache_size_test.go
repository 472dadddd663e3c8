package embed

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// sizedEmbedder answers with size components; like a remote client without
// a configured size, it reports its size only once it has answered, unless
// known says it knows it up front.
type sizedEmbedder struct {
	size     int
	known    bool
	answered atomic.Bool
	texts    atomic.Int64
}

func (s *sizedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	s.answered.Store(true)
	s.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeVector(t, s.size)
	}
	return out, nil
}
func (s *sizedEmbedder) Name() string  { return "fake" }
func (s *sizedEmbedder) Model() string { return "m" }
func (s *sizedEmbedder) Dimensions() int {
	if s.known || s.answered.Load() {
		return s.size
	}
	return 0
}

// TestCacheAcrossASizeChange: the model behind one name changes its size;
// entries of the old size are misses once the new size is known, and are
// replaced, whether the size is known up front, learned from this call's
// misses, or learned from one of entries of two sizes.
func TestCacheAcrossASizeChange(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name     string
		cached   map[string]int // text -> size cached before (by the old model)
		known    bool
		texts    []string
		embedded int64 // texts the new model embeds
	}{
		{"size known up front", map[string]int{"a": 4, "b": 4}, true, []string{"a", "b"}, 2},
		{"size learned from a miss", map[string]int{"a": 4, "b": 4}, false, []string{"a", "b", "c"}, 3},
		{"entries of two sizes", map[string]int{"a": 4, "b": 6}, false, []string{"a", "b"}, 1}, // a teaches 6: b stays
		{"entries of the current size stay", map[string]int{"a": 6, "b": 4}, false, []string{"a", "b", "c"}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for text, size := range tt.cached {
				NewCache(&sizedEmbedder{size: size}, dir, 0).EmbedDocuments(ctx, []string{text})
			}
			inner := &sizedEmbedder{size: 6, known: tt.known}
			c := NewCache(inner, dir, 0)
			for range 2 { // the second time from the cache alone
				vs, err := c.EmbedDocuments(ctx, tt.texts)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range vs {
					if len(v) != 6 {
						t.Errorf("%q: %d components, want the new model's 6", tt.texts[i], len(v))
					}
				}
			}
			if n := inner.texts.Load(); n != tt.embedded {
				t.Errorf("embedded %d texts, want %d", n, tt.embedded)
			}
		})
	}
}

// TestCacheRemovesStaleTemporaryFiles: temporary files a killed process
// left in the cache's folders go at the next write; a live write's stays.
func TestCacheRemovesStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	c := NewCache(&countingEmbedder{model: "m"}, dir, 0)
	sub := filepath.Join(c.Dir(), "ab")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	stranded, live := filepath.Join(sub, ".tmp-1"), filepath.Join(sub, ".tmp-2")
	for _, p := range []string{stranded, live} {
		os.WriteFile(p, []byte("x"), 0o644)
	}
	old := time.Now().Add(-24 * time.Hour) // past atomicfile's cutoff for a writer it cannot check
	os.Chtimes(stranded, old, old)
	if _, err := c.EmbedDocuments(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stranded); err == nil {
		t.Error("a temporary file left a day ago is still there after a write")
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live write's temporary file was removed: %v", err)
	}
}
