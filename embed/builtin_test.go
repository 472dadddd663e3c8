package embed

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/analysis"
)

var corpus = []string{
	"pdf-forms\nFill and extract text from PDF forms and documents.",
	"sql-tuning\nOptimize slow SQL queries with indexes and EXPLAIN plans.",
	"release-notes\nWrite release notes and changelogs from git commits.",
	"k8s-deploy\nDeploy services to Kubernetes clusters with Helm charts.",
	"code-review\nReview pull requests for bugs, style and security issues.",
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestBuiltinRanksTheRightDocument(t *testing.T) {
	b := NewBuiltin(Config{}).Fit(corpus)
	docs, err := b.Embed(context.Background(), corpus)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  int
	}{
		{"my SQL query is slow, which index should I add?", 1},
		{"extract the text of this pdf", 0},
		{"write the changelog for v2", 2},
		{"deploying to kubernetes", 3},
		{"please review my pull request", 4},
		{"reviewing PRs", 4},             // stem + char n-grams
		{"optimise queries", 1},          // British spelling via n-grams
		{"helm chart for my service", 3}, // bigram/unigram overlap
	}
	for _, tt := range tests {
		q, _ := b.Embed(context.Background(), []string{tt.query})
		best, bestScore := -1, -2.0
		for i, d := range docs {
			if s := cosine(q[0], d); s > bestScore {
				best, bestScore = i, s
			}
		}
		if best != tt.want {
			t.Errorf("%q: best document %d (%.3f), want %d", tt.query, best, bestScore, tt.want)
		}
	}
}

func TestBuiltinVectors(t *testing.T) {
	b := NewBuiltin(Config{Dimensions: 256}).Fit(corpus)
	vecs, _ := b.Embed(context.Background(), []string{"Deploy to Kubernetes", "the and of", "", "Deploy to Kubernetes"})
	if len(vecs[0]) != 256 || b.Dimensions() != 256 {
		t.Fatalf("dimensions %d / %d, want 256", len(vecs[0]), b.Dimensions())
	}
	if !unitLength(vecs[0]) {
		t.Error("vector is not unit length")
	}
	for _, i := range []int{1, 2} {
		for _, x := range vecs[i] {
			if x != 0 {
				t.Errorf("text %d has no features but a non-zero vector", i)
				break
			}
		}
	}
	if !reflect.DeepEqual(vecs[0], vecs[3]) {
		t.Error("same text, different vectors")
	}
	again, _ := NewBuiltin(Config{Dimensions: 256}).Fit(corpus).Embed(context.Background(), []string{"Deploy to Kubernetes"})
	if !reflect.DeepEqual(vecs[0], again[0]) {
		t.Error("vectors differ between identical fits")
	}
}

func TestBuiltinUnknownWordsLowerTheScore(t *testing.T) {
	b := NewBuiltin(Config{}).Fit(corpus)
	v, _ := b.Embed(context.Background(), []string{
		corpus[3],
		"kubernetes",
		"kubernetes zebra giraffe platypus",
	})
	if !(cosine(v[1], v[0]) > cosine(v[2], v[0])) {
		t.Errorf("words the library never uses should dilute the match: %.3f vs %.3f", cosine(v[1], v[0]), cosine(v[2], v[0]))
	}
}

func TestBuiltinFitIsImmutable(t *testing.T) {
	base := NewBuiltin(Config{})
	before, _ := base.Embed(context.Background(), []string{"slow sql"})
	a := base.Fit(corpus)
	b := base.Fit(corpus[:3])
	after, _ := base.Embed(context.Background(), []string{"slow sql"})
	if !reflect.DeepEqual(before, after) {
		t.Error("Fit changed the receiver")
	}
	if a.Model() == b.Model() || a.Model() == base.Model() {
		t.Errorf("models %q, %q, %q: fitted states must differ", base.Model(), a.Model(), b.Model())
	}
	if c := base.Fit(corpus); c.Model() != a.Model() {
		t.Errorf("same corpus, different fingerprints %q and %q", a.Model(), c.Model())
	}
	if !strings.HasPrefix(a.Model(), builtinVersion+"-1024-") {
		t.Errorf("Model() = %q", a.Model())
	}
	if a.Name() != "builtin" || !a.Offline() {
		t.Error("Name/Offline")
	}
}

func TestBuiltinHonorsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	texts := make([]string, 200)
	for i := range texts {
		texts[i] = "some text"
	}
	if _, err := NewBuiltin(Config{}).Embed(ctx, texts); err == nil {
		t.Error("canceled context: want an error for a large batch")
	}
}

func FuzzBuiltin(f *testing.F) {
	b := NewBuiltin(Config{Dimensions: 64}).Fit(corpus)
	for _, s := range []string{"", "a", "HTTPServer's", "日本語テキスト", strings.Repeat("x", 200), "\xff\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := b.Embed(context.Background(), []string{s})
		if err != nil {
			t.Fatal(err)
		}
		var n float64
		for _, x := range v[0] {
			n += float64(x) * float64(x)
		}
		if n != 0 && !unitLength(v[0]) {
			t.Fatalf("%q: norm² %v", s, n)
		}
		// The precomputed vocabulary is a shortcut only: the same vector
		// without it. Fuzzed words mixed with library words reach both paths.
		full, _ := withVocab(b, nil).Embed(context.Background(), []string{s + " " + corpus[0] + " " + s})
		fast, _ := b.Embed(context.Background(), []string{s + " " + corpus[0] + " " + s})
		if !slices.Equal(full[0], fast[0]) {
			t.Fatalf("%q: vector with the vocabulary differs", s)
		}
		checkEmbedTerms(t, b, s, s+" "+corpus[0]+" "+s)
		// Walking only the touched slots adds up exactly as a pass over all.
		if dense := denseVector(b, s+" "+s+" "+corpus[1]); !slices.Equal(dense, mustEmbed(t, b, s+" "+s+" "+corpus[1])) {
			t.Fatalf("%q: vector differs from the dense computation", s)
		}
	})
}

// TestEmbedTerms: EmbedTerms gives Embed's vectors and, per text, the
// terms analysis.Terms gives, fitted (vocabulary words take their stems from
// it) or not.
func TestEmbedTerms(t *testing.T) {
	texts := []string{"", "the and of", "Tests tests TESTING the plan", "HTTPServer's don't can't",
		"日本語テキスト and café Straße", "deploy deploy kubernetes\nreview pull-requests; x y", "\xff\x00 weird bytes"}
	texts = append(texts, corpus...)
	for _, b := range []*Builtin{NewBuiltin(Config{}), NewBuiltin(Config{}).Fit(corpus)} {
		checkEmbedTerms(t, b, texts...)
	}
}

func checkEmbedTerms(t *testing.T, b *Builtin, texts ...string) {
	t.Helper()
	var got [][]string
	vecs, err := b.EmbedTerms(context.Background(), texts, func(i int, terms []string) {
		if i != len(got) {
			t.Fatalf("terms of text %d handed over as %d", len(got), i)
		}
		got = append(got, slices.Clone(terms))
	})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := b.Embed(context.Background(), texts)
	for i, text := range texts {
		if !slices.Equal(vecs[i], want[i]) {
			t.Errorf("%.40q: EmbedTerms' vector differs from Embed's", text)
		}
		if i >= len(got) || !slices.Equal(got[i], analysis.Terms(text)) {
			t.Errorf("%.40q: terms differ from analysis.Terms", text)
		}
	}
}

// TestSparseVectorIsDense: vector's walk over the touched slots gives the
// bits of the plain computation over every slot.
func TestSparseVectorIsDense(t *testing.T) {
	b := NewBuiltin(Config{}).Fit(corpus)
	small := NewBuiltin(Config{Dimensions: 8}).Fit(corpus) // every slot collides
	texts := append(slices.Clone(corpus), "", "the and of", "deploy deploy deploy deploy kubernetes",
		strings.Repeat("review pull requests ", 80), "zeppelin marmalade quixotic unknown words only")
	// Mixes of the corpus's words: long sums, where the order of adding
	// would show in the last bits.
	words := strings.Fields(strings.Join(corpus, " "))
	r := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		n := 1 + r.IntN(300)
		mix := make([]string, n)
		for i := range mix {
			mix[i] = words[r.IntN(len(words))]
		}
		texts = append(texts, strings.Join(mix, " "))
	}
	for _, e := range []*Builtin{b, small} {
		for _, text := range texts {
			if got, want := mustEmbed(t, e, text), denseVector(e, text); !slices.Equal(got, want) {
				t.Errorf("%d dimensions, %.40q: sparse vector differs from the dense one", e.opts.Dimensions, text)
			}
		}
	}
}

// TestLogCount: the table gives math.Log's bits.
func TestLogCount(t *testing.T) {
	for _, x := range []float64{1, 2, 3, 7, 63, 64, 65, 200, 1e6, 0.5, 2.5} {
		if got, want := logCount(x), math.Log(x); got != want {
			t.Errorf("logCount(%v) = %v, math.Log %v", x, got, want)
		}
	}
	for n := 1; n < 100; n++ {
		if logCount(float64(n)) != math.Log(float64(n)) {
			t.Errorf("logCount(%d)", n)
		}
	}
}

// builtinGolden is the SHA-256 of the test corpus's vectors (and a few odd
// texts): any change to feature extraction or weighting changes it. Such a
// change must bump builtinVersion (cached vectors and saved indexes are
// keyed by it) and then update this value.
const builtinGolden = "89463e4f25ba265f1d704e976562ae117af03150b807fd723c447f40cdca5047"

func TestBuiltinVectorsGolden(t *testing.T) {
	b := NewBuiltin(Config{}).Fit(corpus)
	texts := append(slices.Clone(corpus), "", "the and of", "zeppelin marmalade", strings.Repeat("deploy review ", 50))
	h := sha256.New()
	for _, text := range texts {
		for _, x := range mustEmbed(t, b, text) {
			binary.Write(h, binary.LittleEndian, math.Float32bits(x))
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != builtinGolden {
		t.Errorf("builtin vectors changed: hash %s, want %s (bump builtinVersion, then update builtinGolden)", got, builtinGolden)
	}
}

func mustEmbed(t *testing.T, b *Builtin, text string) []float32 {
	t.Helper()
	v, err := b.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

// denseVector is the builtin's vector computed the plain way: every slot
// cleared, summed and scaled.
func denseVector(b *Builtin, text string) []float32 {
	var fs featureSet
	fs.extract(text, &b.opts, b.vocab)
	dim := b.opts.Dimensions
	v := make([]float32, dim)
	weights := [numFamilies]float64{b.opts.Unigram, b.opts.Bigram, b.opts.CharGram}
	acc := make([]float64, dim)
	for k := 0; k < numFamilies; k++ {
		if weights[k] == 0 || len(fs.order[k]) == 0 {
			continue
		}
		clear(acc)
		var unseen float64
		for i := range fs.order[k] {
			idx, w, known := b.feature(&fs, k, i, dim)
			if !known {
				unseen += w * w
				continue
			}
			acc[idx] += w
		}
		acc[0] = math.Sqrt(unseen)
		var norm float64
		for _, x := range acc {
			norm += x * x
		}
		if norm == 0 {
			continue
		}
		s := weights[k] / math.Sqrt(norm)
		for i, x := range acc {
			if x != 0 {
				v[i] += float32(x * s)
			}
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		s := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= s
		}
	}
	return v
}

// TestBuiltinParallelSame: fitting and embedding a library on several cores
// gives the fitted state and vectors one core gives, bit for bit.
func TestBuiltinParallelSame(t *testing.T) {
	big := mixedCorpus(rand.New(rand.NewPCG(11, 12)), 500, " ")
	fitEmbed := func(procs int) (*Builtin, [][]float32) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return fitAndEmbed(t, big)
	}
	b1, v1 := fitEmbed(1)
	b4, v4 := fitEmbed(4)
	requireSameFit(t, "4 cores against 1", b1, v1, b4, v4)
}

// TestBuiltinFitCountingVocab: fitting with the counting vocabulary (a
// word's stem and n-grams computed once per worker), with it capped, and
// without it gives the same fitted state and vectors, bit for bit.
func TestBuiltinFitCountingVocab(t *testing.T) {
	big := mixedCorpus(rand.New(rand.NewPCG(13, 14)), 300, " ", "\n", ": ", "'s ", "—")
	fitEmbed := func(limit int) (*Builtin, [][]float32) {
		defer func(old int) { maxCountingVocab = old }(maxCountingVocab)
		maxCountingVocab = limit
		return fitAndEmbed(t, big)
	}
	b0, v0 := fitEmbed(0)
	for _, limit := range []int{7, 1 << 17} {
		b, v := fitEmbed(limit)
		requireSameFit(t, fmt.Sprintf("counting vocabulary of %d against none", limit), b0, v0, b, v)
	}
}

// TestBuiltinFitReference: Fit's document frequencies, counted straight from
// each text's words with per-document stamps, are the plain count of the
// distinct features extract gathers per text, family by family, whatever
// the families' weights, across the parallel workers' merge and when the
// stamps wrap.
func TestBuiltinFitReference(t *testing.T) {
	big := mixedCorpus(rand.New(rand.NewPCG(15, 16)), 400, " ", "\n", ", ", "'s ")
	for _, o := range []BuiltinOptions{{}, {Unigram: 1, CharGram: 0.5}, {Bigram: 1}, {CharGram: 1, CharMin: 2, CharMax: 6}} {
		b := NewBuiltinWith(o)
		df := map[uint64]int{}
		var fs featureSet
		for _, text := range big {
			fs.extract(text, &b.opts, nil)
			for k := range fs.order {
				for _, h := range fs.order[k] {
					df[h]++
				}
			}
		}
		n := float64(len(big))
		want := make(map[uint64]float32, len(df))
		for h, d := range df {
			want[h] = float32(math.Log((n+1)/(float64(d)+1)) + 1)
		}
		for _, procs := range []int{1, 3} {
			for _, last := range []uint32{math.MaxUint32, firstStamp + 3*numFamilies} {
				prev := runtime.GOMAXPROCS(procs)
				lastStamp = last // small: the stamps wrap every few documents
				got := b.Fit(big).idf
				lastStamp = math.MaxUint32
				runtime.GOMAXPROCS(prev)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("options %+v, %d cores, last stamp %d: %d IDFs, want %d (or values differ)", o, procs, last, len(got), len(want))
				}
			}
		}
	}
}

// fitAndEmbed fits a builtin to corpus and embeds the corpus with it.
func fitAndEmbed(t *testing.T, corpus []string) (*Builtin, [][]float32) {
	t.Helper()
	b := NewBuiltin(Config{}).Fit(corpus)
	v, err := b.Embed(context.Background(), corpus)
	if err != nil {
		t.Fatal(err)
	}
	return b, v
}

// requireSameFit fails unless two fits (model, IDF table, vocabulary) and
// the vectors they gave are the same, bit for bit.
func requireSameFit(t *testing.T, what string, a *Builtin, va [][]float32, b *Builtin, vb [][]float32) {
	t.Helper()
	if a.Model() != b.Model() || !reflect.DeepEqual(a.idf, b.idf) || !reflect.DeepEqual(a.vocab, b.vocab) {
		t.Fatalf("%s: fits differ: %s and %s", what, a.Model(), b.Model())
	}
	for i := range va {
		if !slices.Equal(va[i], vb[i]) {
			t.Fatalf("%s, text %d: vectors differ", what, i)
		}
	}
}

// mixedCorpus makes n texts of pieces of the test corpus, joined by
// separators picked from seps.
func mixedCorpus(r *rand.Rand, n int, seps ...string) []string {
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 5 + r.IntN(60) {
			b.WriteString(corpus[r.IntN(len(corpus))][:8+r.IntN(20)])
			b.WriteString(seps[r.IntN(len(seps))])
		}
		out[i] = b.String()
	}
	return out
}

// A scratch that embedded a long document (a library build) is not pooled:
// the queries after it would probe its large tables, out of the core's
// caches. One that embedded a query is.
func TestPooledScratchStaysSmall(t *testing.T) {
	b := NewBuiltin(Config{})
	var long strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&long, "word%d ", i)
	}
	for _, tt := range []struct {
		text   string
		pooled bool
	}{{long.String(), false}, {"review this pull request", true}} {
		fs := new(featureSet)
		b.vector(tt.text, fs, true)
		putFeatureSet(fs)
		found := false
		for range 8 {
			if featureSets.Get().(*featureSet) == fs {
				found = true
			}
		}
		if found != tt.pooled && !(tt.pooled && raceEnabled) { // -race drops some Puts
			t.Errorf("%d-byte text: pooled %v, want %v", len(tt.text), found, tt.pooled)
		}
	}
}
