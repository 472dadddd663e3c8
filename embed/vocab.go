package embed

import (
	"cmp"
	"slices"
	"strings"

	"github.com/skillrouter/skillrouter/analysis"
)

// maxVocab bounds the precomputed vocabulary of a fitted builtin: the most
// frequent words of a library cover nearly all of a message's words (word
// frequencies are Zipfian), at a few MB for the largest libraries.
const maxVocab = 1 << 14

// vocab holds, for a library's frequent words, what embedding a word costs:
// its stem, its unigram feature and its character n-grams, each with its
// IDF. A query word found here is one map lookup instead of a stemmer call,
// a dozen or more hashes and as many IDF lookups (FastText precomputes its
// subwords per vocabulary word for the same reason). Words outside it are
// computed as before; the vectors are the same either way.
type vocab struct {
	index   map[string]uint32 // word -> entries
	entries []vocabEntry
	hashes  []uint64 // char n-grams of all entries, back to back
	idfs    []float32
	grow    bool // counting (see counting)
	scratch []uint64
}

type vocabEntry struct {
	stem   string
	uni    uint64
	uniIDF float32
	off, n uint32 // the entry's n-grams in hashes/idfs
}

// newVocab precomputes the limit most frequent words of counts (ties by
// word, so a library always gets the same vocabulary).
func newVocab(counts map[string]int, limit int, o *BuiltinOptions, idf map[uint64]float32) *vocab {
	type wc struct {
		w string
		c int
	}
	all := make([]wc, 0, len(counts))
	for w, c := range counts {
		// Never a stop word: extract takes a vocabulary word as a content
		// word without asking (a restored state could predate a stop list).
		if !analysis.IsStopWord(w) {
			all = append(all, wc{w, c})
		}
	}
	slices.SortFunc(all, func(a, b wc) int {
		if c := cmp.Compare(b.c, a.c); c != 0 {
			return c
		}
		return cmp.Compare(a.w, b.w)
	})
	all = all[:min(limit, len(all))]
	v := &vocab{index: make(map[string]uint32, len(all)), entries: make([]vocabEntry, 0, len(all))}
	lookup := func(h uint64) float32 {
		if x, ok := idf[h]; ok {
			return x
		}
		return unknownIDF // a family Fit did not count: vector looks it up
	}
	for _, x := range all {
		// A copy: x.w may be a slice of a skill's text (see
		// analysis.AppendWords), which a fit kept across reloads would pin.
		v.add(strings.Clone(x.w), o, lookup)
	}
	v.scratch = nil
	return v
}

// add computes word w's entry (IDFs from lookup), indexes it and returns
// its index.
func (v *vocab) add(w string, o *BuiltinOptions, lookup func(uint64) float32) int {
	st := analysis.Stem(w)
	uni := hashStr(famUnigram, st, "")
	e := vocabEntry{stem: st, uni: uni, uniIDF: lookup(uni), off: uint32(len(v.hashes))}
	v.scratch = appendCharGrams(v.scratch[:0], w, o.CharMin, o.CharMax)
	for _, h := range v.scratch {
		v.hashes = append(v.hashes, h)
		v.idfs = append(v.idfs, lookup(h))
	}
	e.n = uint32(len(v.scratch))
	v.index[w] = uint32(len(v.entries))
	v.entries = append(v.entries, e)
	return len(v.entries) - 1
}

// entry returns the entry of index id, or nil for -1.
func (v *vocab) entry(id int32) *vocabEntry {
	if id < 0 {
		return nil
	}
	return &v.entries[id]
}

// counting returns an empty vocabulary that Fit's counting grows with every
// word it meets (up to maxCountingVocab), without IDFs: a word's stem and
// n-grams are then computed once per worker instead of once per document
// that has it.
func counting() *vocab {
	return &vocab{index: map[string]uint32{}, grow: true}
}

// maxCountingVocab bounds a counting vocabulary (~200 bytes a word); a
// variable for the test that fits with and without one.
var maxCountingVocab = 1 << 17

// lookupOrAdd returns the index of word w's entry, or -1, and whether w is
// a stop word (never in a vocabulary); a growing vocabulary adds w first.
// v may be nil. The vocabulary is looked up before the stop words: nearly
// every word of a text is in it, and then one lookup is all it takes.
func (v *vocab) lookupOrAdd(w string, o *BuiltinOptions) (id int, stop bool) {
	if v != nil {
		if i, ok := v.index[w]; ok {
			return int(i), false
		}
	}
	if analysis.IsStopWord(w) {
		return -1, true
	}
	if v == nil || !v.grow || len(v.entries) >= maxCountingVocab {
		return -1, false
	}
	return v.add(strings.Clone(w), o, func(uint64) float32 { return unknownIDF }), false
}

// grams returns e's character n-gram hashes and their IDFs.
func (v *vocab) grams(e *vocabEntry) ([]uint64, []float32) {
	return v.hashes[e.off : e.off+e.n], v.idfs[e.off : e.off+e.n]
}
