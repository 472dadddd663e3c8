package index

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/analysis"
	"github.com/skillrouter/skillrouter/skills"
)

// refBM25 is the straightforward BM25F the index must reproduce bit for
// bit: terms kept per document, map-of-slices postings, one score loop.
type refBM25 struct {
	postings map[string][]posting
	idf      map[string]float64
	k1       float64
}

func newRefBM25(docs []Doc, p BM25Params) *refBM25 {
	p = p.withDefaults()
	n := len(docs)
	terms := make([][NumFields][]string, n)
	var total [NumFields]float64
	for i, d := range docs {
		for f := Field(0); f < NumFields; f++ {
			text := d.Fields[f]
			if f == FieldBody && p.MaxBodyChars > 0 && len(text) > p.MaxBodyChars {
				text = text[:p.MaxBodyChars]
			}
			terms[i][f] = analysis.Terms(text)
			total[f] += float64(len(terms[i][f]))
		}
	}
	var avg [NumFields]float64
	for f := range avg {
		avg[f] = 1
		if n > 0 && total[f] > 0 {
			avg[f] = total[f] / float64(n)
		}
	}
	ix := &refBM25{postings: map[string][]posting{}, idf: map[string]float64{}, k1: p.K1}
	for i := range docs {
		tf := map[string]*[NumFields]float32{}
		for f := Field(0); f < NumFields; f++ {
			if len(terms[i][f]) == 0 {
				continue
			}
			norm := 1 - p.B[f] + p.B[f]*float64(len(terms[i][f]))/avg[f]
			for _, t := range terms[i][f] {
				v := tf[t]
				if v == nil {
					v = new([NumFields]float32)
					tf[t] = v
				}
				v[f] += float32(1 / norm)
			}
		}
		for t, v := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: *v})
		}
	}
	for t, ps := range ix.postings {
		df := float64(len(ps))
		ix.idf[t] = math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
	}
	return ix
}

func (ix *refBM25) score(query []Term, w [NumFields]float64, scores []float64) {
	k1 := ix.k1
	for _, q := range query {
		idf := ix.idf[q.Text]
		if idf == 0 || q.Weight == 0 {
			continue
		}
		qw := q.Weight * idf * (k1 + 1)
		for _, p := range ix.postings[q.Text] {
			tf := w[0]*float64(p.tf[0]) + w[1]*float64(p.tf[1]) + w[2]*float64(p.tf[2])
			if tf > 0 {
				scores[p.doc] += qw * tf / (k1 + tf)
			}
		}
	}
}

// TestBM25MatchesReference: every score of the index equals the reference
// implementation's bit for bit, under several field weightings, on a
// generated corpus and (when present) the shared benchmark library.
func TestBM25MatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	vocab := strings.Fields("pdf form table query index deploy cluster chart report invoice parse render image audio review commit branch merge test lint schema migrate backup restore alert monitor token cache vector")
	words := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(vocab[r.IntN(len(vocab))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	var corpus []Doc
	for i := range 300 {
		corpus = append(corpus, Doc{ID: fmt.Sprint(i), Fields: [NumFields]string{words(r.IntN(3)), words(r.IntN(20)), words(r.IntN(200))}})
	}
	sets := map[string][]Doc{"generated": corpus}
	if dir := filepath.Join("..", "..", "shared", "bench", "skills"); dirExists(dir) {
		var real []Doc
		for i, s := range skills.Load(context.Background(), []string{dir}, skills.Options{}).Skills() {
			if i%4 == 0 { // a hundred real skills: the reference is slow under -race
				real = append(real, Doc{ID: s.ID, Fields: [NumFields]string{s.Name, s.Description, s.Body()}})
			}
		}
		sets["bench"] = real
	}
	for name, docs := range sets {
		got, want := NewBM25(docs, BM25Params{}), newRefBM25(docs, BM25Params{})
		// The same index from analyses kept across builds (router reloads):
		// some analysed one at a time, the rest from terms split by the
		// caller (a TermCounter, as the router's build does).
		ids, stats := make([]string, len(docs)), make([]*DocStats, len(docs))
		var tc TermCounter
		for i, d := range docs {
			ids[i] = d.ID
			if i%3 == 0 {
				stats[i] = Analyze(d, BM25Params{})
				continue
			}
			var terms [NumFields][]string
			for f := range terms {
				text := d.Fields[f]
				if Field(f) == FieldBody {
					text = BM25Params{}.BodyText(text)
				}
				terms[f] = analysis.Terms(text)
			}
			stats[i] = tc.Stats(&terms)
		}
		orig := slices.Clone(stats)
		kept := NewBM25Stats(ids, stats, BM25Params{})
		// The kept analyses were renumbered against kept's term table; a
		// build from them, in reverse order so terms get other numbers,
		// is the same index again.
		for i := range stats {
			if stats[i].dict == nil || describe(stats[i]) != describe(orig[i]) {
				t.Fatalf("%s: doc %d renumbered as\n%s\nwas\n%s", name, i, describe(stats[i]), describe(orig[i]))
			}
		}
		rids, rstats := slices.Clone(ids), slices.Clone(stats)
		slices.Reverse(rids)
		slices.Reverse(rstats)
		again := NewBM25Stats(rids, rstats, BM25Params{})
		for k := range 40 {
			q := QueryTerms(nil, words(1+k%12), 1)
			if k%3 == 0 {
				q = QueryTerms(q, docs[k%len(docs)].Fields[FieldDescription], 0.35)
			}
			for _, w := range [][NumFields]float64{{3, 2, 0.2}, {3, 2, 0.5}, {1, 1, 1}, {3, 2, 0}} {
				a, b := make([]float64, len(docs)), make([]float64, len(docs))
				c, d := make([]float64, len(docs)), make([]float64, len(docs))
				got.ScoreWeighted(q, w, a)
				want.score(q, w, b)
				kept.ScoreWeighted(q, w, c)
				again.ScoreWeighted(q, w, d)
				slices.Reverse(d)
				for i := range a {
					if math.Float64bits(d[i]) != math.Float64bits(b[i]) {
						t.Fatalf("%s: NewBM25Stats from renumbered analyses: query %v, weights %v, doc %d: %v, reference %v", name, q, w, i, d[i], b[i])
					}
					if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
						t.Fatalf("%s: query %v, weights %v, doc %d: %v, reference %v", name, q, w, i, a[i], b[i])
					}
					if math.Float64bits(c[i]) != math.Float64bits(b[i]) {
						t.Fatalf("%s: NewBM25Stats: query %v, weights %v, doc %d: %v, reference %v", name, q, w, i, c[i], b[i])
					}
				}
			}
			for _, term := range q {
				if got.IDF(term.Text) != want.idf[term.Text] {
					t.Fatalf("%s: IDF(%q) %v, reference %v", name, term.Text, got.IDF(term.Text), want.idf[term.Text])
				}
			}
		}
	}
}

// describe lists a DocStats' lengths, terms and counts.
func describe(d *DocStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %d:", d.Len, d.NumTerms())
	d.Each(func(term []byte, tf [NumFields]uint32) { fmt.Fprintf(&b, " %s%v", term, tf) })
	return b.String()
}

func dirExists(dir string) bool {
	info, err := os.Stat(dir)
	return err == nil && info.IsDir()
}
