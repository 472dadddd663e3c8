// Package index holds the two indexes the router ranks with: a BM25F keyword
// index over analysis terms and a vector index (chromem-go) over embeddings.
// Indexes are immutable once built; a new library builds new indexes that the
// router swaps in whole.
package index

import (
	"math"
	"sort"

	"github.com/skillrouter/skillrouter/analysis"
)

// Field is a part of a skill that BM25 weighs separately.
type Field int

const (
	FieldName Field = iota
	FieldDescription
	FieldBody
	NumFields
)

// Doc is one skill as the keyword index sees it.
type Doc struct {
	ID     string
	Fields [NumFields]string // name, description, body
}

// BM25Params tune the index. Zero values take DefaultBM25Params' values.
type BM25Params struct {
	K1      float64            // term-frequency saturation
	B       [NumFields]float64 // per-field length normalization
	Weights [NumFields]float64 // per-field weights (BM25F)
	// MaxBodyChars caps the body text indexed; skill bodies run to tens of
	// kilobytes of examples, and their tail adds noise more than signal.
	MaxBodyChars int
}

// DefaultBM25Params: the name and description say what a skill is for, the
// body mostly says how. Measured on the upstream-queries and MetaTool sets
// (router's quality test): a flat 1/1/1 weighting or name+description only
// rank worse; the router picks body weights per strategy (ScoreWeighted).
var DefaultBM25Params = BM25Params{
	K1:           1.2,
	B:            [NumFields]float64{0.3, 0.75, 0.75},
	Weights:      [NumFields]float64{3, 2, 0.5},
	MaxBodyChars: 8000,
}

func (p BM25Params) withDefaults() BM25Params {
	d := DefaultBM25Params
	if p.K1 > 0 {
		d.K1 = p.K1
	}
	if p.Weights != ([NumFields]float64{}) {
		d.Weights = p.Weights
		d.B = p.B
	}
	if p.MaxBodyChars != 0 {
		d.MaxBodyChars = p.MaxBodyChars
	}
	return d
}

type posting struct {
	doc int32
	tf  [NumFields]float32 // per-field length-normalized term frequency
}

// BM25 is a BM25F index: per-field term frequencies are length-normalized,
// weighted and summed before the usual saturation, so a term that appears in
// both name and description is not counted as two independent matches.
type BM25 struct {
	ids      []string
	postings map[string][]posting
	idf      map[string]float64
	k1       float64
	weights  [NumFields]float64
}

// Term is one query term with its weight (1 for the latest message; less
// for terms blended in from earlier turns).
type Term struct {
	Text   string
	Weight float64
}

// DocStats is one document as BM25 counts it: per field its length in
// terms, and each distinct term with its count per field. Analysing the
// text is most of a build, so a caller that rebuilds often (a library
// that changes one skill at a time) keeps the DocStats of unchanged
// documents and passes them to NewBM25Stats.
type DocStats struct {
	Len   [NumFields]int32
	Terms []string
	TF    [][NumFields]uint16
}

// Analyze counts doc's terms as NewBM25 would.
func Analyze(d Doc, p BM25Params) *DocStats {
	p = p.withDefaults()
	st := &DocStats{}
	at := map[string]int{}
	for f := Field(0); f < NumFields; f++ {
		text := d.Fields[f]
		if f == FieldBody && p.MaxBodyChars > 0 && len(text) > p.MaxBodyChars {
			text = text[:p.MaxBodyChars]
		}
		terms := analysis.Terms(text)
		st.Len[f] = int32(len(terms))
		for _, t := range terms {
			i, ok := at[t]
			if !ok {
				i = len(st.Terms)
				at[t] = i
				st.Terms = append(st.Terms, t)
				st.TF = append(st.TF, [NumFields]uint16{})
			}
			if st.TF[i][f] < math.MaxUint16 {
				st.TF[i][f]++
			}
		}
	}
	return st
}

// NewBM25 indexes docs. Document order is kept: scores are indexed like docs.
func NewBM25(docs []Doc, p BM25Params) *BM25 {
	ids := make([]string, len(docs))
	stats := make([]*DocStats, len(docs))
	for i, d := range docs {
		ids[i], stats[i] = d.ID, Analyze(d, p)
	}
	return NewBM25Stats(ids, stats, p)
}

// NewBM25Stats indexes documents already analysed (see DocStats), in order.
func NewBM25Stats(ids []string, stats []*DocStats, p BM25Params) *BM25 {
	p = p.withDefaults()
	n := len(ids)
	var total [NumFields]float64
	postings := 0
	for _, st := range stats {
		for f := range total {
			total[f] += float64(st.Len[f])
		}
		postings += len(st.Terms)
	}
	var avg [NumFields]float64
	for f := range avg {
		avg[f] = 1
		if n > 0 && total[f] > 0 {
			avg[f] = total[f] / float64(n)
		}
	}
	// Two passes: document frequencies first, then every posting list cut
	// from one slab (appending term by term was most of a rebuild).
	df := make(map[string]int32, postings/4+16)
	for _, st := range stats {
		for _, t := range st.Terms {
			df[t]++
		}
	}
	ix := &BM25{
		ids:      append([]string(nil), ids...),
		postings: make(map[string][]posting, len(df)),
		idf:      make(map[string]float64, len(df)),
		k1:       p.K1,
		weights:  p.Weights,
	}
	slab := make([]posting, postings)
	at := 0
	for t, d := range df {
		ix.postings[t] = slab[at : at : at+int(d)]
		at += int(d)
		ix.idf[t] = math.Log(1 + (float64(n)-float64(d)+0.5)/(float64(d)+0.5))
	}
	for i, st := range stats {
		var inv [NumFields]float32
		for f := range inv {
			inv[f] = float32(1 / (1 - p.B[f] + p.B[f]*float64(st.Len[f])/avg[f]))
		}
		for k, t := range st.Terms {
			ps := posting{doc: int32(i)}
			for f := range inv {
				ps.tf[f] = float32(st.TF[k][f]) * inv[f]
			}
			ix.postings[t] = append(ix.postings[t], ps)
		}
	}
	return ix
}

// Len is the number of documents.
func (ix *BM25) Len() int { return len(ix.ids) }

// ID returns the id of document i.
func (ix *BM25) ID(i int) string { return ix.ids[i] }

// IDF returns the inverse document frequency of a term; 0 for a term no
// document has.
func (ix *BM25) IDF(term string) float64 { return ix.idf[term] }

// MaxIDF is the IDF a term found in no document would get if it appeared in
// one: the ceiling against which query coverage is judged.
func (ix *BM25) MaxIDF() float64 {
	n := float64(len(ix.ids))
	return math.Log(1 + (n-1+0.5)/(1+0.5))
}

// Score adds each document's BM25F score for the query into scores (indexed
// like the documents; len(scores) must be Len()), with the index's field
// weights.
func (ix *BM25) Score(query []Term, scores []float64) {
	ix.ScoreWeighted(query, ix.weights, scores)
}

// ScoreWeighted is Score with other field weights: per-field frequencies are
// kept, so one index serves strategies that weigh fields differently.
func (ix *BM25) ScoreWeighted(query []Term, w [NumFields]float64, scores []float64) {
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

// Ceiling is the score a document matching every query term infinitely often
// would get; Score/Ceiling is a length-independent match strength in [0,1)
// that thresholds can be set on. Terms no document has count at MaxIDF, so a
// query about things the library does not cover stays low.
func (ix *BM25) Ceiling(query []Term) float64 {
	maxIDF := ix.MaxIDF()
	var c float64
	for _, q := range query {
		idf := ix.idf[q.Text]
		if idf == 0 {
			idf = maxIDF
		}
		c += q.Weight * idf * (ix.k1 + 1)
	}
	return c
}

// QueryTerms analyzes text into deduplicated terms of the given weight,
// merged into dst and sorted by term (a deterministic scoring order). A term
// already in dst (from another turn) adds its weight again; a term repeated
// within text adds a quarter of its weight per repeat, at most doubling it,
// so a pasted log repeating a word does not outweigh the question.
func QueryTerms(dst []Term, text string, weight float64) []Term {
	at := make(map[string]int, len(dst)+16)
	for i, t := range dst {
		at[t.Text] = i
	}
	count := make(map[string]int, 16)
	for _, t := range analysis.Terms(text) {
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
	sort.Slice(dst, func(i, j int) bool { return dst[i].Text < dst[j].Text })
	return dst
}
