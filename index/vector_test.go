package index

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// axisEmbedder maps a text to a unit vector along the axis named by its
// first byte, so similarities are exact and predictable.
type axisEmbedder struct{ calls, texts atomic.Int64 }

func (a *axisEmbedder) embed(_ context.Context, texts []string) ([][]float32, error) {
	a.calls.Add(1)
	a.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 4)
		if t != "" {
			v[int(t[0])%4] = 1
		}
		out[i] = v
	}
	return out, nil
}

func vdoc(id string, parts ...string) VectorDoc {
	d := VectorDoc{ID: id, Name: id}
	for i, p := range parts {
		w := 1.0
		if i > 0 {
			w = 0.5
		}
		d.Parts = append(d.Parts, Part{Text: p, Weight: w})
	}
	return d
}

func TestVectorsBuildAndQuery(t *testing.T) {
	ctx := context.Background()
	var e axisEmbedder
	docs := []VectorDoc{vdoc("a", "a"), vdoc("b", "b"), vdoc("ab", "a", "b")}
	v, st, err := BuildVectors(ctx, docs, "m", e.embed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Embedded != 3 || e.calls.Load() != 1 || e.texts.Load() != 4 {
		t.Fatalf("stats %+v, %d calls for %d texts; want one call for all parts", st, e.calls.Load(), e.texts.Load())
	}
	hits, err := v.Query(ctx, []float32{1, 0, 0, 0}, 100) // n > count is clamped
	if err != nil {
		t.Fatal(err)
	}
	// 'a' is byte 97: axis 1. Query along axis 0 matches nothing; use axis 1.
	hits, err = v.Query(ctx, []float32{0, 1, 0, 0}, 100)
	if err != nil || len(hits) != 3 {
		t.Fatalf("hits %v, err %v", hits, err)
	}
	if hits[0].ID != "a" || math.Abs(hits[0].Similarity-1) > 1e-6 {
		t.Errorf("best hit %+v, want a at 1.0", hits[0])
	}
	// ab = normalize(1·a + 0.5·b): cosine with a is 1/sqrt(1.25).
	if hits[1].ID != "ab" || math.Abs(hits[1].Similarity-1/math.Sqrt(1.25)) > 1e-6 {
		t.Errorf("second hit %+v, want ab at %.4f", hits[1], 1/math.Sqrt(1.25))
	}
	if v.Len() != 3 || v.Model() != "m" {
		t.Errorf("Len %d Model %q", v.Len(), v.Model())
	}
}

func TestVectorsIncremental(t *testing.T) {
	ctx := context.Background()
	var e axisEmbedder
	v1, _, err := BuildVectors(ctx, []VectorDoc{vdoc("a", "a"), vdoc("b", "b"), vdoc("c", "c")}, "m", e.embed, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.texts.Store(0)
	// b changed, c removed, d added.
	v2, st, err := BuildVectors(ctx, []VectorDoc{vdoc("a", "a"), vdoc("b", "b", "new body"), vdoc("d", "d")}, "m", e.embed, v1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reused != 1 || st.Embedded != 2 || st.Removed != 2 || e.texts.Load() != 3 {
		t.Errorf("stats %+v after embedding %d texts; want reused 1, embedded 2 (3 texts)", st, e.texts.Load())
	}
	if v1.Len() != 3 || v2.Len() != 3 {
		t.Errorf("old index changed (%d) or new is wrong (%d)", v1.Len(), v2.Len())
	}
	// Another model reuses nothing.
	_, st, _ = BuildVectors(ctx, []VectorDoc{vdoc("a", "a")}, "other", e.embed, v2)
	if st.Reused != 0 || st.Embedded != 1 {
		t.Errorf("model change: stats %+v", st)
	}
}

func TestVectorsPersist(t *testing.T) {
	ctx := context.Background()
	var e axisEmbedder
	v, _, err := BuildVectors(ctx, []VectorDoc{vdoc("a", "a"), vdoc("b", "b")}, "ollama/nomic/768", e.embed, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sub", FileName("ollama"))
	if err := v.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadVectors(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Model() != "ollama/nomic/768" || loaded.Len() != 2 {
		t.Fatalf("loaded model %q, %d docs", loaded.Model(), loaded.Len())
	}
	e.texts.Store(0)
	_, st, err := BuildVectors(ctx, []VectorDoc{vdoc("a", "a"), vdoc("b", "b")}, "ollama/nomic/768", e.embed, loaded)
	if err != nil || st.Reused != 2 || e.texts.Load() != 0 {
		t.Errorf("rebuild from the saved index: %+v, %d texts embedded, err %v", st, e.texts.Load(), err)
	}
	os.WriteFile(path, []byte("garbage"), 0o644)
	if _, err := LoadVectors(path); err == nil {
		t.Error("garbage file loaded")
	}
	if _, err := LoadVectors(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing file loaded")
	}
}

func TestVectorsEmbedError(t *testing.T) {
	boom := errors.New("down")
	_, _, err := BuildVectors(context.Background(), []VectorDoc{vdoc("a", "a")}, "m",
		func(context.Context, []string) ([][]float32, error) { return nil, boom }, nil)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	_, _, err = BuildVectors(context.Background(), []VectorDoc{vdoc("a", "a")}, "m",
		func(context.Context, []string) ([][]float32, error) { return nil, nil }, nil)
	if err == nil {
		t.Error("missing vectors accepted")
	}
}

func TestVectorsEmptyAndZero(t *testing.T) {
	ctx := context.Background()
	var e axisEmbedder
	v, _, err := BuildVectors(ctx, nil, "m", e.embed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := v.Query(ctx, []float32{1, 0, 0, 0}, 5); err != nil || len(hits) != 0 {
		t.Errorf("empty index: %v %v", hits, err)
	}
	// A document whose text has no features still gets a valid vector.
	v, _, err = BuildVectors(ctx, []VectorDoc{vdoc("empty", "")}, "m", e.embed, nil)
	if err != nil {
		t.Fatal(err)
	}
	hits, _ := v.Query(ctx, []float32{0, 1, 0, 0}, 1)
	if len(hits) != 1 || math.IsNaN(hits[0].Similarity) {
		t.Errorf("hits %v", hits)
	}
}
