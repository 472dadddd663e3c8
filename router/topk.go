package router

// The top of a ranking. A request uses only the first few dozen ranks (the
// skills it may auto-load, the catalog shortlist), so rank keeps the best
// depth skills instead of sorting and rendering the whole library: a
// bounded heap over one pass of the scores. The order is the one a full
// sort gives, ties included, so a shallow ranking is always a prefix of the
// whole one.

import (
	"math"
	"slices"
	"sync"
)

// rankScratch holds one ranking's whole-library arrays, recycled across
// requests: at 10,000 skills they are about 0.7 MB, which allocated per
// request was most of the garbage a request made.
type rankScratch struct {
	score, keyword, bm25, cosine, sims []float64
	keys, tmp                          []uint64
	cands, rows                        []int32
	exact                              []float64
}

var rankScratches = sync.Pool{New: func() any { return new(rankScratch) }}

// getRankScratch returns scratch arrays for a library of n skills. Their
// contents are whatever the last user left: rank clears or overwrites each
// before use.
func getRankScratch(n int) *rankScratch {
	sc := rankScratches.Get().(*rankScratch)
	if cap(sc.score) < n {
		sc.score, sc.keyword = make([]float64, n), make([]float64, n)
		sc.bm25, sc.cosine = make([]float64, n), make([]float64, n)
		sc.keys, sc.tmp = make([]uint64, n), make([]uint64, n)
	}
	sc.score, sc.keyword = sc.score[:n], sc.keyword[:n]
	sc.bm25, sc.cosine = sc.bm25[:n], sc.cosine[:n]
	sc.keys, sc.tmp = sc.keys[:n], sc.tmp[:n]
	return sc
}

// simsFor returns a scratch array for n vector similarities.
func (sc *rankScratch) simsFor(n int) []float64 {
	if cap(sc.sims) < n {
		sc.sims = make([]float64, n)
	}
	return sc.sims[:n]
}

// rescoreRows returns empty scratch for up to n vector rows and room for
// their exact similarities.
func (sc *rankScratch) rescoreRows(n int) ([]int32, []float64) {
	if cap(sc.rows) < n {
		sc.rows, sc.exact = make([]int32, 0, n), make([]float64, n)
	}
	return sc.rows[:0], sc.exact[:n]
}

// topEntries returns the depth best skills by sc.score (all when depth <=
// 0), best first, with the components comps names copied from the scratch
// arrays; finish fills in what is derived from them (the normalized BM25,
// the confidence).
func (sc *rankScratch) topEntries(depth int, comps uint8, finish func(*rankEntry)) []rankEntry {
	return sc.entries(topOrder(sc.score, depth, sc.keys, sc.tmp), comps, finish)
}

// entries returns the skills of the sort keys order, in that order.
func (sc *rankScratch) entries(order []uint64, comps uint8, finish func(*rankEntry)) []rankEntry {
	out := make([]rankEntry, len(order))
	for k, key := range order {
		i := int(uint32(key))
		e := rankEntry{i: int32(i), score: sc.score[i]}
		if comps&(1<<compKeyword) != 0 {
			e.keyword = sc.keyword[i]
		}
		if comps&(1<<compBM25) != 0 {
			e.bm25 = sc.bm25[i]
		}
		if comps&(1<<compCosine) != 0 {
			e.cosine = sc.cosine[i]
		}
		finish(&e)
		out[k] = e
	}
	return out
}

// topRescored is topEntries for scores computed from approximate cosines,
// each within rowDelta(i) of skill i's exact score and all within delta:
// it finds the skills whose exact score can rank among the depth best, has
// rescore replace their approximate values in the scratch arrays with exact
// ones (all of them in one call, which lets it score several at a time),
// and ranks those. The result is the one exact scores everywhere would give.
//
// The depth best approximations all score at least floor exactly, the
// lowest of their approximations less their bounds. A skill whose
// approximation plus its bound still rounds to a float32 below floor's
// (keys compare scores as float32) is behind all of them whatever its
// exact score. The shared delta rules out most skills without working out
// their own bound.
func (sc *rankScratch) topRescored(depth int, comps uint8, finish func(*rankEntry), delta float64, rowDelta func(i int32) float64, rescore func(skills []int32)) []rankEntry {
	score := sc.score
	order := topOrder(score, depth, sc.keys, sc.tmp)
	floor := math.Inf(1)
	for _, key := range order {
		i := int32(uint32(key))
		s := score[i]
		floor = min(floor, s-rowDelta(i)-roundSlack(s))
	}
	// A score whose bound is at most the float32 just below floor's
	// rounds below it, so it sorts after all of them.
	below := float64(math.Nextafter32(float32(floor), float32(math.Inf(-1))))
	cands := sc.cands[:0]
	if !math.IsNaN(floor) && !math.IsInf(below, -1) {
		for i, s := range score {
			if s+delta+roundSlack(s) <= below {
				continue
			}
			if s+rowDelta(int32(i))+roundSlack(s) > below {
				cands = append(cands, int32(i))
			}
		}
	}
	if len(cands) > len(score)/2 || len(cands) < len(order) {
		cands = cands[:0]
		for i := range score {
			cands = append(cands, int32(i))
		}
		sc.cands = cands
		rescore(cands)
		return sc.topEntries(depth, comps, finish)
	}
	sc.cands = cands
	rescore(cands)
	keys := sc.keys[:len(cands)]
	for k, i := range cands {
		keys[k] = rankKeyOf(score[i], int(i))
	}
	slices.Sort(keys)
	return sc.entries(keys[:min(depth, len(keys))], comps, finish)
}

// roundSlack covers the float64 rounding of a score computed from an
// approximate rather than the exact cosine (a few units in the last place).
func roundSlack(s float64) float64 { return 1e-12 * (1 + math.Abs(s)) }

// topOrder returns the sort keys (see rankKeyOf) of the depth best scores,
// best first; all of them when depth <= 0 or depth >= len(score). keys and
// tmp are scratch of len(score); the result aliases one of them.
//
// Scores sort descending, ties by index (the list order, so by id), for
// deterministic output. Keys are plain uint64s (the score's float32 bits
// made order-preserving, then the index) rather than a comparison function:
// scores that agree to float32 precision are a tie anyway. The whole
// library is radix-sorted; a shallow top comes from a max-heap of depth
// keys over one pass, which most keys leave at the first comparison.
func topOrder(score []float64, depth int, keys, tmp []uint64) []uint64 {
	n := len(score)
	if depth <= 0 || depth >= n {
		for i, s := range score {
			keys[i] = rankKeyOf(s, i)
		}
		return radixHigh32(keys, tmp)
	}
	heap := keys[:depth]
	for i := range depth {
		heap[i] = rankKeyOf(score[i], i)
	}
	for i := depth/2 - 1; i >= 0; i-- {
		siftDown(heap, i)
	}
	// Most scores are far below the worst kept one: a float64 comparison
	// with the float32 just below it (anything under rounds lower) skips
	// them without making a key.
	cut := below(score[uint32(heap[0])])
	for i := depth; i < n; i++ {
		if score[i] < cut {
			continue
		}
		if k := rankKeyOf(score[i], i); k < heap[0] {
			heap[0] = k
			siftDown(heap, 0)
			cut = below(score[uint32(heap[0])])
		}
	}
	slices.Sort(heap)
	return heap
}

// below returns the largest float32 less than s's float32, as a float64: a
// score under it sorts strictly after s. NaN and -Inf give -Inf (nothing
// is skipped).
func below(s float64) float64 {
	f := float32(s)
	if f != f || math.IsInf(float64(f), -1) {
		return math.Inf(-1)
	}
	return float64(math.Nextafter32(f, float32(math.Inf(-1))))
}

// siftDown restores the max-heap property of h below i.
func siftDown(h []uint64, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1] > h[c] {
			c++
		}
		if h[i] >= h[c] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// rankKeyOf is the sort key of score s at list position i: ascending keys
// are descending scores, ties by ascending position.
func rankKeyOf(s float64, i int) uint64 {
	return uint64(descendingKey(s))<<32 | uint64(uint32(i))
}

// radixHigh32 sorts keys by their high 32 bits, stably, 8 bits a pass: the
// same order as sorting the whole keys when the low bits ascend in input
// order (they are the list index). It returns whichever of keys and tmp
// holds the result. A radix sort on the score half beats pdqsort's branchy
// partitions by ~10% of a whole Route.
func radixHigh32(keys, tmp []uint64) []uint64 {
	if len(keys) < 2 {
		return keys
	}
	for shift := uint(32); shift < 64; shift += 8 {
		var count [257]int
		for _, k := range keys {
			count[(k>>shift)&0xff+1]++
		}
		if count[(keys[0]>>shift)&0xff+1] == len(keys) {
			continue // every key has this byte: nothing to move
		}
		for i := 1; i < len(count); i++ {
			count[i] += count[i-1]
		}
		for _, k := range keys {
			b := (k >> shift) & 0xff
			tmp[count[b]] = k
			count[b]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// descendingKey maps a score to a uint32 that sorts ascending as the score
// sorts descending; NaN sorts last.
func descendingKey(s float64) uint32 {
	f := float32(s)
	switch {
	case f != f:
		f = float32(math.Inf(-1))
	case f == 0:
		f = 0 // -0 ties with 0
	}
	b := math.Float32bits(f)
	if b>>31 == 1 {
		b = ^b // negative: flip all bits
	} else {
		b |= 1 << 31
	}
	return ^b
}
