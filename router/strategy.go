package router

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/skillrouter/skillrouter/index"
)

// rankResult is one ranking of the library: the best-ranked skills with
// their scores. It holds the top of the ranking only (see Query.Ranked), so
// what a request allocates and the ranking cache keeps does not grow with
// the library; the whole-library score arrays live in a rankScratch for the
// duration of rank.
type rankResult struct {
	strategy     Strategy     // what actually ranked (bm25 after a fallback)
	fallback     string       // why the requested strategy could not run; "" if it did
	fallbackCode FallbackCode // fallback's short form
	n            int          // skills ranked: the whole library
	top          []rankEntry  // best first; all n of them when complete
	comps        uint8        // components computed (1<<compKeyword, ...)
}

// rankEntry is one skill of a rankResult. Component fields are zero when
// the strategy did not compute them (see rankResult.comps).
type rankEntry struct {
	i     int32   // list position
	score float64 // what the ranking orders by
	// conf is the calibrated absolute match strength selection thresholds
	// apply to. For bm25 and embedding it is the score; hybrid ranks by a
	// mix that normalizes BM25 by the query's own ceiling (better order
	// within a query) but selects by raw BM25 (comparable across queries:
	// a short generic question fully "covered" by common words is not a
	// strong match).
	conf    float64
	keyword float64
	bm25    float64 // raw BM25F
	bm25n   float64 // BM25F / query ceiling, in [0,1)
	cosine  float64
}

// complete reports whether the result ranks the whole library.
func (res *rankResult) complete() bool { return len(res.top) >= res.n }

// covers reports whether the result holds the first depth ranks (depth <= 0:
// all of them).
func (res *rankResult) covers(depth int) bool {
	return res.complete() || depth > 0 && len(res.top) >= depth
}

// without returns res with the skills gone reports left out of its top;
// res, which the cache may hold, is not changed.
func (res *rankResult) without(ix *rankIndex, gone func(id string) bool) *rankResult {
	c := *res
	c.top = make([]rankEntry, 0, len(res.top))
	for _, e := range res.top {
		if !gone(ix.list[e.i].ID) {
			c.top = append(c.top, e)
		}
	}
	c.n -= len(res.top) - len(c.top) // a complete ranking stays complete
	return &c
}

// rank scores every skill with strategy, falling back to bm25 when the
// strategy needs embeddings that are not available in time, and keeps the
// best depth of them (depth <= 0: all).
func (r *Router) rank(ctx context.Context, ix *rankIndex, strategy Strategy, q rankQuery, depth int) *rankResult {
	n := len(ix.list)
	sc := getRankScratch(n)
	defer rankScratches.Put(sc)
	res := &rankResult{strategy: strategy, n: n}
	score := sc.score
	if strategy == StrategyKeyword {
		clear(sc.keyword)
		ix.kw.score(q.latest, sc.keyword)
		copy(score, sc.keyword)
		res.comps = 1 << compKeyword
		res.top = sc.topEntries(depth, res.comps, func(e *rankEntry) { e.conf = e.score })
		return res
	}
	var cosine []float64
	var approx *index.Prepared // set when cosine holds approximations (see topRescored)
	if strategy == StrategyEmbedding || strategy == StrategyHybrid {
		pq, code, reason := r.cosines(ctx, ix, &q, sc, depth > 0 && depth < n && !hybridRRF)
		if reason != "" {
			res.fallback, res.fallbackCode = reason, code
			res.strategy = StrategyBM25
			r.noteFallback(reason)
			r.maybeRetryVectors(ix)
		} else {
			cosine, approx = sc.cosine, pq
			res.comps |= 1 << compCosine
			r.noteRecovered()
		}
	}
	res.comps |= 1<<compBM25 | 1<<compBM25Norm
	var slack float64 // how far score may be from the exact mix (affine)
	m := mixer{bcal: ix.cal.bm25h, ncal: ix.cal.bm25nh, ccal: ix.cal.cosine}
	weights := hybridFieldWeights
	if res.strategy == StrategyBM25 {
		weights, m.bcal = bm25FieldWeights, ix.cal.bm25
	}
	bm25 := sc.bm25
	clear(bm25)
	ix.bm25.ScoreWeighted(q.analysed(), weights, bm25)
	m.ceiling = ix.bm25.Ceiling(q.analysed())
	// Every skill gets its score; the normalized BM25 and the confidence
	// are worked out only for the skills kept (finish).
	switch res.strategy {
	case StrategyBM25:
		for i, x := range bm25 {
			score[i] = m.bcal.apply(x)
		}
	case StrategyEmbedding:
		for i, x := range cosine {
			score[i] = m.ccal.apply(x)
		}
	case StrategyHybrid:
		if approx != nil {
			// Approximate scores, rescored exactly where they can matter:
			// the affine form spares two divisions a skill.
			var a, b, c float64
			a, b, c, slack = m.affine(approx.MaxAbs())
			for i := range score {
				score[i] = a*bm25[i] + b*cosine[i] + c
			}
		} else {
			for i := range score {
				score[i] = m.hybridScore(bm25[i], cosine[i])
			}
		}
		res.comps |= 1 << compConfidence
	}
	if hybridRRF && res.strategy == StrategyHybrid {
		rb, rc := ranksOf(bm25), ranksOf(cosine)
		for i := range score {
			score[i] = 1/(60+float64(rb[i])) + 1/(60+float64(rc[i]))
		}
	}
	finish := func(e *rankEntry) {
		e.bm25n = m.norm(e.bm25)
		if res.strategy == StrategyHybrid {
			e.conf = m.hybridConf(e.bm25, e.cosine)
		} else {
			e.conf = e.score
		}
	}
	if approx == nil {
		res.top = sc.topEntries(depth, res.comps, finish)
		return res
	}
	// A score moves with the cosine by at most its calibrated weight.
	weight := m.ccal.slope()
	if res.strategy == StrategyHybrid {
		weight *= math.Abs(1 - hybridBM25Weight)
	}
	rowDelta := func(i int32) float64 {
		if k := ix.vectorRow(int(i)); k >= 0 {
			return approx.RowBound(k)*weight + slack
		}
		return slack // no vector: its cosine is exactly 0
	}
	res.top = sc.topRescored(depth, res.comps, finish, approx.Bound()*weight+slack, rowDelta, func(list []int32) {
		rows, exact := sc.rescoreRows(len(list))
		for _, i := range list {
			cosine[i] = 0
			if k := ix.vectorRow(int(i)); k >= 0 {
				rows = append(rows, int32(k))
			}
		}
		approx.ExactRows(rows, exact[:len(rows)])
		at := 0
		for _, i := range list {
			if ix.vectorRow(int(i)) >= 0 {
				if c := exact[at]; !math.IsNaN(c) {
					cosine[i] = c
				}
				at++
			}
			if res.strategy == StrategyHybrid {
				score[i] = m.hybridScore(bm25[i], cosine[i])
			} else {
				score[i] = m.ccal.apply(cosine[i])
			}
		}
	})
	return res
}

// mixer turns a skill's components into its score, as the strategy mixes
// them; the ranking, the exact rescoring of approximated skills and the
// entries kept share it, so all compute the same bits.
type mixer struct {
	bcal, ncal, ccal scale   // raw bm25, ceiling-normalized bm25, cosine
	ceiling          float64 // the query's BM25 ceiling (index.BM25.Ceiling)
}

// norm is BM25 divided by the query's ceiling, in [0,1) (0 without one).
func (m *mixer) norm(bm25 float64) float64 {
	if m.ceiling > 0 {
		return bm25 / m.ceiling
	}
	return 0
}

// hybridScore is the hybrid ranking score: it normalizes BM25 by the
// query's own ceiling (a better order within a query).
func (m *mixer) hybridScore(bm25, cosine float64) float64 {
	return hybridBM25Weight*m.ncal.apply(m.norm(bm25)) + (1-hybridBM25Weight)*m.ccal.apply(cosine)
}

// affine returns hybridScore as a·bm25 + b·cosine + c, and a bound on how
// far the two can differ for cosines of magnitude at most cmax. Each form
// rounds a few operations on values no larger than terms (BM25 over its
// ceiling is below 1), so each is within a few units of rounding of terms
// from the real value.
func (m *mixer) affine(cmax float64) (a, b, c, slack float64) {
	w := hybridBM25Weight
	no, nd := m.ncal.affine()
	co, cd := m.ccal.affine()
	if m.ceiling > 0 {
		a = w / (m.ceiling * nd)
	}
	b = (1 - w) / cd
	c = -w*no/nd - (1-w)*co/cd
	terms := math.Abs(w)*(2+math.Abs(no))/math.Abs(nd) + math.Abs(1-w)*(2*max(1, cmax)+math.Abs(co))/math.Abs(cd)
	return a, b, c, 64 * 0x1p-53 * terms
}

// hybridConf is the hybrid confidence selection thresholds apply to: raw
// BM25, comparable across queries (a short generic question fully
// "covered" by common words is not a strong match).
func (m *mixer) hybridConf(bm25, cosine float64) float64 {
	return hybridConfBM25Weight*m.bcal.apply(bm25) + (1-hybridConfBM25Weight)*m.ccal.apply(cosine)
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

// cosines embeds the query within the latency budget and writes every
// skill's cosine similarity into sc.cosine, or says why it could not (code
// and details). With approx, it may write approximations instead and return
// the prepared query that scores skills exactly (see index.Prepared); a nil
// query means the cosines are exact.
func (r *Router) cosines(ctx context.Context, ix *rankIndex, q *rankQuery, sc *rankScratch, approx bool) (*index.Prepared, FallbackCode, string) {
	switch {
	case ix.emb == nil:
		return nil, FallbackNoEmbedder, "no embedder configured"
	case ix.vec == nil:
		return nil, FallbackVectorsUnavailable, ix.vectorsUnavailable()
	}
	cos := sc.cosine
	clear(cos)
	if len(q.turns) == 0 {
		return nil, "", ""
	}
	texts, weights := q.texts()
	// An embedder that analyses the text as BM25 does hands its terms
	// over (see analysed: the same terms, weights and order).
	var terms func(int, []string)
	var analysed []index.Term
	given := 0
	if q.terms == nil {
		analysed = []index.Term{}
		terms = func(i int, t []string) {
			analysed = index.AddTerms(analysed, t, weights[i])
			given++
		}
	}
	remote, probe := !isOffline(ix.emb), false
	if remote {
		var ok bool
		var why string
		if ok, probe, why = r.embedBreak.allow(); !ok {
			return nil, FallbackEmbedderUnavailable, fmt.Sprintf("embedder %s %s", ix.emb.Name(), why)
		}
	}
	vecs, err := embedWithin(ctx, ix.emb, texts, r.opts.EmbedTimeout, terms)
	if err == nil && terms != nil && given == len(texts) {
		q.terms = analysed
	}
	if err != nil {
		code, why := FallbackEmbedderUnavailable, fmt.Sprintf("embedder %s: %v", ix.emb.Name(), err)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			code, why = FallbackEmbedderTimeout, fmt.Sprintf("embedder %s exceeded its %v latency budget", ix.emb.Name(), r.opts.EmbedTimeout)
		}
		if remote {
			r.embedBreak.done(probe, why, ctx.Err() == nil, retryAfter(err))
		}
		return nil, code, why
	}
	if remote {
		r.embedBreak.done(probe, "", true, 0)
	}
	qv, err := blend(vecs, weights)
	if err != nil {
		return nil, FallbackEmbedderUnavailable, fmt.Sprintf("embedder %s: %v", ix.emb.Name(), err)
	}
	if isZero(qv) {
		// Nothing in the message the embedder could use (only stop words):
		// every similarity is zero.
		return nil, "", ""
	}
	pq, err := ix.vec.Prepare(qv)
	if err != nil {
		return nil, FallbackVectorQuery, fmt.Sprintf("vector query: %v", err)
	}
	sims := cos // vector rows are list positions
	if ix.rowOf != nil {
		sims = sc.simsFor(ix.vec.Len())
	}
	if !approx || !pq.Approximate(sims) {
		for k := range sims {
			sims[k] = pq.Exact(k)
		}
		pq = nil
	}
	if ix.rowOf == nil {
		if pq == nil { // exact values can be NaN; approximations never are
			for i, sim := range cos {
				if math.IsNaN(sim) {
					cos[i] = 0
				}
			}
		}
		return pq, "", ""
	}
	for k, sim := range sims {
		if i := ix.vecRow[k]; i >= 0 && !math.IsNaN(sim) {
			cos[i] = sim
		}
	}
	return pq, "", ""
}

// vectorRow is the vector row of list position i, or -1.
func (ix *rankIndex) vectorRow(i int) int {
	if ix.rowOf == nil {
		return i
	}
	return int(ix.rowOf[i])
}

// embedWithin runs the embedder with a deadline and stops waiting when it
// passes, even if the embedder ignores its context; a late result is
// dropped.
func embedWithin(ctx context.Context, e Embedder, texts []string, budget time.Duration, terms func(i int, terms []string)) ([][]float32, error) {
	if isOffline(e) {
		// In-process and fast: a goroutine hand-off would cost more than
		// it guards against, and delays under CPU contention.
		var v [][]float32
		var err error
		if te, ok := e.(termEmbedder); ok && terms != nil {
			v, err = te.EmbedTerms(ctx, texts, terms)
		} else {
			v, err = e.Embed(ctx, texts)
		}
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

func isOffline(e Embedder) bool {
	o, ok := e.(offlineEmbedder)
	return ok && o.Offline()
}

// termEmbedder is an offline embedder that analyses a text into BM25's
// terms on its way to the vector (the builtin), and hands them over, so
// that a query is split, stop-listed and stemmed once. A wrapper that
// embeds the builtin and changes Embed must change EmbedTerms alike.
type termEmbedder interface {
	EmbedTerms(ctx context.Context, texts []string, terms func(i int, terms []string)) ([][]float32, error)
}

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

// scored renders the first depth entries of the ranking (depth <= 0: all
// it holds) with per-component scores, afresh for each caller (callers own
// their Decision).
func (res *rankResult) scored(ix *rankIndex, depth int) []Scored {
	top := res.top
	if depth > 0 && len(top) > depth {
		top = top[:depth]
	}
	out := make([]Scored, len(top))
	for k, e := range top {
		var c Components
		if res.comps&(1<<compKeyword) != 0 {
			c.put(compKeyword, e.keyword)
		}
		if res.comps&(1<<compBM25) != 0 {
			c.put(compBM25, round4(e.bm25))
			c.put(compBM25Norm, round4(e.bm25n))
		}
		if res.comps&(1<<compCosine) != 0 {
			c.put(compCosine, round4(e.cosine))
		}
		if res.comps&(1<<compConfidence) != 0 {
			c.put(compConfidence, round4(e.conf))
		}
		out[k] = Scored{ID: ix.list[e.i].ID, Score: round4(e.score), Components: c}
	}
	return out
}

// round4 keeps output readable and stable across platforms' float noise.
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
