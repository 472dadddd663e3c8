package embed

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strconv"
	"sync"

	"github.com/skillrouter/skillrouter/analysis"
)

// Builtin is the offline default embedder: a hashed TF-IDF vector over three
// feature families, each L2-normalized and mixed with fixed weights:
//
//   - stemmed word unigrams (the topic words),
//   - stemmed word bigrams of adjacent content words ("code review",
//     "risk analysis": phrases mean more than their words),
//   - character n-grams of each content word with boundary marks (FastText
//     style), which match morphology the stemmer misses and compounds
//     written apart ("codebase" / "code base"), and survive typos.
//
// Features are hashed (signed, to cancel collision bias) into a fixed number
// of dimensions, weighted by sublinear TF (1+ln tf) and an IDF learned from
// the library with Fit. Without Fit every feature has IDF 1.
//
// A Builtin is immutable: Fit returns a fitted copy and Model() includes a
// fingerprint of the fitted state, so vectors from different fits are never
// mixed (cache keys and index files differ).
type Builtin struct {
	opts        BuiltinOptions
	idf         map[uint64]float32 // nil when not fitted
	vocab       *vocab             // the library's frequent words, features precomputed; nil when not fitted
	unseenIDF   float32
	fingerprint string
}

// BuiltinOptions tune the builtin embedder. Zero values take the defaults in
// DefaultBuiltinOptions.
type BuiltinOptions struct {
	Dimensions int     // vector size
	Unigram    float64 // family weights
	Bigram     float64
	CharGram   float64
	CharMin    int // character n-gram sizes, inclusive
	CharMax    int
}

// DefaultBuiltinOptions were chosen by measuring Hit@k and MRR on the
// upstream-queries and MetaTool sets (router quality test): 512 or 768
// dimensions lose to bm25 inside hybrid through hash collisions, 4096 gains
// little and quadruples query cost; unigrams alone, or without the
// character n-grams, rank worse; bigram and n-gram weights between 0.3 and
// 0.8 are within noise. A fourth family of WordNet concepts (each word's
// most frequent synset, generated from Debian's wordnet-base) was measured
// and dropped: no gain on either set, and chit-chat scored higher.
var DefaultBuiltinOptions = BuiltinOptions{
	Dimensions: 1024,
	Unigram:    1,
	Bigram:     0.5,
	CharGram:   0.5,
	CharMin:    3,
	CharMax:    5,
}

// builtinVersion changes whenever feature extraction changes, so cached
// vectors and persisted indexes from an older version are not reused.
const builtinVersion = "b1"

// NewBuiltin returns an unfitted builtin embedder. cfg.Dimensions sets the
// vector size (default 1024).
func NewBuiltin(cfg Config) *Builtin {
	o := DefaultBuiltinOptions
	if cfg.Dimensions > 0 {
		o.Dimensions = cfg.Dimensions
	}
	return NewBuiltinWith(o)
}

// NewBuiltinWith returns an unfitted builtin embedder with explicit options.
func NewBuiltinWith(o BuiltinOptions) *Builtin {
	d := DefaultBuiltinOptions
	if o.Dimensions > 1 { // slot 0 is reserved: one slot would leave none to hash into
		d.Dimensions = o.Dimensions
	}
	if o.Unigram != 0 || o.Bigram != 0 || o.CharGram != 0 {
		d.Unigram, d.Bigram, d.CharGram = o.Unigram, o.Bigram, o.CharGram
	}
	if o.CharMin > 0 && o.CharMax >= o.CharMin {
		d.CharMin, d.CharMax = o.CharMin, o.CharMax
	}
	return &Builtin{opts: d, unseenIDF: 1, fingerprint: "unfitted"}
}

// Name implements the router's Embedder.
func (b *Builtin) Name() string { return "builtin" }

// Model names the feature version, dimensions and fitted state.
func (b *Builtin) Model() string {
	return builtinVersion + "-" + strconv.Itoa(b.opts.Dimensions) + "-" + b.fingerprint
}

// Dimensions implements the router's Embedder.
func (b *Builtin) Dimensions() int { return b.opts.Dimensions }

// Offline reports that the builtin runs in-process: the router calls it
// without a latency budget.
func (b *Builtin) Offline() bool { return true }

// Fit learns IDF from corpus (one text per document, as they will be
// embedded) and returns a fitted copy; b is unchanged. Large corpora are
// counted on every core: the counts are sums, the same in any order.
func (b *Builtin) Fit(corpus []string) *Builtin {
	workers := parallelism(len(corpus))
	dfs := make([]*dfTable, workers)
	wordss := make([]map[string]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := w*len(corpus)/workers, (w+1)*len(corpus)/workers
			df := new(dfTable)
			df.reserve(min(32*(hi-lo), 1<<19)) // about what a library has (at most 16 MB): no rehashing as it grows
			// Word counts by vocabulary entry; a map only for words past
			// the counting vocabulary's bound.
			var counts []int
			words := make(map[string]int)
			var fs featureSet
			voc := counting()
			stamp := uint32(firstStamp)
			for _, text := range corpus[lo:hi] {
				// The words alone: a document's features are counted
				// straight into df, duplicates and all (see dfTable), not
				// gathered per text first as an embedding needs them.
				fs.readWords(text, &b.opts, voc)
				if stamp > lastStamp-numFamilies {
					df.restamp()
					stamp = firstStamp
				}
				for k := range numFamilies {
					// The counts outgrow the cache: each count is a miss.
					// Reading a batch's slots first has their misses
					// overlap instead of coming one after another. Each
					// family counts on its own, as a set of its own.
					for hs := fs.familyHashes(k, &b.opts, voc); len(hs) > 0; {
						batch := hs[:min(len(hs), dfBatch)]
						df.touch(batch)
						for _, h := range batch {
							df.countOnce(h, stamp)
						}
						hs = hs[len(batch):]
					}
					stamp++
				}
				for i, id := range fs.wid {
					if id < 0 {
						words[fs.wseq[i]] += fs.wcount[i]
						continue
					}
					if int(id) >= len(counts) {
						counts = append(counts, make([]int, len(voc.entries)-len(counts))...)
					}
					counts[id] += fs.wcount[i]
				}
			}
			for x, id := range voc.index {
				words[x] += counts[id]
			}
			dfs[w], wordss[w] = df, words
		}()
	}
	wg.Wait()
	df, words := dfs[0], wordss[0]
	for w := 1; w < workers; w++ {
		dfs[w].each(func(h uint64, d int32) { df.ref(h).count += d })
		for x, c := range wordss[w] {
			words[x] += c
		}
		dfs[w], wordss[w] = nil, nil
	}
	n := float64(len(corpus))
	fit := &Builtin{opts: b.opts, idf: make(map[uint64]float32, df.n)}
	var sum uint64
	df.each(func(h uint64, d int32) {
		fit.idf[h] = float32(math.Log((n+1)/(float64(d)+1)) + 1)
		sum += mix64(h ^ uint64(d)*0x9e3779b97f4a7c15) // order-independent digest
	})
	fit.unseenIDF = float32(math.Log(n+1) + 1)
	fit.fingerprint = fmt.Sprintf("%08x", uint32(mix64(sum^uint64(len(corpus)))))
	fit.vocab = newVocab(words, maxVocab, &fit.opts, fit.idf)
	return fit
}

// parallelism is how many goroutines share n texts: one per core for large
// batches, one for the short batches of routing (a query, a few turns).
func parallelism(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/parallelMinTexts))
}

// parallelMinTexts is the least number of texts worth a goroutine.
const parallelMinTexts = 64

// Embed implements the router's Embedder. It never fails; ctx is checked
// between texts so a huge batch can be abandoned. Large batches (a library)
// are embedded on every core.
func (b *Builtin) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return b.embed(ctx, texts, false)
}

// EmbedDocuments embeds library texts (the router's documentEmbedder): as
// Embed, except that a feature the fit does not know adds nothing. Slot 0
// holds a query's unknown words (see feature), which documents never use: a
// skill embedded with a fit made before it was written (an edit's build
// keeps the library's fit until the index settles) would otherwise put its
// own new words there, and match every query of unknown words through them.
// A fit made on the texts themselves knows every feature, so documents
// embedded after it are Embed's vectors, bit for bit.
func (b *Builtin) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return b.embed(ctx, texts, true)
}

func (b *Builtin) embed(ctx context.Context, texts []string, docs bool) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := parallelism(len(texts))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		run := func() {
			defer wg.Done()
			lo, hi := w*len(texts)/workers, (w+1)*len(texts)/workers
			errs[w] = b.embedRange(ctx, texts[lo:hi], out[lo:hi], nil, docs)
		}
		if workers == 1 {
			run() // routing: no goroutine hand-off
		} else {
			go run()
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// EmbedTerms is Embed for a few texts (a query's turns) that also hands
// each text's terms to terms, in text order: its content words, stemmed, as
// analysis.Terms gives them (vocabulary words are never stop words, and
// their stems are analysis.Stem's). A caller that ranks by BM25 too then
// analyses the text once. The slice terms gets is valid only during the
// call.
func (b *Builtin) EmbedTerms(ctx context.Context, texts []string, terms func(i int, terms []string)) ([][]float32, error) {
	out := make([][]float32, len(texts))
	if err := b.embedRange(ctx, texts, out, terms, false); err != nil {
		return nil, err
	}
	return out, nil
}

// embedRange embeds texts into out with one pooled scratch, checking ctx
// every 64 texts, and hands each text's terms to terms when it is set; docs
// embeds them as documents (see EmbedDocuments).
func (b *Builtin) embedRange(ctx context.Context, texts []string, out [][]float32, terms func(i int, terms []string), docs bool) error {
	fs := featureSets.Get().(*featureSet)
	defer putFeatureSet(fs)
	for i, t := range texts {
		if i%64 == 63 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		out[i] = b.vector(t, fs, docs)
		if terms != nil {
			terms(i, fs.terms)
		}
	}
	return nil
}

// featureSets recycles scratch space: routing embeds one short query per
// request, and fresh maps per call were a third of its allocations.
var featureSets = sync.Pool{New: func() any { return new(featureSet) }}

// maxPooledSlots is the largest feature table a pooled scratch keeps: a
// query's few hundred features fit in a fraction of it. One that embedded a
// long document (a library build) grew to 32,768 slots or more, and pooled,
// it served the queries after it: each of their probes then missed the
// core's caches (half a megabyte, read at random) instead of hitting 16 KB.
const maxPooledSlots = 4 * u64TableMin

func putFeatureSet(fs *featureSet) {
	for k := range fs.pos {
		if len(fs.pos[k].slots) > maxPooledSlots {
			return // left to the collector; a new one starts small
		}
	}
	featureSets.Put(fs)
}

// vector computes one unit-length vector (all zeros for text with no
// features, e.g. only stop words). Features are visited in first-occurrence
// order, so the float sums, and the vector, are the same on every run. A
// document's (doc) unknown features are left out rather than put in slot 0.
func (b *Builtin) vector(text string, fs *featureSet, doc bool) []float32 {
	fs.extract(text, &b.opts, b.vocab)
	dim := b.opts.Dimensions
	v := make([]float32, dim)
	weights := [numFamilies]float64{b.opts.Unigram, b.opts.Bigram, b.opts.CharGram}
	// Per-family TF-IDF, normalized per family before mixing, so long words
	// (many n-grams) do not drown the word features.
	if cap(fs.acc) < dim {
		fs.acc = make([]float64, dim)
	}
	acc := fs.acc[:dim]
	// A query touches a few hundred of the slots: the sums below visit only
	// those, in ascending slot order (bitmaps), which adds up exactly as a
	// pass over every slot would (the others add +0).
	words := (dim + 63) / 64
	if cap(fs.slots) < 2*words {
		fs.slots = make([]uint64, 2*words)
	}
	slots, all := fs.slots[:words], fs.slots[words:2*words]
	clear(all)
	// A document's unknown features are in no slot, but count in its
	// length as a fit that knew them would count them: left out of it too,
	// a skill written after the fit (an edit's build) had its few known
	// words at full weight and matched every query of them.
	var hidden float64
	for k := 0; k < numFamilies; k++ {
		if weights[k] == 0 || len(fs.order[k]) == 0 {
			continue
		}
		clear(slots)
		var unseen float64
		for i := range fs.order[k] {
			idx, w, known := b.feature(fs, k, i, dim)
			if !known {
				unseen += w * w
				continue
			}
			acc[idx] += w
			slots[idx/64] |= 1 << (idx % 64)
		}
		if !doc {
			acc[0] = math.Sqrt(unseen)
			slots[0] |= 1
		}
		var norm float64
		eachSlot(slots, func(i int) { norm += acc[i] * acc[i] })
		if doc && unseen > 0 {
			norm += unseen
			hidden += weights[k] * weights[k] * unseen / norm
		}
		if norm != 0 {
			s := weights[k] / math.Sqrt(norm)
			eachSlot(slots, func(i int) {
				if x := acc[i]; x != 0 {
					v[i] += float32(x * s)
				}
			})
		}
		eachSlot(slots, func(i int) { acc[i] = 0 })
		for w := range all {
			all[w] |= slots[w]
		}
	}
	n := hidden
	eachSlot(all, func(i int) { n += float64(v[i]) * float64(v[i]) })
	if n > 0 {
		s := float32(1 / math.Sqrt(n))
		eachSlot(all, func(i int) { v[i] *= s })
	}
	return v
}

// feature returns the slot of feature i of family k and its signed TF-IDF
// weight. known is false for a feature no library text has: it cannot
// match anything, and hashed into a shared slot it would only add collision
// noise, so its weight goes to slot 0, which documents never use; it still
// dilutes the cosine, so a message mostly about things the library does not
// know scores low.
func (b *Builtin) feature(fs *featureSet, k, i, dim int) (idx uint64, w float64, known bool) {
	h := fs.order[k][i]
	w = 1 + logCount(fs.tf[k][i])
	if b.idf != nil {
		x, ok := fs.idf[k][i], true
		if x != x { // not known from the vocabulary: look it up
			x, ok = b.idf[h]
		}
		if !ok {
			return 0, w * float64(b.unseenIDF), false
		}
		w *= float64(x)
	}
	if h>>63 == 1 {
		w = -w
	}
	return 1 + h%uint64(dim-1), w, true
}

// eachSlot calls fn with every set bit of bitmap, in ascending order.
func eachSlot(bitmap []uint64, fn func(i int)) {
	for w, word := range bitmap {
		for word != 0 {
			fn(w*64 + bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
}

// logCounts[n] is math.Log(n): term counts are small whole numbers, and a
// table lookup gives the same bits as the call.
var logCounts = func() (t [64]float64) {
	for n := 1; n < len(t); n++ {
		t[n] = math.Log(float64(n))
	}
	return t
}()

func logCount(tf float64) float64 {
	if n := int(tf); float64(n) == tf && n >= 1 && n < len(logCounts) {
		return logCounts[n]
	}
	return math.Log(tf)
}

const (
	famUnigram = iota
	famBigram
	famChar
	numFamilies
)

// featureSet is scratch space reused across texts: per family, the term
// frequency of each feature hash and the hashes in first-occurrence order.
type featureSet struct {
	words  []string
	terms  []string              // the content words' stems, in order
	occ    []int32               // per terms entry: its word's position in wseq
	wseq   []string              // distinct content words in first-occurrence order
	wpos   map[string]int        // word -> its position in wseq
	wcount []int                 // per wseq word: occurrences
	wid    []int32               // per wseq word: its vocabulary entry's index, or -1
	wgen   []uint32              // per vocabulary entry: gen when the text has it
	wat    []int32               // per vocabulary entry: its position in wseq
	gen    uint32                // the current text's stamp
	pos    [numFamilies]u64Table // feature hash -> its index in order
	order  [numFamilies][]uint64
	tf     [numFamilies][]float64 // per order entry: the feature's count
	idf    [numFamilies][]float32 // per order entry; NaN: look it up
	grams  []uint64               // a word's n-grams (extract), a family's features (familyHashes)
	acc    []float64
	slots  []uint64 // bitmaps of the acc slots a text touches (vector)
}

func (fs *featureSet) add(fam int, h uint64, n float64, idf float32) {
	p, added := fs.pos[fam].ref(h)
	if added {
		*p = int32(len(fs.order[fam]))
		fs.order[fam] = append(fs.order[fam], h)
		fs.tf[fam] = append(fs.tf[fam], 0)
		fs.idf[fam] = append(fs.idf[fam], idf)
	}
	fs.tf[fam][*p] += n
}

// unknownIDF marks a feature whose IDF extract did not get from the
// vocabulary.
var unknownIDF = float32(math.NaN())

// extract collects the features of text. Words found in voc (may be nil)
// take their stem and features from it instead of computing them.
// familyHashes lists the same features for Fit.
func (fs *featureSet) extract(text string, o *BuiltinOptions, voc *vocab) {
	fs.readWords(text, o, voc)
	for k := range fs.pos {
		fs.pos[k].reset()
		fs.order[k] = fs.order[k][:0]
		fs.tf[k] = fs.tf[k][:0]
		fs.idf[k] = fs.idf[k][:0]
	}
	if o.Unigram != 0 {
		for j, i := range fs.occ {
			if e := voc.entry(fs.wid[i]); e != nil {
				fs.add(famUnigram, e.uni, 1, e.uniIDF)
			} else {
				fs.add(famUnigram, hashStr(famUnigram, fs.terms[j], ""), 1, unknownIDF)
			}
		}
	}
	if o.Bigram != 0 {
		for i := 1; i < len(fs.terms); i++ {
			fs.add(famBigram, hashStr(famBigram, fs.terms[i-1], fs.terms[i]), 1, unknownIDF)
		}
	}
	if o.CharGram != 0 {
		// n-grams of each distinct word once, weighted by its count:
		// repeated words are the bulk of long texts.
		for i, w := range fs.wseq {
			c := float64(fs.wcount[i])
			if e := voc.entry(fs.wid[i]); e != nil {
				hs, idfs := voc.grams(e)
				for i, h := range hs {
					fs.add(famChar, h, c, idfs[i])
				}
				continue
			}
			fs.grams = appendCharGrams(fs.grams[:0], w, o.CharMin, o.CharMax)
			for _, h := range fs.grams {
				fs.add(famChar, h, c, unknownIDF)
			}
		}
	}
}

// familyHashes returns, in fs.grams, the features of family k that extract
// would gather from the words readWords read, duplicates included (none
// when the family weighs nothing): without the positions, counts and IDFs
// extract keeps, which Fit does not need. TestBuiltinFitReference holds the
// two to the same features.
func (fs *featureSet) familyHashes(k int, o *BuiltinOptions, voc *vocab) []uint64 {
	keys := fs.grams[:0]
	switch {
	case k == famUnigram && o.Unigram != 0:
		for j, i := range fs.occ {
			if e := voc.entry(fs.wid[i]); e != nil {
				keys = append(keys, e.uni)
			} else {
				keys = append(keys, hashStr(famUnigram, fs.terms[j], ""))
			}
		}
	case k == famBigram && o.Bigram != 0:
		for i := 1; i < len(fs.terms); i++ {
			keys = append(keys, hashStr(famBigram, fs.terms[i-1], fs.terms[i]))
		}
	case k == famChar && o.CharGram != 0:
		for i, w := range fs.wseq {
			if e := voc.entry(fs.wid[i]); e != nil {
				hs, _ := voc.grams(e)
				keys = append(keys, hs...)
			} else {
				keys = appendCharGrams(keys, w, o.CharMin, o.CharMax)
			}
		}
	}
	fs.grams = keys
	return keys
}

// readWords reads text's content words: their terms (stems) in order, and
// each distinct word once with its count and vocabulary entry. Words found
// in voc (may be nil) take their stem from it.
func (fs *featureSet) readWords(text string, o *BuiltinOptions, voc *vocab) {
	if fs.wpos == nil {
		fs.wpos = make(map[string]int)
	}
	clear(fs.wpos)
	fs.words = analysis.AppendWords(fs.words[:0], text)
	fs.terms, fs.occ = fs.terms[:0], fs.occ[:0]
	fs.wseq, fs.wcount, fs.wid = fs.wseq[:0], fs.wcount[:0], fs.wid[:0]
	fs.gen++
	if fs.gen == 0 { // wrapped: stamps from 2^32 texts ago would look current
		clear(fs.wgen)
		fs.gen = 1
	}
	for _, w := range fs.words {
		// A vocabulary word is found with one lookup, which also places it
		// in this text (stamps by entry); the others go through wpos.
		id, stop := voc.lookupOrAdd(w, o)
		if stop {
			continue
		}
		var i int
		if id >= 0 {
			if id >= len(fs.wgen) {
				n := max(id+1, len(voc.entries))
				fs.wgen = append(fs.wgen, make([]uint32, n-len(fs.wgen))...)
				fs.wat = append(fs.wat, make([]int32, n-len(fs.wat))...)
			}
			if fs.wgen[id] == fs.gen {
				i = int(fs.wat[id])
			} else {
				i = len(fs.wseq)
				fs.wgen[id], fs.wat[id] = fs.gen, int32(i)
				fs.wseq, fs.wcount, fs.wid = append(fs.wseq, w), append(fs.wcount, 0), append(fs.wid, int32(id))
			}
		} else {
			var seen bool
			if i, seen = fs.wpos[w]; !seen {
				i = len(fs.wseq)
				fs.wpos[w] = i
				fs.wseq, fs.wcount, fs.wid = append(fs.wseq, w), append(fs.wcount, 0), append(fs.wid, -1)
			}
		}
		fs.wcount[i]++
		fs.occ = append(fs.occ, int32(i))
		if e := voc.entry(fs.wid[i]); e != nil {
			fs.terms = append(fs.terms, e.stem)
		} else {
			fs.terms = append(fs.terms, analysis.Stem(w))
		}
	}
}

// appendCharGrams adds the n-gram hashes of "<word>" for n in [lo,hi].
// Words are bytes here: non-ASCII words get byte n-grams, which still match
// equal words.
func appendCharGrams(dst []uint64, w string, lo, hi int) []uint64 {
	if len(w) < 2 {
		return dst
	}
	var buf [80]byte
	if len(w)+2 > len(buf) {
		w = w[:len(buf)-2]
	}
	s := buf[:0]
	s = append(s, '<')
	s = append(s, w...)
	s = append(s, '>')
	for n := lo; n <= hi; n++ {
		for i := 0; i+n <= len(s); i++ {
			dst = append(dst, hashBytes(famChar, s[i:i+n]))
		}
	}
	return dst
}

// FNV-1a, seeded by family so equal strings in different families differ.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashStr(fam uint8, a, b string) uint64 {
	h := uint64(fnvOffset) ^ uint64(fam+1)*0x100000001b3
	for i := 0; i < len(a); i++ {
		h ^= uint64(a[i])
		h *= fnvPrime
	}
	if b != "" {
		h ^= ' '
		h *= fnvPrime
		for i := 0; i < len(b); i++ {
			h ^= uint64(b[i])
			h *= fnvPrime
		}
	}
	return mix64(h)
}

func hashBytes(fam uint8, s []byte) uint64 {
	h := uint64(fnvOffset) ^ uint64(fam+1)*0x100000001b3
	for _, c := range s {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return mix64(h)
}

// mix64 is the SplitMix64 finalizer: FNV's low bits are weak, and the
// bucket index is taken modulo the dimension.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
