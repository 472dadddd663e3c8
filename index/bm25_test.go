package index

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var docs = []Doc{
	{ID: "pdf", Fields: [NumFields]string{"pdf forms", "Fill and extract text from PDF forms.", "Use pdftotext. Forms have fields."}},
	{ID: "sql", Fields: [NumFields]string{"sql tuning", "Optimize slow SQL queries.", "Run EXPLAIN, add an index, check the query plan. Mentions pdf once."}},
	{ID: "notes", Fields: [NumFields]string{"release notes", "Write release notes from git commits.", "Group commits by type."}},
}

func scores(ix *BM25, q string) []float64 {
	s := make([]float64, ix.Len())
	ix.Score(QueryTerms(nil, q, 1), s)
	return s
}

func TestBM25Ranking(t *testing.T) {
	ix := NewBM25(docs, BM25Params{})
	tests := []struct {
		q    string
		want int
	}{
		{"extract text from a PDF", 0},
		{"my query is slow", 1},
		{"explain plan", 1},
		{"write the release notes", 2},
		{"committing", 2}, // stemmed: commit
	}
	for _, tt := range tests {
		s := scores(ix, tt.q)
		best := 0
		for i := range s {
			if s[i] > s[best] {
				best = i
			}
		}
		if best != tt.want {
			t.Errorf("%q: best %s %v, want %s", tt.q, ix.ID(best), s, ix.ID(tt.want))
		}
	}
}

func TestBM25FieldWeights(t *testing.T) {
	// "pdf" is in pdf's name and sql's body: the name match must win, and
	// with body weight 0 the body match must score nothing.
	ix := NewBM25(docs, BM25Params{})
	s := scores(ix, "pdf")
	if !(s[0] > s[1] && s[1] > 0) {
		t.Errorf("scores %v: want name match > body match > 0", s)
	}
	noBody := NewBM25(docs, BM25Params{Weights: [NumFields]float64{3, 2, 0}, B: [NumFields]float64{0.3, 0.75, 0.75}})
	if s := scores(noBody, "pdf"); s[1] != 0 {
		t.Errorf("body weight 0: sql scored %v", s[1])
	}
}

func TestBM25CeilingAndIDF(t *testing.T) {
	ix := NewBM25(docs, BM25Params{})
	q := QueryTerms(nil, "slow zebra", 1)
	if ix.IDF("zebra") != 0 || ix.IDF("slow") <= 0 {
		t.Fatalf("IDF zebra %v slow %v", ix.IDF("zebra"), ix.IDF("slow"))
	}
	c := ix.Ceiling(q)
	want := (ix.IDF("slow") + ix.MaxIDF()) * (DefaultBM25Params.K1 + 1)
	if math.Abs(c-want) > 1e-9 {
		t.Errorf("Ceiling = %v, want %v", c, want)
	}
	s := make([]float64, ix.Len())
	ix.Score(q, s)
	for i, x := range s {
		if x < 0 || x >= c {
			t.Errorf("score %d = %v outside [0, ceiling %v)", i, x, c)
		}
	}
}

func TestQueryTerms(t *testing.T) {
	q := QueryTerms(nil, "Tests tests TESTING the plan", 1)
	q = QueryTerms(q, "plan review", 0.5)
	want := map[string]float64{"test": 1.5, "plan": 1.5, "review": 0.5}
	if len(q) != len(want) {
		t.Fatalf("terms %v", q)
	}
	for i, term := range q {
		if w, ok := want[term.Text]; !ok || math.Abs(w-term.Weight) > 1e-9 {
			t.Errorf("term %v, want weight %v", term, w)
		}
		if i > 0 && q[i-1].Text >= term.Text {
			t.Errorf("terms not sorted: %v", q)
		}
	}
}

func TestBM25Empty(t *testing.T) {
	ix := NewBM25(nil, BM25Params{})
	ix.Score(QueryTerms(nil, "anything", 1), nil)
	if ix.Len() != 0 {
		t.Error("empty index has documents")
	}
	ix = NewBM25([]Doc{{ID: "empty"}}, BM25Params{})
	s := make([]float64, 1)
	ix.Score(QueryTerms(nil, "anything", 1), s)
	if s[0] != 0 {
		t.Error("empty document scored")
	}
}

// TestAddBody: the body kernel gives addBodyGo's bits for every score,
// whatever the count of postings (around its eight-wide steps), the
// frequencies (zero, subnormal, huge, infinite, NaN) and the weights (a
// zero body weight adds nothing; 0.2 rounds wb·tf, which a fused
// multiply-add would not), from scores of +0, −0 or more.
func TestAddBody(t *testing.T) {
	if !useAVX512 {
		t.Log("no AVX-512: addBody is addBodyGo")
	}
	r := rand.New(rand.NewPCG(13, 14))
	const n = 300
	for _, c := range []*bodyTerm{{0.5, 3.7, 1.2}, {0.2, 3.7, 1.2}, {0.2, 0.01, 1.2}, {0, 2, 1.2}, {1e300, 1e-300, 0}} {
		for count := 0; count <= 41; count++ {
			// A strictly increasing subset of the documents, as built.
			var body []bodyPosting
			for _, d := range r.Perm(n)[:count] {
				body = append(body, bodyPosting{doc: int32(d)})
			}
			slices.SortFunc(body, func(a, b bodyPosting) int { return int(a.doc - b.doc) })
			for k := range body {
				body[k].tf = drawFreq(r)
			}
			got, want := startScores(r, n)
			addBody(got, body, c)
			addBodyGo(want, body, c)
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("weights %+v, %d postings, document %d: %v, want %v", *c, count, i, got[i], want[i])
				}
			}
		}
	}
}

// TestAddFull: the full-posting kernel gives addFullGo's bits, under the
// same conditions as TestAddBody, with each of the three frequencies drawn
// on its own and weights that leave fields out or round their products.
func TestAddFull(t *testing.T) {
	if !useAVX512 {
		t.Log("no AVX-512: addFull is addFullGo")
	}
	r := rand.New(rand.NewPCG(15, 16))
	const n = 300
	for _, c := range []*fullTerm{
		{3, 2, 0.5, 3.7, 1.2}, {0.3, 0.7, 0.2, 3.7, 1.2}, {0.1, 0.2, 0.3, 0.01, 1.2},
		{0, 0, 1, 2, 1.2}, {1, 0, 0, 2, 1.2}, {1e300, 1e300, 1e-300, 1e-300, 0},
	} {
		for count := 0; count <= 41; count++ {
			var full []posting
			for _, d := range r.Perm(n)[:count] {
				full = append(full, posting{doc: int32(d)})
			}
			slices.SortFunc(full, func(a, b posting) int { return int(a.doc - b.doc) })
			for k := range full {
				full[k].tf = [NumFields]float32{drawFreq(r), drawFreq(r), drawFreq(r)}
			}
			got, want := startScores(r, n)
			addFull(got, full, c)
			addFullGo(want, full, c)
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("weights %+v, %d postings, document %d: %v, want %v", *c, count, i, got[i], want[i])
				}
			}
		}
	}
}

// drawFreq draws a posting's frequency for the kernel tests: zero,
// subnormal, huge, NaN, infinite, negative or ordinary.
func drawFreq(r *rand.Rand) float32 {
	switch r.IntN(8) {
	case 0:
		return 0
	case 1:
		return math.SmallestNonzeroFloat32 * float32(1+r.IntN(9))
	case 2:
		return float32(r.ExpFloat64() * 1e30)
	case 3:
		return [...]float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -1}[r.IntN(4)]
	default:
		return float32(r.ExpFloat64())
	}
}

// startScores returns two equal score arrays of +0, −0 (kept where
// nothing is added) and other values, for a kernel and its Go loop.
func startScores(r *rand.Rand, n int) (got, want []float64) {
	got, want = make([]float64, n), make([]float64, n)
	for i := range got {
		switch r.IntN(3) {
		case 0:
			got[i] = r.Float64() * 10
		case 1:
			got[i] = math.Copysign(0, -1)
		}
		want[i] = got[i]
	}
	return got, want
}

// TestScoreWeightedShortScores: scores shorter than the documents panic
// before the kernel could write past them.
func TestScoreWeightedShortScores(t *testing.T) {
	ix := NewBM25(docs, BM25Params{})
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	ix.Score(QueryTerms(nil, "pdf forms", 1), make([]float64, ix.Len()-1))
}

// addTermsRef is AddTerms as first written, a term at a time with maps:
// the weights and order AddTerms must give.
func addTermsRef(dst []Term, terms []string, weight float64) []Term {
	at := make(map[string]int, len(dst))
	for i, t := range dst {
		at[t.Text] = i
	}
	count := make(map[string]int)
	for _, t := range terms {
		count[t]++
		w := weight
		if n := count[t]; n > 1 {
			if n > 5 {
				continue
			}
			w *= 0.25
		}
		if i, ok := at[t]; ok {
			dst[i].Weight += w
			continue
		}
		at[t] = len(dst)
		dst = append(dst, Term{Text: t, Weight: w})
	}
	slices.SortFunc(dst, func(a, b Term) int { return strings.Compare(a.Text, b.Text) })
	return dst
}

// TestAddTermsReference: several turns of random terms (repeats up to
// eight times, more than 64 terms, weights that round) merge into the
// weights, bit for bit, and the order the term-at-a-time pass gives.
func TestAddTermsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vocab := []string{"a", "b", "deploy", "deploy2", "é", "zeta", "pdf", "form", "x", "y", "table", "index"}
	for round := range 500 {
		var got, want []Term
		for turn := range 1 + round%4 {
			n := r.IntN(90)
			terms := make([]string, n)
			for i := range terms {
				terms[i] = vocab[r.IntN(1+r.IntN(len(vocab)))]
			}
			w := []float64{1, 0.35, 0.1, 1.0 / 3}[turn]
			got = AddTerms(got, terms, w)
			want = addTermsRef(want, slices.Clone(terms), w)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, turn %d: %v, want %v", round, turn, got, want)
			}
		}
	}
}
