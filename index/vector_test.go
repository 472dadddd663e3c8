package index

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
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

// randomEmbedder gives each text a dense pseudo-random unit vector derived
// from its bytes, so the matrix scoring is checked on realistic values.
func randomEmbedder(dim int) EmbedFunc {
	return func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			h := uint64(14695981039346656037)
			for _, c := range []byte(t) {
				h = (h ^ uint64(c)) * 1099511628211
			}
			v := make([]float32, dim)
			for j := range v {
				h ^= h << 13
				h ^= h >> 7
				h ^= h << 17
				v[j] = float32(int64(h%2001)-1000) / 1000
			}
			out[i] = unit(v)
		}
		return out, nil
	}
}

// The matrix scoring must agree with chromem's own cosine ranking, before
// and after a save/load round trip, for dense and sparse queries.
func TestVectorsSimilaritiesMatchChromem(t *testing.T) {
	ctx := context.Background()
	const dim = 64
	var docs []VectorDoc
	for _, id := range []string{"delta", "alpha", "echo", "charlie", "bravo", "foxtrot", "golf"} {
		docs = append(docs, vdoc(id, id+" skill", "body of "+id))
	}
	emb := randomEmbedder(dim)
	v, _, err := BuildVectors(ctx, docs, "m", emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	loaded := saveLoad(t, v)
	dense, _ := emb(ctx, []string{"query"})
	sparse := make([]float32, dim)
	sparse[3], sparse[40] = 0.6, 0.8
	for _, tc := range []struct {
		name string
		v    *Vectors
		q    []float32
	}{
		{"built/dense", v, dense[0]}, {"built/sparse", v, sparse},
		{"loaded/dense", loaded, dense[0]}, {"loaded/sparse", loaded, sparse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, col, err := tc.v.chromem() // what Save writes
			if err != nil {
				t.Fatal(err)
			}
			want, err := col.QueryEmbedding(ctx, tc.q, tc.v.Len(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.v.Query(ctx, tc.q, tc.v.Len())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d hits, chromem %d", len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || math.Abs(got[i].Similarity-float64(want[i].Similarity)) > 1e-5 {
					t.Errorf("hit %d: %s %.6f, chromem %s %.6f", i, got[i].ID, got[i].Similarity, want[i].ID, want[i].Similarity)
				}
			}
			sims := make([]float64, tc.v.Len())
			if err := tc.v.Similarities(tc.q, sims); err != nil {
				t.Fatal(err)
			}
			for i, id := range tc.v.IDs() {
				if i > 0 && tc.v.IDs()[i-1] >= id {
					t.Fatalf("IDs not sorted: %v", tc.v.IDs())
				}
				for _, h := range got {
					if h.ID == id && h.Similarity != sims[i] {
						t.Errorf("%s: Similarities %.6f, Query %.6f", id, sims[i], h.Similarity)
					}
				}
			}
		})
	}
	if err := v.Similarities(make([]float32, dim+1), make([]float64, v.Len())); err == nil {
		t.Error("a query of the wrong dimension was accepted")
	}
	if err := v.Similarities(dense[0], make([]float64, 2)); err == nil {
		t.Error("a destination of the wrong length was accepted")
	}
}

// Equal similarities rank by id, so output does not depend on map order.
func TestVectorsQueryTiesByID(t *testing.T) {
	ctx := context.Background()
	var e axisEmbedder
	docs := []VectorDoc{vdoc("c", "a"), vdoc("a", "a"), vdoc("b", "a")}
	v, _, err := BuildVectors(ctx, docs, "m", e.embed, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		hits, err := v.Query(ctx, []float32{0, 1, 0, 0}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if hits[0].ID != "a" || hits[1].ID != "b" || hits[2].ID != "c" {
			t.Fatalf("ties not by id: %+v", hits)
		}
	}
}

// A rebuild reuses unchanged rows bit for bit, embeds only what changed,
// and of documents with equal ids keeps the last.
func TestVectorsReuseRowsAndDuplicateIDs(t *testing.T) {
	ctx := context.Background()
	emb := randomEmbedder(16)
	docs := []VectorDoc{vdoc("b", "bravo"), vdoc("a", "alpha"), vdoc("c", "charlie")}
	v1, _, err := BuildVectors(ctx, docs, "m", emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	docs2 := []VectorDoc{vdoc("c", "charlie"), vdoc("a", "changed"), vdoc("b", "old b"), vdoc("b", "bravo")}
	v2, st, err := BuildVectors(ctx, docs2, "m", emb, v1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reused != 2 || st.Embedded != 1 || st.Removed != 1 || v2.Len() != 3 {
		t.Fatalf("stats %+v, %d docs; want b and c reused, a embedded", st, v2.Len())
	}
	for _, id := range []string{"b", "c"} {
		if got, want := v2.vector(v2.row(id)), v1.vector(v1.row(id)); !slices.Equal(got, want) {
			t.Errorf("%s: reused row differs", id)
		}
	}
	if slices.Equal(v2.vector(v2.row("a")), v1.vector(v1.row("a"))) {
		t.Error("changed document kept its old vector")
	}
	if v2.row("zzz") != -1 || (*Vectors)(nil).row("a") != -1 {
		t.Error("row of an unknown id")
	}
}

// Save and LoadVectors keep names and hashes (a second save writes the same
// collection), and an empty index round-trips too.
func TestVectorsSaveLoadKeepsMetadata(t *testing.T) {
	ctx := context.Background()
	docs := []VectorDoc{{ID: "team/a", Name: "alpha", Parts: []Part{{Text: "a", Weight: 1}}}, vdoc("b", "b")}
	var e axisEmbedder
	for _, tc := range []struct {
		name string
		docs []VectorDoc
	}{{"two", docs}, {"empty", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := BuildVectors(ctx, tc.docs, "m", e.embed, nil)
			if err != nil {
				t.Fatal(err)
			}
			loaded := saveLoad(t, v)
			if !slices.Equal(loaded.ids, v.ids) || !slices.Equal(loaded.names, v.names) || !slices.Equal(loaded.hashes, v.hashes) || loaded.dim != v.dim {
				t.Fatalf("loaded ids %v names %v hashes %v dim %d; saved %v %v %v %d",
					loaded.ids, loaded.names, loaded.hashes, loaded.dim, v.ids, v.names, v.hashes, v.dim)
			}
			for i := range v.ids {
				if !slices.Equal(loaded.vector(i), v.vector(i)) {
					t.Errorf("%s: vector changed in the round trip", v.ids[i])
				}
			}
		})
	}
}

// When the model answers with a new dimension, reused vectors of the old one
// cannot be mixed in: everything is embedded again.
func TestVectorsDimensionChangeReembeds(t *testing.T) {
	ctx := context.Background()
	docs := []VectorDoc{vdoc("a", "alpha"), vdoc("b", "bravo")}
	v1, _, err := BuildVectors(ctx, docs, "m", randomEmbedder(8), nil)
	if err != nil {
		t.Fatal(err)
	}
	docs[1] = vdoc("b", "changed")
	v2, st, err := BuildVectors(ctx, docs, "m", randomEmbedder(16), v1)
	if err != nil {
		t.Fatal(err)
	}
	if v2.dim != 16 || st.Reused != 0 || st.Embedded != 2 {
		t.Fatalf("dim %d, stats %+v; want every document embedded at 16", v2.dim, st)
	}
}

// saveLoad saves v to a temporary file and loads it back.
func saveLoad(t *testing.T, v *Vectors) *Vectors {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v.gob.gz")
	if err := v.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadVectors(path)
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}

// TestPreparedBound: every approximation is within its RowBound (itself
// within Bound) of the exact similarity, and Query, rescoring only the
// candidates the bounds allow, returns exactly the top of an exhaustive
// ranking.
func TestPreparedBound(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	for _, dim := range []int{8, 64, 1024} {
		var docs []VectorDoc
		for i := range 300 {
			docs = append(docs, vdoc(fmt.Sprintf("d%03d", i), fmt.Sprint(i)))
		}
		// Half the rows are spiky: one large component scales the rest
		// of the row, which then round coarsely.
		emb := func(ctx context.Context, texts []string) ([][]float32, error) {
			out, err := randomEmbedder(dim)(ctx, texts)
			for i, v := range out {
				if i%2 == 0 {
					v[i%dim] *= 40
					for j := range v {
						if j%5 == 1 {
							v[j] = 0
						}
					}
					unit(v)
				}
			}
			return out, err
		}
		v, _, err := BuildVectors(ctx, docs, "m", emb, nil)
		if err != nil {
			t.Fatal(err)
		}
		for trial := range 12 {
			q := make([]float32, dim)
			for j := range q {
				if r.IntN(4) == 0 || trial%3 == 0 {
					q[j] = float32(r.NormFloat64())
				}
			}
			q = unit(q)
			p, err := v.Prepare(q)
			if err != nil {
				t.Fatal(err)
			}
			approx := make([]float64, v.Len())
			if !p.Approximate(approx) {
				t.Fatal("not approximated")
			}
			exact := make([]float64, v.Len())
			if err := v.Similarities(q, exact); err != nil {
				t.Fatal(err)
			}
			for i := range exact {
				off, rb := math.Abs(approx[i]-exact[i]), p.RowBound(i)
				if off > rb || rb > p.Bound() {
					t.Fatalf("dim %d, row %d: approximation off by %g, row bound %g, bound %g", dim, i, off, rb, p.Bound())
				}
			}
			for _, n := range []int{1, 3, 10, 100} {
				got, err := v.Query(ctx, q, n)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]Hit, v.Len())
				for i, id := range v.IDs() {
					want[i] = Hit{ID: id, Similarity: exact[i]}
				}
				slices.SortFunc(want, func(a, b Hit) int {
					if a.Similarity != b.Similarity {
						return cmp.Compare(b.Similarity, a.Similarity)
					}
					return strings.Compare(a.ID, b.ID)
				})
				if !slices.Equal(got, want[:n]) {
					t.Fatalf("dim %d, top %d: %v, exhaustive %v", dim, n, got, want[:n])
				}
			}
		}
	}
}

// TestDot8Int16 checks the scan's kernel against int64 sums, for up to ten
// groups of 32 documents, with the largest components the scan uses (the
// sums are exact, so every kernel gives the same values); a length that is
// not whole groups panics.
func TestDot8Int16(t *testing.T) {
	checkDot8Int16(t, dot8Int16)
	checkDot8Int16(t, dot8Int16Go)
}

func checkDot8Int16(t *testing.T, kernel func([]int32, *[8]int16, *[8][]int8)) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 10))
	for n := 0; n <= 320; n += 32 {
		acc := make([]int32, n)
		want := make([]int64, n)
		var cols [8][]int8
		for c := range cols {
			cols[c] = make([]int8, n+3)
			for i := range cols[c] {
				cols[c][i] = int8(r.IntN(255) - 127)
			}
			if n%7 == c {
				for i := range cols[c] {
					cols[c][i] = -127 // the extremes, in one column
				}
			}
		}
		for i := range acc {
			acc[i] = int32(r.IntN(1<<20) - 1<<19)
			want[docAt(i)] = int64(acc[i])
		}
		var q [8]int16
		for c := range q {
			q[c] = int16(r.IntN(2*queryMax+1) - queryMax)
		}
		q[n/32%8] = -queryMax
		kernel(acc, &q, &cols)
		for i := range want {
			for c := range cols {
				want[i] += int64(q[c]) * int64(cols[c][i])
			}
		}
		for k := range acc {
			if i := docAt(k); int64(acc[k]) != want[i] {
				t.Fatalf("n=%d, sum %d (document %d): %d, want %d", n, k, i, acc[k], want[i])
			}
		}
	}
	for _, n := range []int{1, 31, 33} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("%d sums: no panic", n)
				}
			}()
			var cols [8][]int8
			for c := range cols {
				cols[c] = make([]int8, n)
			}
			kernel(make([]int32, n), new([8]int16), &cols)
		}()
	}
}

// docAt is the document whose sum is at position k.
func docAt(k int) int {
	return k&^31 + int(groupDoc[k&31])
}

// TestExactRows: scoring rows eight at a time (SIMD lanes) and four at a
// time gives Exact's bits for every row, whatever the count and order of
// the rows.
func TestExactRows(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	var docs []VectorDoc
	for i := range 50 {
		docs = append(docs, vdoc(fmt.Sprintf("d%03d", i), fmt.Sprint(i)))
	}
	v, _, err := BuildVectors(ctx, docs, "m", randomEmbedder(256), nil)
	if err != nil {
		t.Fatal(err)
	}
	q := make([]float32, 256)
	for j := range q {
		if r.IntN(3) == 0 {
			q[j] = float32(r.NormFloat64())
		}
	}
	p, err := v.Prepare(unit(q))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 3, 4, 5, 8, 11, 50} {
		rows := make([]int32, n)
		for k := range rows {
			rows[k] = int32(r.IntN(v.Len()))
		}
		got := make([]float64, n)
		p.ExactRows(rows, got)
		for k, row := range rows {
			if want := p.Exact(int(row)); math.Float64bits(got[k]) != math.Float64bits(want) {
				t.Fatalf("%d rows: row %d = %v, Exact %v", n, row, got[k], want)
			}
		}
	}
}

// TestApproximateEdgeRows: rows of zeros, of subnormal components and of
// one dominant component stay within their bounds, and a query large enough
// to overflow the scan's float32 sums is scored exactly instead.
func TestApproximateEdgeRows(t *testing.T) {
	const dim = 16
	r := rand.New(rand.NewPCG(11, 12))
	rows := [][]float32{make([]float32, dim), make([]float32, dim), make([]float32, dim), make([]float32, dim)}
	for j := range dim {
		rows[1][j] = float32(r.IntN(7)-3) * 1e-42 // subnormal
		rows[2][j] = float32(r.NormFloat64()) * 1e-3
		rows[3][j] = float32(r.NormFloat64())
	}
	rows[2][5] = 1
	unit(rows[3])
	v := packedRows(t, rows)
	for _, scale := range []float32{1, 1e-30, 1e30} {
		q := make([]float32, dim)
		for j := range q {
			q[j] = float32(r.NormFloat64()) * scale
		}
		p, err := v.Prepare(q)
		if err != nil {
			t.Fatal(err)
		}
		approx := make([]float64, v.Len())
		if !p.Approximate(approx) {
			t.Fatalf("scale %g: not approximated", scale)
		}
		for i := range approx {
			if off := math.Abs(approx[i] - p.Exact(i)); off > p.RowBound(i) {
				t.Fatalf("scale %g, row %d: off by %g, bound %g", scale, i, off, p.RowBound(i))
			}
		}
	}
	q := make([]float32, dim)
	q[0], q[1], q[2] = 3e38, -3e38, 1
	p, err := v.Prepare(q)
	if err != nil {
		t.Fatal(err)
	}
	if p.Approximate(make([]float64, v.Len())) {
		t.Fatal("a query that overflows float32 sums was approximated")
	}
}

// TestQueryScaling: with rows the int8 columns hold exactly, all that
// separates the scan from Exact is the query's scaling to int16 (and
// rounding), which the bound must cover on its own; a dense query of
// 4,096 components is scaled below ±queryMax so that no int32 sum can
// overflow, and is still within its bound.
func TestQueryScaling(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, dim := range []int{16, 1024, 4096} {
		const n = 70
		rows := make([][]float32, n)
		for i := range rows {
			rows[i] = make([]float32, dim)
			s := float32(math.Ldexp(1, -7-r.IntN(4))) // a power of two: k·s is exact
			for j := range rows[i] {
				rows[i][j] = float32(r.IntN(255)-127) * s
			}
			rows[i][r.IntN(dim)] = 127 * s // the row's scale is s
		}
		v := packedRows(t, rows)
		if v.resNormAll != 0 {
			t.Fatalf("dim %d: rows not held exactly (residual %g)", dim, v.resNormAll)
		}
		for trial := range 20 {
			// Dense and alike (kind 0), dense over twelve decades of
			// magnitude, the smallest scaling to zero (1), or sparse (2).
			kind := trial % 3
			q := make([]float32, dim)
			for j := range q {
				switch {
				case kind == 0:
					q[j] = float32(r.NormFloat64())
				case kind == 1 || r.IntN(4) == 0:
					q[j] = float32(r.NormFloat64() * math.Pow(10, -12*r.Float64()))
				}
			}
			p, err := v.Prepare(q)
			if err != nil {
				t.Fatal(err)
			}
			var most int64
			for _, c := range p.qv {
				most += 127 * int64(max(c, -c))
			}
			if most > math.MaxInt32 {
				t.Fatalf("dim %d: int32 sums can reach %d", dim, most)
			}
			if dim == 4096 && kind == 0 && (slices.Max(p.qv) == queryMax || slices.Min(p.qv) == -queryMax) {
				t.Fatalf("dense query of %d components scaled to ±%d: sums may overflow", dim, queryMax)
			}
			approx := make([]float64, v.Len())
			if !p.Approximate(approx) {
				t.Fatal("not approximated")
			}
			for i := range approx {
				if off := math.Abs(approx[i] - p.Exact(i)); off > p.RowBound(i) {
					t.Fatalf("dim %d, trial %d, row %d: off by %g, bound %g", dim, trial, i, off, p.RowBound(i))
				}
			}
		}
	}
}

// FuzzApproximate: for any finite rows and query (components drawn from
// the input's bytes over a wide range of magnitudes), every approximation
// of the integer scan is within its row's bound of Exact.
func FuzzApproximate(f *testing.F) {
	f.Add([]byte("a query and two rows"), uint8(3), uint8(7))
	f.Add(bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 200), uint8(40), uint8(33))
	f.Fuzz(func(t *testing.T, data []byte, rows, dim uint8) {
		n, d := int(rows%70)+1, int(dim%48)+1
		at := 0
		next := func() float32 {
			if len(data) == 0 {
				return 0
			}
			b0, b1 := data[at%len(data)], data[(at+1)%len(data)]
			at += 2
			if b0%5 == 0 {
				return 0
			}
			// a mantissa from one byte, an exponent from the other
			return float32(math.Ldexp(float64(int8(b0))/127, int(b1%48)-30))
		}
		vecs := make([][]float32, n)
		for i := range vecs {
			vecs[i] = make([]float32, d)
			for j := range vecs[i] {
				vecs[i][j] = next()
			}
		}
		v := packedRows(t, vecs)
		q := make([]float32, d)
		for j := range q {
			q[j] = next()
		}
		p, err := v.Prepare(q)
		if err != nil {
			t.Fatal(err)
		}
		approx := make([]float64, n)
		if !p.Approximate(approx) {
			return
		}
		for i := range approx {
			if off := math.Abs(approx[i] - p.Exact(i)); !(off <= p.RowBound(i)) {
				t.Fatalf("row %d: %v, exact %v, off by %g, bound %g", i, approx[i], p.Exact(i), off, p.RowBound(i))
			}
		}
	})
}

// packedRows is a Vectors of rows as they are, their ids their numbers.
func packedRows(t testing.TB, rows [][]float32) *Vectors {
	t.Helper()
	ids := make([]string, len(rows))
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	v := &Vectors{}
	if err := v.pack(ids, ids, ids, rows); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestQuantizeParallel: the int8 columns and bounds of a library quantized
// on several cores are one core's, bit for bit, and a row that is not
// finite in any core's share leaves the whole index exact.
func TestQuantizeParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	n, dim := 3*quantizeMinRows+100, 24
	rows := make([]float32, n*dim)
	for i := range rows {
		rows[i] = float32(r.NormFloat64() * math.Ldexp(1, -r.IntN(8)))
	}
	run := func(procs int, rows []float32) quant {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return quantize(rows, n, dim)
	}
	one := run(1, rows)
	if one.exact {
		t.Fatal("finite rows left exact")
	}
	if many := run(3, rows); !reflect.DeepEqual(one, many) {
		t.Fatal("3 cores quantize otherwise than 1")
	}
	for _, at := range []int{0, n/2 + 7, n - 1} {
		bad := slices.Clone(rows)
		bad[at*dim+3] = float32(math.Inf(-1))
		if q := run(3, bad); !q.exact || q.cols != nil {
			t.Errorf("row %d not finite: exact %v", at, q.exact)
		}
	}
}

// quantizeByRow is quantize one row at a time, as it was written first:
// the reference quantizeBlock must give the same bits as.
func quantizeByRow(rows []float32, n, dim int) quant {
	stride := (n + 31) &^ 31
	q := quant{
		cols: make([]int8, stride*dim), stride: stride, zero: make([]int8, stride), scale: make([]float32, n),
		maxErr: make([]float32, n), resNorm: make([]float32, n), rowNorm: make([]float32, n),
	}
	for i := range n {
		row := rows[i*dim : (i+1)*dim]
		var top float64
		for _, x := range row {
			f := float64(x)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return quant{exact: true}
			}
			top = max(top, math.Abs(f))
		}
		s := float32(top / quantMax)
		if s == 0 {
			s = 1
		}
		var maxErr, res, norm float64
		for j, x := range row {
			f := float64(x)
			c := min(max(math.Round(f/float64(s)), -quantMax), quantMax)
			q.cols[j*q.stride+i] = int8(c)
			e := math.Abs(c*float64(s) - f)
			maxErr = max(maxErr, e)
			res += e * e
			norm += f * f
		}
		q.scale[i] = s
		q.maxErr[i] = roundUp32(maxErr)
		q.resNorm[i] = roundUp32(math.Sqrt(res) * (1 + 1e-12))
		q.rowNorm[i] = roundUp32(math.Sqrt(norm) * (1 + 1e-12))
	}
	for i := range n {
		q.maxErrAll = max(q.maxErrAll, float64(q.maxErr[i]))
		q.resNormAll = max(q.resNormAll, float64(q.resNorm[i]))
		q.rowNormAll = max(q.rowNormAll, float64(q.rowNorm[i]))
	}
	return q
}

// TestQuantizeBlocks: quantizing rows a block at a time gives the bits of
// one row at a time, for libraries that end in a partial block, rows of
// zeros, of subnormals, of halves that round away from zero, of negative
// zeros and of components far apart in size.
func TestQuantizeBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{1, 63, 64, 65, 200, 2*quantizeMinRows + 77} {
		for _, dim := range []int{1, 7, 64} {
			rows := make([]float32, n*dim)
			for i := range n {
				row := rows[i*dim : (i+1)*dim]
				switch i % 5 {
				case 0:
					for j := range row {
						row[j] = float32(r.NormFloat64() * math.Ldexp(1, -r.IntN(30)))
					}
				case 1: // zeros, negative zeros
					for j := range row {
						row[j] = float32(math.Copysign(0, float64(j%2)-0.5))
					}
				case 2: // subnormals
					for j := range row {
						row[j] = math.Float32frombits(uint32(r.IntN(1 << 23)))
					}
				case 3: // halves: top 127 makes the scale 1
					for j := range row {
						row[j] = float32(r.IntN(255)-127) + 0.5*float32(r.IntN(2))
					}
					row[0] = 127
				default:
					for j := range row {
						row[j] = float32(r.Float64()*2 - 1)
					}
				}
			}
			want := quantizeByRow(rows, n, dim)
			for _, procs := range []int{1, 3} {
				func() {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					if got := quantize(rows, n, dim); !reflect.DeepEqual(got, want) {
						t.Errorf("n=%d dim=%d, %d cores: blocks quantize otherwise than rows", n, dim, procs)
					}
				}()
			}
		}
	}
}

// TestRoundHalfAway: the quantizer's rounding gives math.Round's number at
// halves, next to them and across the range a row's components take (−0
// may come out +0, which quantizes the same).
func TestRoundHalfAway(t *testing.T) {
	xs := []float64{0, math.Copysign(0, -1), 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, -126.5, 127.49999999999999,
		math.Nextafter(0.5, 0), math.Nextafter(-0.5, 0), math.Nextafter(0.5, 1), math.Nextafter(2.5, 0),
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 1e-300, 1 << 51, -(1 << 51) - 0.5}
	r := rand.New(rand.NewPCG(25, 26))
	for range 100000 {
		xs = append(xs, (r.Float64()*2-1)*200, float64(r.IntN(401)-200)+0.5)
	}
	for _, x := range xs {
		if got, want := roundHalfAway(x), math.Round(x); got != want {
			t.Fatalf("roundHalfAway(%v) = %v, math.Round %v", x, got, want)
		}
	}
}

// TestAbsMax: the largest magnitude of a row, four lanes or not, and no
// answer for a row with a NaN or an infinity anywhere, tail included.
func TestAbsMax(t *testing.T) {
	for n := range 11 {
		row := make([]float32, n)
		var want float64
		for i := range row {
			row[i] = float32(i%3-1) * float32(i+1)
			want = max(want, math.Abs(float64(row[i])))
		}
		if got, ok := absMax(row); !ok || got != want {
			t.Errorf("n=%d: %v %v, want %v", n, got, ok, want)
		}
		for i := range row {
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
				b := slices.Clone(row)
				b[i] = bad
				if _, ok := absMax(b); ok {
					t.Errorf("n=%d: %v at %d not refused", n, bad, i)
				}
			}
		}
	}
}

// TestVectorDocHash: a document's hash is the one persisted indexes hold,
// sha256 over fmt's "%d:%s\x00%g\x00" for each part, for weights of every
// form %g writes and texts empty, long and not ASCII.
func TestVectorDocHash(t *testing.T) {
	weights := []float64{1, 0.5, 0.25, 1e-7, 2.5e21, 1e6, 123456789, -3, 0, math.Inf(1), math.NaN(), math.SmallestNonzeroFloat64}
	texts := []string{"", "x", "Ünïcödé: 日本語 \x00 nul", strings.Repeat("long text ", 5000)}
	for _, w := range weights {
		for _, text := range texts {
			d := VectorDoc{Parts: []Part{{Text: text, Weight: w}, {Text: "desc", Weight: 1}}}
			h := sha256.New()
			for _, p := range d.Parts {
				fmt.Fprintf(h, "%d:%s\x00%g\x00", len(p.Text), p.Text, p.Weight)
			}
			if got, want := d.Hash(), hex.EncodeToString(h.Sum(nil)[:16]); got != want {
				t.Errorf("weight %v, text of %d bytes: %s, want %s", w, len(text), got, want)
			}
		}
	}
}

// TestVectorsUnchangedShareRows: a build whose every document keeps its
// vector at its own row (a warm start, a rebuild with nothing changed)
// shares the previous index's rows and int8 columns instead of copying
// and quantizing them again, takes the documents' names, and ranks as a
// fresh build does; any other build copies.
func TestVectorsUnchangedShareRows(t *testing.T) {
	ctx := context.Background()
	var e axisEmbedder
	docs := []VectorDoc{vdoc("a", "a"), vdoc("b", "b"), vdoc("c", "c")}
	v1, _, err := BuildVectors(ctx, docs, "m", e.embed, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.texts.Store(0)
	renamed := slices.Clone(docs)
	renamed[1].Name = "b renamed"
	v2, st, err := BuildVectors(ctx, renamed, "m", e.embed, v1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reused != 3 || st.Embedded != 0 || st.Removed != 0 || e.texts.Load() != 0 {
		t.Errorf("stats %+v after embedding %d texts", st, e.texts.Load())
	}
	if &v2.rows[0] != &v1.rows[0] || &v2.quant.cols[0] != &v1.quant.cols[0] {
		t.Error("unchanged rows copied")
	}
	if v2.names[1] != "b renamed" || v1.names[1] == "b renamed" {
		t.Errorf("names %q, previous %q", v2.names, v1.names)
	}
	fresh, _, err := BuildVectors(ctx, renamed, "m", e.embed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fresh.quant, v2.quant) || !slices.Equal(fresh.rows, v2.rows) || !slices.Equal(fresh.hashes, v2.hashes) {
		t.Error("a shared build differs from a fresh one")
	}
	// One document fewer: rows move, so they are copied.
	v3, _, err := BuildVectors(ctx, docs[1:], "m", e.embed, v1)
	if err != nil {
		t.Fatal(err)
	}
	if &v3.rows[0] == &v1.rows[0] || v3.Len() != 2 {
		t.Error("rows shared though they moved")
	}
}
