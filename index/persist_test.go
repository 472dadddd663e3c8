package index

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"unsafe"
)

func encode(t testing.TB, write func(*bytes.Buffer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func persistFixtures(t testing.TB) (*BM25, *Vectors) {
	t.Helper()
	bm := NewBM25(docs, BM25Params{})
	var vdocs []VectorDoc
	for i := range 40 {
		vdocs = append(vdocs, vdoc(fmt.Sprintf("doc-%02d", i), fmt.Sprint("text ", i), "body"))
	}
	v, _, err := BuildVectors(context.Background(), vdocs, "model-x", randomEmbedder(32), nil)
	if err != nil {
		t.Fatal(err)
	}
	return bm, v
}

// A BM25 index and vectors read back from their binary form score exactly
// as the originals, and keep everything a rebuild reuses.
func TestBinaryRoundTrip(t *testing.T) {
	bm, v := persistFixtures(t)
	bm2, err := ReadBM25(encode(t, func(b *bytes.Buffer) error { return bm.WriteBinary(b) }))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"extract text from a PDF", "slow query plan", "release notes commits", "zebra"} {
		terms := QueryTerms(nil, q, 1)
		a, b := make([]float64, bm.Len()), make([]float64, bm2.Len())
		bm.ScoreWeighted(terms, [NumFields]float64{3, 2, 0.5}, a)
		bm2.ScoreWeighted(terms, [NumFields]float64{3, 2, 0.5}, b)
		if !slices.Equal(a, b) || bm.Ceiling(terms) != bm2.Ceiling(terms) {
			t.Errorf("%q: scores %v, read back %v", q, a, b)
		}
	}
	if !slices.Equal(bm.ids, bm2.ids) || bm.k1 != bm2.k1 || bm.weights != bm2.weights {
		t.Error("ids or parameters differ")
	}
	v2, err := ReadVectors(encode(t, func(b *bytes.Buffer) error { return v.WriteBinary(b) }))
	if err != nil {
		t.Fatal(err)
	}
	if v2.Model() != v.Model() || !slices.Equal(v2.IDs(), v.IDs()) || !slices.Equal(v2.hashes, v.hashes) || !slices.Equal(v2.names, v.names) {
		t.Fatal("metadata differs")
	}
	if !slices.Equal(v2.rows, v.rows) || !slices.Equal(v2.cols, v.cols) || !slices.Equal(v2.maxErr, v.maxErr) || !slices.Equal(v2.scale, v.scale) {
		t.Fatal("vectors differ")
	}
	empty, err := ReadVectors(encode(t, func(b *bytes.Buffer) error { return (&Vectors{model: "m"}).WriteBinary(b) }))
	if err != nil || empty.Len() != 0 {
		t.Fatalf("empty index: %v, %d", err, empty.Len())
	}
}

// The rows and postings are read in place whatever the input's alignment
// (the readers move the rest of it back when a slice would be misaligned),
// and read the same as a copy would.
func TestReadInPlace(t *testing.T) {
	bm, v := persistFixtures(t)
	bmData := encode(t, func(b *bytes.Buffer) error { return bm.WriteBinary(b) })
	vData := encode(t, func(b *bytes.Buffer) error { return v.WriteBinary(b) })
	within := func(p unsafe.Pointer, buf []byte) bool {
		a := uintptr(p)
		return a >= uintptr(unsafe.Pointer(&buf[0])) && a < uintptr(unsafe.Pointer(&buf[0]))+uintptr(len(buf))
	}
	terms := QueryTerms(nil, "extract text from a PDF body", 1)
	want := make([]float64, bm.Len())
	bm.ScoreWeighted(terms, [NumFields]float64{3, 2, 0.5}, want)
	for off := range 8 {
		buf := make([]byte, len(vData)+8)
		data := buf[off : off+len(vData)]
		copy(data, vData)
		v2, err := ReadVectors(data)
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		if !slices.Equal(v2.rows, v.rows) || !slices.Equal(v2.ids, v.ids) || !slices.Equal(v2.hashes, v.hashes) {
			t.Fatalf("offset %d: vectors differ", off)
		}
		if !within(unsafe.Pointer(&v2.rows[0]), buf) {
			t.Errorf("offset %d: rows copied", off)
		}
		if uintptr(unsafe.Pointer(&v2.rows[0]))%unsafe.Alignof(v2.rows[0]) != 0 {
			t.Errorf("offset %d: rows misaligned", off)
		}

		buf = make([]byte, len(bmData)+8)
		data = buf[off : off+len(bmData)]
		copy(data, bmData)
		bm2, err := ReadBM25(data)
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		got := make([]float64, bm2.Len())
		bm2.ScoreWeighted(terms, [NumFields]float64{3, 2, 0.5}, got)
		if !slices.Equal(got, want) || !slices.Equal(bm2.ids, bm.ids) {
			t.Fatalf("offset %d: scores %v, want %v", off, got, want)
		}
		if !within(unsafe.Pointer(&bm2.full[0]), buf) || !within(unsafe.Pointer(&bm2.body[0]), buf) {
			t.Errorf("offset %d: postings copied", off)
		}
		if uintptr(unsafe.Pointer(&bm2.full[0]))%unsafe.Alignof(bm2.full[0]) != 0 || uintptr(unsafe.Pointer(&bm2.body[0]))%unsafe.Alignof(bm2.body[0]) != 0 {
			t.Errorf("offset %d: postings misaligned", off)
		}
	}
}

// An array read in place is never moved over: a misaligned array after it
// moves back only over what was read since (its length, a value between
// them); an empty array first counts its length as read.
func TestInPlaceHeld(t *testing.T) {
	for _, between := range []bool{false, true} {
		var b bytes.Buffer
		e := &encoder{w: bufio.NewWriter(&b)}
		raw(e, []uint32{})
		raw(e, []uint32{1, 2, 3})
		if between {
			e.u64(9)
		}
		raw(e, []uint64{4, 5})
		if err := e.w.Flush(); err != nil {
			t.Fatal(err)
		}
		for off := range 8 {
			buf := make([]byte, b.Len()+8)
			data := buf[off : off+b.Len()]
			copy(data, b.Bytes())
			d := newDecoder(data)
			empty := inPlace[uint32](d, "empty")
			a := inPlace[uint32](d, "a")
			x := uint64(9)
			if between {
				x = d.u64("x") // copied out: c may move over it
			}
			c := inPlace[uint64](d, "c")
			if d.err != nil || len(empty) != 0 || !slices.Equal(a, []uint32{1, 2, 3}) || x != 9 || !slices.Equal(c, []uint64{4, 5}) || len(d.left()) != 0 {
				t.Fatalf("value between %v, offset %d: %v %v %d %v (%v, %d left)", between, off, empty, a, x, c, d.err, len(d.left()))
			}
		}
	}
}

// Every truncation and a flipped header byte are errors, not panics.
func TestBinaryCorrupt(t *testing.T) {
	bm, v := persistFixtures(t)
	for name, tc := range map[string]struct {
		data []byte
		read func([]byte) error
	}{
		"bm25":    {encode(t, func(b *bytes.Buffer) error { return bm.WriteBinary(b) }), func(d []byte) error { _, err := ReadBM25(d); return err }},
		"vectors": {encode(t, func(b *bytes.Buffer) error { return v.WriteBinary(b) }), func(d []byte) error { _, err := ReadVectors(d); return err }},
	} {
		for n := 0; n < len(tc.data); n += 1 + n/50 {
			// A copy each time: a reader may move bytes within its input.
			if err := tc.read(slices.Clone(tc.data[:n])); err == nil {
				t.Fatalf("%s: %d of %d bytes read without error", name, n, len(tc.data))
			}
		}
		bad := slices.Clone(tc.data)
		bad[3] ^= 0xff
		if err := tc.read(bad); err == nil {
			t.Errorf("%s: bad magic accepted", name)
		}
		if err := tc.read(append(slices.Clone(tc.data), 0)); err == nil {
			t.Errorf("%s: trailing byte accepted", name)
		}
	}
}

// TestReadBM25RepeatedTerm: a term table naming a term twice is corrupt
// (the terms are numbered by their place in it).
func TestReadBM25RepeatedTerm(t *testing.T) {
	data := repeatedTermIndex(t)
	if _, err := ReadBM25(data); !errors.Is(err, errCorrupt) {
		t.Fatalf("read: %v", err)
	}
}

// repeatedTermIndex is a BM25 file of two documents whose two terms were
// made the same.
func repeatedTermIndex(t testing.TB) []byte {
	docs := []Doc{{ID: "d1", Fields: [NumFields]string{"zebraq"}}, {ID: "d2", Fields: [NumFields]string{"zebrax"}}}
	bm := NewBM25(docs, BM25Params{})
	data := encode(t, func(b *bytes.Buffer) error { return bm.WriteBinary(b) })
	if bytes.Count(data, []byte("zebrax")) != 1 {
		t.Fatalf("fixture: %q", data)
	}
	return bytes.ReplaceAll(data, []byte("zebrax"), []byte("zebraq"))
}

// FuzzReadIndexFiles: any bytes either fail to decode or decode into
// indexes that can be queried without panicking.
func FuzzReadIndexFiles(f *testing.F) {
	bm, v := persistFixtures(f)
	f.Add(repeatedTermIndex(f))
	f.Add(encode(f, func(b *bytes.Buffer) error { return bm.WriteBinary(b) }))
	f.Add(encode(f, func(b *bytes.Buffer) error { return v.WriteBinary(b) }))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The readers take their input over (it may move within it), and
		// the fuzzing engine's must stay as it is.
		if ix, err := ReadBM25(bytes.Clone(data)); err == nil {
			s := make([]float64, ix.Len())
			ix.Score(QueryTerms(nil, "pdf query notes", 1), s)
		}
		if vs, err := ReadVectors(bytes.Clone(data)); err == nil && vs.dim > 0 && vs.Len() > 0 {
			q := make([]float32, vs.dim)
			q[0] = 1
			if p, err := vs.Prepare(q); err == nil {
				sims := make([]float64, vs.Len())
				p.Approximate(sims)
				if vs.Len() > 0 && math.IsInf(p.Exact(0), 0) {
					t.Log("infinite similarity")
				}
			}
		}
	})
}

// TestReadBM25PostingOrder: a term's postings that repeat a document or go
// back to an earlier one (never built; the body kernel's scatter relies on
// each document once per term) do not load.
func TestReadBM25PostingOrder(t *testing.T) {
	docs := []Doc{
		{ID: "d1", Fields: [NumFields]string{"a", "", "zebra one"}},
		{ID: "d2", Fields: [NumFields]string{"b", "", "zebra two"}},
		{ID: "d3", Fields: [NumFields]string{"c", "", "zebra three"}},
	}
	for name, docsOf := range map[string][3]int32{"as built": {0, 1, 2}, "repeated": {0, 1, 1}, "decreasing": {0, 2, 1}} {
		bm := NewBM25(docs, BM25Params{})
		tp := &bm.post[bm.terms["zebra"]]
		if len(tp.body) != 3 {
			t.Fatalf("fixture: %d body postings", len(tp.body))
		}
		for k := range tp.body {
			tp.body[k].doc = docsOf[k]
		}
		data := encode(t, func(b *bytes.Buffer) error { return bm.WriteBinary(b) })
		_, err := ReadBM25(data)
		if name == "as built" && err != nil || name != "as built" && !errors.Is(err, errCorrupt) {
			t.Fatalf("%s: read: %v", name, err)
		}
	}
}
