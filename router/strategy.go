package router

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/skillrouter/skillrouter/index"
)

// rankResult is one ranking of the whole library. Component slices are
// indexed like rankIndex.list and nil when the strategy did not compute them.
type rankResult struct {
	strategy     Strategy     // what actually ranked (bm25 after a fallback)
	fallback     string       // why the requested strategy could not run; "" if it did
	fallbackCode FallbackCode // fallback's short form
	score        []float64
	order        []int // skill indexes, best first

	keyword []float64
	bm25    []float64 // raw BM25F
	bm25n   []float64 // BM25F / query ceiling, in [0,1)
	cosine  []float64

	// conf is the calibrated absolute match strength selection thresholds
	// apply to. For bm25 and embedding it is the score; hybrid ranks by a
	// mix that normalizes BM25 by the query's own ceiling (better order
	// within a query) but selects by raw BM25 (comparable across queries:
	// a short generic question fully "covered" by common words is not a
	// strong match).
	conf []float64
}

// without returns res with the skills gone reports left out of its order
// (scores stay indexed by position); res, which the cache may hold, is
// not changed.
func (res *rankResult) without(ix *rankIndex, gone func(id string) bool) *rankResult {
	c := *res
	c.order = make([]int, 0, len(res.order))
	for _, i := range res.order {
		if !gone(ix.list[i].ID) {
			c.order = append(c.order, i)
		}
	}
	return &c
}

// rank scores every skill with strategy, falling back to bm25 when the
// strategy needs embeddings that are not available in time.
func (r *Router) rank(ctx context.Context, ix *rankIndex, strategy Strategy, q rankQuery) *rankResult {
	n := len(ix.list)
	res := &rankResult{strategy: strategy, score: make([]float64, n)}
	if strategy == StrategyKeyword {
		res.keyword = make([]float64, n)
		ix.kw.score(q.latest, res.keyword)
		copy(res.score, res.keyword)
		res.conf = res.score
		res.sort(ix)
		return res
	}
	if strategy == StrategyEmbedding || strategy == StrategyHybrid {
		cos, code, reason := r.cosines(ctx, ix, q)
		if reason != "" {
			res.fallback, res.fallbackCode = reason, code
			res.strategy = StrategyBM25
			r.noteFallback(reason)
			r.maybeRetryVectors(ix)
		} else {
			res.cosine = cos
			r.noteRecovered()
		}
	}
	weights, bcal, ncal := hybridFieldWeights, ix.cal.bm25h, ix.cal.bm25nh
	if res.strategy == StrategyBM25 {
		weights, bcal = bm25FieldWeights, ix.cal.bm25
	}
	res.bm25 = make([]float64, n)
	res.bm25n = make([]float64, n)
	ix.bm25.ScoreWeighted(q.analysed(), weights, res.bm25)
	if c := ix.bm25.Ceiling(q.analysed()); c > 0 {
		for i, s := range res.bm25 {
			res.bm25n[i] = s / c
		}
	}
	res.conf = make([]float64, n)
	switch res.strategy {
	case StrategyBM25:
		for i, x := range res.bm25 {
			res.score[i] = bcal.apply(x)
		}
		res.conf = res.score
	case StrategyEmbedding:
		for i, x := range res.cosine {
			res.score[i] = ix.cal.cosine.apply(x)
		}
		res.conf = res.score
	case StrategyHybrid:
		for i := range res.score {
			b, c := bcal.apply(res.bm25[i]), ix.cal.cosine.apply(res.cosine[i])
			res.conf[i] = hybridConfBM25Weight*b + (1-hybridConfBM25Weight)*c
			res.score[i] = hybridBM25Weight*ncal.apply(res.bm25n[i]) + (1-hybridBM25Weight)*c
		}
	}
	if hybridRRF && res.strategy == StrategyHybrid {
		rb, rc := ranksOf(res.bm25), ranksOf(res.cosine)
		for i := range res.score {
			res.score[i] = 1/(60+float64(rb[i])) + 1/(60+float64(rc[i]))
		}
	}
	res.sort(ix)
	return res
}

// ranksOf returns each index's 1-based rank by descending value.
func ranksOf(x []float64) []int {
	order := make([]int, len(x))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(x[b], x[a]) })
	r := make([]int, len(x))
	for pos, i := range order {
		r[i] = pos + 1
	}
	return r
}

// Field weights (name, description, body) of BM25 per use. Alone, bm25
// ranks best with the body barely counting (upstream-queries MRR 0.810 at
// 0.2 against 0.774 at 0.5); inside hybrid the body helps (MRR 0.847 at 0.5
// against 0.835 at 0.2), as the embedding already stresses what a skill is for.
var (
	bm25FieldWeights   = [index.NumFields]float64{3, 2, 0.2}
	hybridFieldWeights = [index.NumFields]float64{3, 2, 0.5}
)

// hybridBM25Weight is bm25's share of the hybrid score; the rest is the
// embedding's. Both components are calibrated to the same scale first (see
// calibration), so the mix is of like with like.
var hybridBM25Weight = 0.4

// hybridRRF switches hybrid ranking to reciprocal rank fusion (k=60), kept
// for measurement: on upstream-queries and MetaTool it ranks worse than the
// calibrated mix (figures in the quality test's log and the report).
var hybridRRF = false

// hybridConfBM25Weight is bm25's share of the hybrid confidence that
// selection thresholds apply to.
var hybridConfBM25Weight = 0.5

// cosines embeds the query within the latency budget and returns every
// skill's cosine similarity, or why it could not (code and details).
func (r *Router) cosines(ctx context.Context, ix *rankIndex, q rankQuery) ([]float64, FallbackCode, string) {
	switch {
	case ix.emb == nil:
		return nil, FallbackNoEmbedder, "no embedder configured"
	case ix.vec == nil:
		return nil, FallbackVectorsUnavailable, fmt.Sprintf("vector index unavailable: %v", ix.vecErr)
	case len(q.turns) == 0:
		return make([]float64, len(ix.list)), "", ""
	}
	texts, weights := q.texts()
	vecs, err := embedWithin(ctx, ix.emb, texts, r.opts.EmbedTimeout)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, FallbackEmbedderTimeout, fmt.Sprintf("embedder %s exceeded its %v latency budget", ix.emb.Name(), r.opts.EmbedTimeout)
		}
		return nil, FallbackEmbedderUnavailable, fmt.Sprintf("embedder %s: %v", ix.emb.Name(), err)
	}
	qv, err := blend(vecs, weights)
	if err != nil {
		return nil, FallbackEmbedderUnavailable, fmt.Sprintf("embedder %s: %v", ix.emb.Name(), err)
	}
	if isZero(qv) {
		// Nothing in the message the embedder could use (only stop words):
		// every similarity is zero.
		return make([]float64, len(ix.list)), "", ""
	}
	sims := make([]float64, ix.vec.Len())
	if err := ix.vec.Similarities(qv, sims); err != nil {
		return nil, FallbackVectorQuery, fmt.Sprintf("vector query: %v", err)
	}
	cos := make([]float64, len(ix.list))
	for k, sim := range sims {
		if i := ix.vecRow[k]; i >= 0 && !math.IsNaN(sim) {
			cos[i] = sim
		}
	}
	return cos, "", ""
}

// embedWithin runs the embedder with a deadline and stops waiting when it
// passes, even if the embedder ignores its context; a late result is
// dropped.
func embedWithin(ctx context.Context, e Embedder, texts []string, budget time.Duration) ([][]float32, error) {
	if o, ok := e.(offlineEmbedder); ok && o.Offline() {
		// In-process and fast: a goroutine hand-off would cost more than
		// it guards against, and delays under CPU contention.
		v, err := e.Embed(ctx, texts)
		if err == nil && len(v) != len(texts) {
			err = fmt.Errorf("%d vectors for %d texts", len(v), len(texts))
		}
		return v, err
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	type result struct {
		v   [][]float32
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := e.Embed(ctx, texts)
		ch <- result{v, err}
	}()
	select {
	case res := <-ch:
		if res.err == nil && len(res.v) != len(texts) {
			res.err = fmt.Errorf("%d vectors for %d texts", len(res.v), len(texts))
		}
		return res.v, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// offlineEmbedder is implemented by in-process embedders (the builtin) that
// need no latency budget.
type offlineEmbedder interface{ Offline() bool }

// blend sums turn vectors with their weights into one unit query vector.
func blend(vecs [][]float32, weights []float64) ([]float32, error) {
	if len(vecs) == 0 || len(vecs[0]) == 0 {
		return nil, errors.New("empty query vector")
	}
	if len(vecs) == 1 {
		return vecs[0], nil
	}
	out := make([]float32, len(vecs[0]))
	for k, v := range vecs {
		if len(v) != len(out) {
			return nil, errors.New("query vectors of different sizes")
		}
		w := float32(weights[k])
		for i, x := range v {
			out[i] += w * x
		}
	}
	var s float64
	for _, x := range out {
		s += float64(x) * float64(x)
	}
	if s > 0 {
		k := float32(1 / math.Sqrt(s))
		for i := range out {
			out[i] *= k
		}
	}
	return out, nil
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 && !math.IsNaN(float64(x)) {
			return false
		}
	}
	return true
}

// sort orders skills by score, ties by id (the list order), for
// deterministic output. It sorts plain uint64 keys (the score's float32
// bits made order-preserving, then the index) rather than calling a
// comparison function: a third of the cost for a whole library, and scores
// that agree to float32 precision are a tie anyway. A radix sort on the
// score half beats pdqsort's branchy partitions by ~10% of a whole Route.
func (res *rankResult) sort(ix *rankIndex) {
	n := len(res.score)
	buf := sortBuffers.Get().(*[]uint64)
	if cap(*buf) < 2*n {
		*buf = make([]uint64, 2*n)
	}
	keys, tmp := (*buf)[:n], (*buf)[n:2*n]
	for i, s := range res.score {
		keys[i] = uint64(descendingKey(s))<<32 | uint64(uint32(i))
	}
	keys = radixHigh32(keys, tmp)
	res.order = make([]int, n)
	for k, key := range keys {
		res.order[k] = int(uint32(key))
	}
	sortBuffers.Put(buf)
}

// sortBuffers recycles the keys of sort, which only the order outlives.
var sortBuffers = sync.Pool{New: func() any { return new([]uint64) }}

// radixHigh32 sorts keys by their high 32 bits, stably, 8 bits a pass: the
// same order as sorting the whole keys when the low bits ascend in input
// order (they are the list index). It returns whichever of keys and tmp
// holds the result.
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

// scored renders the ranking with per-component scores, afresh for each
// caller (callers own their Decision): rendering costs about what a copy of
// a kept rendering would, and a ranking that is never hit again in the
// cache is then built once rather than built and copied.
func (res *rankResult) scored(ix *rankIndex) []Scored {
	out := make([]Scored, len(res.order))
	for k, i := range res.order {
		var c Components
		if res.keyword != nil {
			c.put(compKeyword, res.keyword[i])
		}
		if res.bm25 != nil {
			c.put(compBM25, round4(res.bm25[i]))
			c.put(compBM25Norm, round4(res.bm25n[i]))
		}
		if res.cosine != nil {
			c.put(compCosine, round4(res.cosine[i]))
		}
		if res.strategy == StrategyHybrid {
			c.put(compConfidence, round4(res.conf[i]))
		}
		out[k] = Scored{ID: ix.list[i].ID, Score: round4(res.score[i]), Components: c}
	}
	return out
}

// round4 keeps output readable and stable across platforms' float noise.
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
