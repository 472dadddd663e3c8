package router

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/skillrouter/skillrouter/index"
)

// Scores from different strategies and embedders are not comparable: BM25
// grows with query length, and one embedder's cosine 0.3 is noise where
// another's is a strong match. Each index therefore calibrates its score
// components against the library itself when it is built:
//
//   - noise: the median best score of off-library probe messages (chit-chat,
//     trivia) — what "nothing here is relevant" looks like;
//   - strong: the median best score of the library's own descriptions used
//     as queries — what "this is exactly the skill" looks like.
//
// A component x is mapped to (x-noise)/(strong-noise): 0 is noise, 1 a
// perfect match, for every library and embedder alike. Selection thresholds
// are set on that scale (defaultThreshold), measured on the upstream-queries
// set so that its three must-not-trigger prompts select nothing.

type scale struct{ noise, strong float64 }

func (s scale) apply(x float64) float64 {
	o, d := s.affine()
	return (x - o) / d
}

// affine returns o and d with apply(x) = (x-o)/d: a scale whose strong
// score is not above its noise maps x to itself.
func (s scale) affine() (o, d float64) {
	if s.strong-s.noise < 1e-9 {
		return 0, 1
	}
	return s.noise, s.strong - s.noise
}

// slope is how much apply(x) moves per unit of x.
func (s scale) slope() float64 {
	_, d := s.affine()
	return 1 / d
}

type calibration struct {
	bm25          scale // raw BM25F with the bm25 strategy's field weights
	bm25h, bm25nh scale // raw and ceiling-normalized BM25F with hybrid's
	cosine        scale
}

// defaultThreshold is the minimum calibrated confidence to auto-load, per
// strategy (keyword scores are raw counts: a name match, or two keywords).
// Chosen on upstream-queries (bm25 0.10: 25/41 prompts auto-load their
// skill; hybrid 0.15: 25/41; embedding 0.25: 16/41), as the lowest values at
// which its three must-not-trigger prompts and the calibration probes select
// nothing. They are on the calibrated scale, so they carry over to other
// libraries and embedders.
var defaultThreshold = map[Strategy]float64{
	StrategyKeyword:   keywordNameScore,
	StrategyBM25:      0.10,
	StrategyEmbedding: 0.25,
	StrategyHybrid:    0.15,
}

// threshold is the auto-load threshold for strategy, honoring overrides.
func (r *Router) threshold(ix *rankIndex, s Strategy) float64 {
	if v, ok := r.opts.MinScore[s]; ok {
		return v
	}
	return defaultThreshold[s]
}

// calibrationProbes are messages no skill library should answer. A library
// that does cover one (a weather skill) only shifts the median a little.
var calibrationProbes = []string{
	"hi, how are you?",
	"hello there",
	"thanks, that's all for now",
	"good morning!",
	"what's the capital of Australia?",
	"who wrote Pride and Prejudice?",
	"how tall is Mount Everest?",
	"what is the boiling point of water at sea level?",
	"tell me a joke",
	"what's your name?",
	"who won the football world cup in 2018?",
	"how many days are there in a leap year?",
	"what does the word serendipity mean?",
	"recommend a good movie for tonight",
	"what's the population of Canada?",
	"I'm bored",
	"what is the speed of light?",
	"when did the Roman empire fall?",
	"can you say that again?",
	"ok, sounds good",
	"what's the best pizza topping?",
	"is it going to rain tomorrow?",
	"how do you pronounce croissant?",
	"what year did the first moon landing happen?",
}

// calibrationSelfQueries is how many skill descriptions (spread evenly
// over the library) measure the strong end.
const calibrationSelfQueries = 64

// calibrate measures noise and strong levels for bm25 and, when vectors are
// available, cosine. It never fails: an embedder error keeps the cosine
// scale neutral (raw cosine).
func (r *Router) calibrate(ctx context.Context, ix *rankIndex) calibration {
	var cal calibration
	n := len(ix.list)
	if n == 0 {
		return cal
	}
	var selfs []string
	step := max(1, n/calibrationSelfQueries)
	for i := 0; i < n && len(selfs) < calibrationSelfQueries; i += step {
		d := ix.list[i].Description
		if d == "" {
			d = displayName(ix.list[i])
		}
		selfs = append(selfs, capText(d, 400))
	}
	top := func(x []float64) float64 {
		m := 0.0
		for _, v := range x {
			m = max(m, v)
		}
		return m
	}
	// Best raw and normalized BM25F score of text, per field weighting.
	bm := func(text string, w [index.NumFields]float64) (raw, norm float64) {
		q := newRankQuery([]Message{{Role: "user", Text: text}}, r.opts, nil)
		s := make([]float64, n)
		ix.bm25.ScoreWeighted(q.analysed(), w, s)
		raw = top(s)
		if c := ix.bm25.Ceiling(q.analysed()); c > 0 {
			norm = raw / c
		}
		return raw, norm
	}
	measure := func(w [index.NumFields]float64) (raw, norm scale) {
		var pb, pn, sb, sn []float64
		for _, p := range calibrationProbes {
			r, n := bm(p, w)
			pb, pn = append(pb, r), append(pn, n)
		}
		for _, s := range selfs {
			r, n := bm(s, w)
			sb, sn = append(sb, r), append(sn, n)
		}
		return scale{noise: median(pb), strong: median(sb)}, scale{noise: median(pn), strong: median(sn)}
	}
	cal.bm25, _ = measure(bm25FieldWeights)
	cal.bm25h, cal.bm25nh = measure(hybridFieldWeights)

	if ix.vec != nil {
		texts := append(append([]string(nil), calibrationProbes...), selfs...)
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		vecs, err := ix.emb.Embed(cctx, texts)
		cancel()
		if err == nil && len(vecs) == len(texts) {
			var pc, sc []float64
			for k, v := range vecs {
				hits, err := ix.vec.Query(ctx, v, 1)
				best := 0.0
				if err == nil && len(hits) > 0 {
					best = hits[0].Similarity
				}
				if k < len(calibrationProbes) {
					pc = append(pc, best)
				} else {
					sc = append(sc, best)
				}
			}
			cal.cosine = scale{noise: median(pc), strong: median(sc)}
		} else {
			r.opts.Logger.Warn("could not calibrate embedding scores; using raw cosine", "err", fmt.Sprint(err))
		}
	}
	r.opts.Logger.Debug("calibrated", "bm25_noise", cal.bm25.noise, "bm25_strong", cal.bm25.strong,
		"hybrid_bm25_noise", cal.bm25h.noise, "hybrid_bm25_strong", cal.bm25h.strong,
		"cosine_noise", cal.cosine.noise, "cosine_strong", cal.cosine.strong)
	return cal
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
