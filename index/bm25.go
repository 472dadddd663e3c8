// Package index holds the two indexes the router ranks with: a BM25F keyword
// index over analysis terms and a vector index (chromem-go) over embeddings.
// Indexes are immutable once built; a new library builds new indexes that the
// router swaps in whole.
package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

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

// posting is a document with a term in its name or description: per-field
// length-normalized term frequencies.
type posting struct {
	doc int32
	tf  [NumFields]float32
}

// bodyPosting is a document with a term in its body only: most postings of
// a library of long bodies, at half the size.
type bodyPosting struct {
	doc int32
	tf  float32
}

// termPostings are the documents having one term, each list in strictly
// increasing document order (so a document appears once in each, which
// the body kernel's scatter relies on).
type termPostings struct {
	idf  float64
	full []posting
	body []bodyPosting
}

// BM25 is a BM25F index: per-field term frequencies are length-normalized,
// weighted and summed before the usual saturation, so a term that appears in
// both name and description is not counted as two independent matches.
type BM25 struct {
	ids     []string
	terms   map[string]int32 // term -> index in post
	dict    *termTable       // the terms by index
	post    []termPostings   // their postings are runs of full and body, in term order
	full    []posting
	body    []bodyPosting
	k1      float64
	weights [NumFields]float64
}

// Term is one query term with its weight (1 for the latest message; less
// for terms blended in from earlier turns).
type Term struct {
	Text   string
	Weight float64
}

// DocStats is one analysed document: per field its length in terms, and
// each distinct term with its count per field. Analysing the text is most
// of a build, so a caller that rebuilds often (a library that changes one
// skill at a time) keeps the DocStats of unchanged documents and passes
// them to NewBM25Stats. A DocStats is not changed once made.
//
// The terms and counts are one varint-encoded byte string, not a []string
// and a count array: a library's DocStats are kept for as long as it
// serves, and at 10,000 skills millions of string headers were millions of
// pointers for every garbage collection to trace (a third of a routed
// request's CPU), and twice the bytes.
//
// An index built from DocStats re-encodes them against its term table
// (see NewBM25Stats): a term number and only the counts that are not zero,
// half the bytes of the term's text and every count.
type DocStats struct {
	Len  [NumFields]int32
	n    int    // distinct terms
	enc  []byte // per term: uvarint length, the term, uvarint count per field; or, with dict, see encodeNumbered
	dict *termTable
}

// NumTerms is the number of distinct terms.
func (d *DocStats) NumTerms() int { return d.n }

// Each calls fn with every distinct term, in first-occurrence order, and
// its count per field. term is only valid during the call.
func (d *DocStats) Each(fn func(term []byte, tf [NumFields]uint32)) {
	b := d.enc
	if d.dict != nil {
		for len(b) > 0 {
			v, k := binary.Uvarint(b)
			b = b[k:]
			var tf [NumFields]uint32
			for f := range tf {
				if v&(1<<f) != 0 {
					c, k := binary.Uvarint(b)
					tf[f], b = uint32(c), b[k:]
				}
			}
			fn(d.dict.term(int32(v>>NumFields)), tf)
		}
		return
	}
	for len(b) > 0 {
		l, k := binary.Uvarint(b)
		b = b[k:]
		term := b[:l]
		b = b[l:]
		var tf [NumFields]uint32
		for f := range tf {
			c, k := binary.Uvarint(b)
			tf[f], b = uint32(c), b[k:]
		}
		fn(term, tf)
	}
}

// analyse splits a document into its distinct terms and their counts;
// seen is scratch.
func analyse(d Doc, maxBody int, seen map[string]int) *DocStats {
	var terms [NumFields][]string
	var buf []string
	for f := Field(0); f < NumFields; f++ {
		text := d.Fields[f]
		if f == FieldBody {
			text = bodyText(text, maxBody)
		}
		start := len(buf)
		buf = analysis.AppendTerms(buf, text)
		terms[f] = buf[start:len(buf):len(buf)]
	}
	return countTerms(&terms, seen)
}

// bodyText is the part of a body that is indexed: its first maxBody bytes
// (0: all of it).
func bodyText(body string, maxBody int) string {
	if maxBody > 0 && len(body) > maxBody {
		return body[:maxBody]
	}
	return body
}

// BodyText is the part of a document's body NewBM25 indexes with p.
func (p BM25Params) BodyText(body string) string {
	return bodyText(body, p.withDefaults().MaxBodyChars)
}

// TermCounter makes DocStats from documents already split into terms, for
// a caller that needs the terms too (one analysis of the text, not two).
// Its scratch is reused: one per goroutine.
type TermCounter struct{ seen map[string]int }

// Stats counts terms: per field, analysis.AppendTerms of the field's text,
// the body cut by BM25Params.BodyText first. The result is what Analyze
// gives for that document.
func (c *TermCounter) Stats(terms *[NumFields][]string) *DocStats {
	if c.seen == nil {
		c.seen = map[string]int{}
	}
	return countTerms(terms, c.seen)
}

// countTerms counts each distinct term per field; seen is scratch.
func countTerms(terms *[NumFields][]string, seen map[string]int) *DocStats {
	out := &DocStats{}
	clear(seen)
	var distinct []string
	var tfs [][NumFields]uint32
	size := 0
	for f := Field(0); f < NumFields; f++ {
		out.Len[f] = int32(len(terms[f]))
		for _, t := range terms[f] {
			k, ok := seen[t]
			if !ok {
				k = len(distinct)
				seen[t] = k
				distinct = append(distinct, t)
				tfs = append(tfs, [NumFields]uint32{})
				size += len(t) + 1 + int(NumFields)
			}
			tfs[k][f]++
		}
	}
	enc := make([]byte, 0, size+size/8)
	for k, t := range distinct {
		enc = binary.AppendUvarint(enc, uint64(len(t)))
		enc = append(enc, t...)
		for _, c := range tfs[k] {
			enc = binary.AppendUvarint(enc, uint64(c))
		}
	}
	out.n, out.enc = len(distinct), slices.Clip(enc)
	return out
}

// Analyze counts doc's terms as NewBM25 would.
func Analyze(d Doc, p BM25Params) *DocStats {
	p = p.withDefaults()
	return analyse(d, p.MaxBodyChars, map[string]int{})
}

// analyseRange analyses docs[lo:hi] into out[0:hi-lo] on every core.
func analyseRange(docs []Doc, out []*DocStats, lo, hi, maxBody int) {
	workers := max(1, min(runtime.GOMAXPROCS(0), 8, hi-lo))
	if workers == 1 {
		seen := map[string]int{}
		for i := lo; i < hi; i++ {
			out[i-lo] = analyse(docs[i], maxBody, seen)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[string]int{}
			for i := lo + w; i < hi; i += workers {
				out[i-lo] = analyse(docs[i], maxBody, seen)
			}
		}()
	}
	wg.Wait()
}

// NewBM25 indexes docs. Document order is kept: scores are indexed like docs.
// Documents are analysed on every core, a chunk at a time (only a chunk's
// analyses are held at once), and the postings are laid out in two
// contiguous arrays sized exactly.
func NewBM25(docs []Doc, p BM25Params) *BM25 {
	p = p.withDefaults()
	b := newBM25Builder(len(docs), p)
	for i, d := range docs {
		b.ix.ids[i] = d.ID
	}
	const chunk = 256
	analysed := make([]*DocStats, chunk)
	for lo := 0; lo < len(docs); lo += chunk {
		hi := min(lo+chunk, len(docs))
		analyseRange(docs, analysed, lo, hi, p.MaxBodyChars)
		for i := lo; i < hi; i++ {
			b.add(i, analysed[i-lo])
			analysed[i-lo] = nil
		}
	}
	return b.finish(p)
}

// NewBM25Stats indexes documents already analysed (see DocStats), in
// order: the same index NewBM25 builds from the documents. It replaces
// each stats[i] with an equal DocStats numbered against the index's term
// table, which is what a caller keeping them for the next build should
// keep.
func NewBM25Stats(ids []string, stats []*DocStats, p BM25Params) *BM25 {
	if len(stats) != len(ids) {
		// With fewer statistics than ids, the last document would be
		// credited with every posting of the missing ones, twice in a term.
		panic(fmt.Sprintf("index: %d documents' statistics for %d ids", len(stats), len(ids)))
	}
	p = p.withDefaults()
	b := newBM25Builder(len(ids), p)
	copy(b.ix.ids, ids)
	// The statistics say how many (document, term) pairs there are: sized
	// once, the two arrays leave no garbage behind (~80 MB of it at
	// 10,000 skills, grown by doubling, on every rebuild).
	pairs := 0
	for _, st := range stats {
		pairs += st.n
	}
	b.rawTerm, b.rawCount = make([]int32, 0, pairs), make([][NumFields]uint32, 0, pairs)
	for i, st := range stats {
		b.add(i, st)
	}
	ix := b.finish(p)
	b.encodeNumbered(stats)
	return ix
}

// encodeNumbered re-encodes each document's terms as numbers into the
// finished index's term table: per term uvarint(number<<NumFields | mask),
// mask having bit f set when field f counts the term, then those counts
// as uvarints, in the order the document had them.
func (b *bm25Builder) encodeNumbered(stats []*DocStats) {
	var enc []byte
	for i, st := range stats {
		enc = enc[:0]
		for k := b.docStart[i]; k < b.docStart[i+1]; k++ {
			c := b.rawCount[k]
			mask := uint64(0)
			for f := range c {
				if c[f] > 0 {
					mask |= 1 << f
				}
			}
			enc = binary.AppendUvarint(enc, uint64(b.rawTerm[k])<<NumFields|mask)
			for f := range c {
				if c[f] > 0 {
					enc = binary.AppendUvarint(enc, uint64(c[f]))
				}
			}
		}
		stats[i] = &DocStats{Len: st.Len, n: st.n, enc: slices.Clone(enc), dict: b.ix.dict}
	}
}

// bm25Builder gathers each document's distinct terms as term numbers with
// their counts, in document order, and the field lengths.
type bm25Builder struct {
	ix       *BM25
	lengths  [][NumFields]int32
	docStart []int
	rawTerm  []int32
	rawCount [][NumFields]uint32
	df       []int32 // documents per term
	full     []int32 // of them, with the term in name or description
}

func newBM25Builder(n int, p BM25Params) *bm25Builder {
	return &bm25Builder{
		ix:       &BM25{ids: make([]string, n), terms: map[string]int32{}, k1: p.K1, weights: p.Weights},
		lengths:  make([][NumFields]int32, n),
		docStart: make([]int, n+1),
	}
}

// add takes document i's analysis; documents are added in order.
func (b *bm25Builder) add(i int, a *DocStats) {
	b.lengths[i] = a.Len
	b.docStart[i] = len(b.rawTerm)
	a.Each(func(t []byte, counts [NumFields]uint32) {
		id, ok := b.ix.terms[string(t)]
		if !ok {
			id = int32(len(b.df))
			b.ix.terms[string(t)] = id
			b.df, b.full = append(b.df, 0), append(b.full, 0)
		}
		b.df[id]++
		if counts[FieldName] > 0 || counts[FieldDescription] > 0 {
			b.full[id]++
		}
		b.rawTerm = append(b.rawTerm, id)
		b.rawCount = append(b.rawCount, counts)
	})
}

func (b *bm25Builder) finish(p BM25Params) *BM25 {
	ix, df, full := b.ix, b.df, b.full
	n := len(ix.ids)
	b.docStart[n] = len(b.rawTerm)
	ix.internTerms()

	var total [NumFields]float64
	for _, l := range b.lengths {
		for f := range total {
			total[f] += float64(l[f])
		}
	}
	var avg [NumFields]float64
	for f := range avg {
		avg[f] = 1
		if n > 0 && total[f] > 0 {
			avg[f] = total[f] / float64(n)
		}
	}
	ix.post = make([]termPostings, len(df))
	var nFull, nBody int
	for id := range df {
		nFull += int(full[id])
		nBody += int(df[id] - full[id])
	}
	fullAll, bodyAll := make([]posting, 0, nFull), make([]bodyPosting, 0, nBody)
	ix.full, ix.body = fullAll[:nFull], bodyAll[:nBody]
	for id := range ix.post {
		tp := &ix.post[id]
		d := float64(df[id])
		tp.idf = math.Log(1 + (float64(n)-d+0.5)/(d+0.5))
		tp.full = fullAll[len(fullAll) : len(fullAll) : len(fullAll)+int(full[id])]
		fullAll = fullAll[:len(fullAll)+int(full[id])]
		nb := int(df[id] - full[id])
		tp.body = bodyAll[len(bodyAll) : len(bodyAll) : len(bodyAll)+nb]
		bodyAll = bodyAll[:len(bodyAll)+nb]
	}
	for i := range n {
		// A term's frequency in a field adds 1/norm per occurrence, in
		// float32, as the occurrences are met.
		var inv [NumFields]float32
		for f := range inv {
			if b.lengths[i][f] > 0 {
				inv[f] = float32(1 / (1 - p.B[f] + p.B[f]*float64(b.lengths[i][f])/avg[f]))
			}
		}
		for k := b.docStart[i]; k < b.docStart[i+1]; k++ {
			var tf [NumFields]float32
			for f, c := range b.rawCount[k] {
				for range c {
					tf[f] += inv[f]
				}
			}
			tp := &ix.post[b.rawTerm[k]]
			if c := b.rawCount[k]; c[FieldName] > 0 || c[FieldDescription] > 0 {
				tp.full = append(tp.full, posting{doc: int32(i), tf: tf})
			} else {
				tp.body = append(tp.body, bodyPosting{doc: int32(i), tf: tf[FieldBody]})
			}
		}
	}
	return ix
}

// internTerms re-keys the term map with substrings of one string: a large
// library has a hundred thousand distinct terms, each its own allocation
// the collector would walk on every cycle. The string holds the terms in
// number order, so it is also the table from numbers to terms.
func (ix *BM25) internTerms() {
	byNum := make([]string, len(ix.terms))
	size := 0
	for t, id := range ix.terms {
		byNum[id] = t
		size += len(t)
	}
	var b strings.Builder
	b.Grow(size)
	end := make([]uint32, len(byNum))
	for id, t := range byNum {
		b.WriteString(t)
		end[id] = uint32(b.Len())
	}
	tt := &termTable{blob: b.String(), end: end}
	terms := make(map[string]int32, len(byNum))
	for id := range byNum {
		terms[tt.text(int32(id))] = int32(id)
	}
	ix.terms, ix.dict = terms, tt
}

// termTable is an index's terms by number, in one string.
type termTable struct {
	blob string
	end  []uint32 // term i is blob[end[i-1]:end[i]]
}

func (t *termTable) text(id int32) string {
	start := uint32(0)
	if id > 0 {
		start = t.end[id-1]
	}
	return t.blob[start:t.end[id]]
}

// term returns term id's bytes, which must not be changed.
func (t *termTable) term(id int32) []byte {
	s := t.text(id)
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// Len is the number of documents.
func (ix *BM25) Len() int { return len(ix.ids) }

// ID returns the id of document i.
func (ix *BM25) ID(i int) string { return ix.ids[i] }

// IDF returns the inverse document frequency of a term; 0 for a term no
// document has.
func (ix *BM25) IDF(term string) float64 {
	if id, ok := ix.terms[term]; ok {
		return ix.post[id].idf
	}
	return 0
}

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
// kept, so one index serves strategies that weigh fields differently. A
// document's score adds its terms in query order; a body-only posting's
// weighted frequency is w[body]·tf, exactly what the sum over all three
// fields gives when the other two are zero.
func (ix *BM25) ScoreWeighted(query []Term, w [NumFields]float64, scores []float64) {
	if len(scores) < len(ix.ids) {
		// The kernels do not check their stores; every posting's
		// document is below len(ix.ids) (built so, checked on reading).
		panic(fmt.Sprintf("index: %d scores for %d documents", len(scores), len(ix.ids)))
	}
	k1 := ix.k1
	for _, q := range query {
		id, ok := ix.terms[q.Text]
		if !ok || q.Weight == 0 {
			continue
		}
		tp := &ix.post[id]
		qw := q.Weight * tp.idf * (k1 + 1)
		addFull(scores, tp.full, &fullTerm{w0: w[0], w1: w[1], w2: w[2], qw: qw, k1: k1})
		addBody(scores, tp.body, &bodyTerm{wb: w[FieldBody], qw: qw, k1: k1})
	}
}

// fullTerm is what scoring one query term's full postings needs: the three
// field weights, the term's weight (query weight · idf · (k1 + 1)) and k1.
// The assembly reads the fields by the offsets go_asm.h gives.
type fullTerm struct{ w0, w1, w2, qw, k1 float64 }

// addFullGo adds each full posting's term score to its document's:
// qw·tf/(k1 + tf) for tf = w0·tf0 + w1·tf1 + w2·tf2 > 0, summed left to
// right. It is the portable form of addFull and the reference its kernel
// is tested against, bit for bit.
func addFullGo(scores []float64, full []posting, c *fullTerm) {
	w0, w1, w2, qw, k1 := c.w0, c.w1, c.w2, c.qw, c.k1
	for _, p := range full {
		// Every product and sum is rounded on its own (the conversions keep
		// a GOAMD64=v3 build from fusing them), as the kernel's lanes do.
		tf := float64(float64(w0*float64(p.tf[0]))+float64(w1*float64(p.tf[1]))) + float64(w2*float64(p.tf[2]))
		if tf > 0 {
			scores[p.doc] += qw * tf / (k1 + tf)
		}
	}
}

// bodyTerm is what scoring one query term's body postings needs: the body
// weight, the term's weight (query weight · idf · (k1 + 1)) and k1. The
// assembly reads the fields by the offsets go_asm.h gives.
type bodyTerm struct{ wb, qw, k1 float64 }

// addBodyGo adds each body posting's term score to its document's:
// qw·tf/(k1 + tf) for tf = wb·p.tf > 0. It is the portable form of addBody
// and the reference its kernel is tested against, bit for bit.
func addBodyGo(scores []float64, body []bodyPosting, c *bodyTerm) {
	wb, qw, k1 := c.wb, c.qw, c.k1
	for _, p := range body {
		// The conversion rounds wb·tf before k1 is added: built with
		// GOAMD64=v3 the compiler would otherwise fuse the two, and the
		// kernel's lanes (and earlier builds) round twice.
		tf := float64(wb * float64(p.tf))
		if tf > 0 {
			scores[p.doc] += qw * tf / (k1 + tf)
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
		idf := ix.IDF(q.Text)
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
	return AddTerms(dst, analysis.Terms(text), weight)
}

// AddTerms is QueryTerms for a text already analysed: terms as
// analysis.Terms gives them. The builtin embedder analyses a query the same
// way, and hands its terms over so that the text is analysed once.
func AddTerms(dst []Term, terms []string, weight float64) []Term {
	byText := func(a, b Term) int { return strings.Compare(a.Text, b.Text) }
	if !slices.IsSortedFunc(dst, byText) {
		slices.SortFunc(dst, byText)
	}
	// Equal terms side by side, from a copy (a query has a few dozen):
	// each distinct term then adds its weight once and a quarter of it per
	// repeat, the additions a term-by-term pass makes, in the same order.
	var buf [64]string
	sorted := append(buf[:0], terms...)
	slices.Sort(sorted)
	old := len(dst)
	for k := 0; k < len(sorted); {
		t, n := sorted[k], 1
		for k+n < len(sorted) && sorted[k+n] == t {
			n++
		}
		k += n
		i, found := slices.BinarySearchFunc(dst[:old], t, func(e Term, t string) int { return strings.Compare(e.Text, t) })
		if found {
			dst[i].Weight += weight
		} else {
			i = len(dst)
			dst = append(dst, Term{Text: t, Weight: weight})
		}
		for range min(n, 5) - 1 {
			dst[i].Weight += weight * 0.25
		}
	}
	if old > 0 && len(dst) > old {
		slices.SortFunc(dst, byText)
	}
	return dst
}
