package bench

import (
	"math"
	"slices"
)

// Metric definitions (binary relevance: a skill is relevant iff its id is in
// the query's expected list).
//
//   - Ranks are positions in the ranked list exactly as the router returned it,
//     1-based. Ties in score are not re-broken: the router's order (its own
//     deterministic tie-break) is the ranking being measured. A repeated id
//     counts at its first position only.
//   - Queries with expected: [] have no relevant skill: they are excluded from
//     every ranking metric (Hit@k, Recall@k, MRR, nDCG) and from selected
//     precision/recall, and are the population of the false-injection rate.
//   - Selected means auto-loaded: the router's selection as the rewrite
//     applies it, so a skill dropped by the auto-load token budget counts as
//     not selected (the report counts those drops separately).
//   - Selected precision and recall are micro-averaged over the queries with
//     expectations: precision = Σ|selected∩expected| / Σ|selected|, recall =
//     Σ|selected∩expected| / Σ|expected|. Micro-averaging weighs every
//     auto-load decision equally and stays defined when a query selects
//     nothing; precision is 0 when nothing at all was selected.

// HitAt is 1 when any expected id is among the first k ranked ids, else 0.
func HitAt(ranked, expected []string, k int) float64 {
	if len(expected) == 0 || k <= 0 {
		return 0
	}
	for _, id := range topK(ranked, k) {
		if slices.Contains(expected, id) {
			return 1
		}
	}
	return 0
}

// RecallAt is the fraction of expected ids among the first k ranked ids.
func RecallAt(ranked, expected []string, k int) float64 {
	if len(expected) == 0 || k <= 0 {
		return 0
	}
	return float64(overlap(topK(ranked, k), expected)) / float64(len(dedupe(expected)))
}

// ReciprocalRank is 1/rank of the first expected id in the whole ranked list,
// 0 when none is ranked.
func ReciprocalRank(ranked, expected []string) float64 {
	if len(expected) == 0 {
		return 0
	}
	for i, id := range dedupe(ranked) {
		if slices.Contains(expected, id) {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// NDCGAt is the normalised discounted cumulative gain at k with binary gains:
// DCG = Σ_{rank i ≤ k, relevant} 1/log2(i+1), divided by the DCG of the ideal
// ranking (all min(|expected|, k) relevant ids first).
func NDCGAt(ranked, expected []string, k int) float64 {
	exp := dedupe(expected)
	if len(exp) == 0 || k <= 0 {
		return 0
	}
	var dcg float64
	for i, id := range topK(ranked, k) {
		if slices.Contains(exp, id) {
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	var ideal float64
	for i := range min(len(exp), k) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	return dcg / ideal
}

// topK returns the first k distinct ids.
func topK(ranked []string, k int) []string {
	d := dedupe(ranked)
	if len(d) > k {
		d = d[:k]
	}
	return d
}

// overlap counts distinct ids of a that are in b.
func overlap(a, b []string) int {
	n := 0
	for _, id := range dedupe(a) {
		if slices.Contains(b, id) {
			n++
		}
	}
	return n
}

// Judged is one query's outcome under one strategy, as the metrics see it.
type Judged struct {
	Expected []string
	Ranked   []string // ids in router order
	Selected []string // ids auto-loaded
	// Shown lists the ids of the catalog the model saw; ShownKnown is false
	// when the router could not say (then ShownHit is not computed).
	Shown      []string
	ShownKnown bool
}

// Quality aggregates the quality metrics of one strategy over a query set.
type Quality struct {
	Ks                 []int
	HitAt              map[int]float64
	RecallAt           map[int]float64
	MRR                float64
	NDCG10             float64
	SelectedPrecision  float64
	SelectedRecall     float64
	FalseInjectionRate *float64 // nil when the set has no expected: [] query
	// ShownHit is the share of queries with expectations where an expected id
	// was in the catalog shown or auto-loaded; nil when not known for every query.
	ShownHit *float64
	Ranked   int // queries with expectations (the ranking-metric population)
	Empty    int // queries with expected: []
	Injected int // empty-expectation queries that auto-loaded something
}

// Evaluate computes Quality over judged queries for the cut-offs ks.
func Evaluate(js []Judged, ks []int) Quality {
	q := Quality{Ks: slices.Clone(ks), HitAt: map[int]float64{}, RecallAt: map[int]float64{}}
	var selTP, selN, expN int
	shownHits, shownKnown := 0, true
	for _, j := range js {
		if len(j.Expected) == 0 {
			q.Empty++
			if len(j.Selected) > 0 {
				q.Injected++
			}
			continue
		}
		q.Ranked++
		for _, k := range ks {
			q.HitAt[k] += HitAt(j.Ranked, j.Expected, k)
			q.RecallAt[k] += RecallAt(j.Ranked, j.Expected, k)
		}
		q.MRR += ReciprocalRank(j.Ranked, j.Expected)
		q.NDCG10 += NDCGAt(j.Ranked, j.Expected, 10)
		sel := dedupe(j.Selected)
		selTP += overlap(sel, j.Expected)
		selN += len(sel)
		expN += len(dedupe(j.Expected))
		if !j.ShownKnown {
			shownKnown = false
		} else if overlap(j.Expected, append(slices.Clone(j.Shown), sel...)) > 0 {
			shownHits++
		}
	}
	if q.Ranked > 0 {
		n := float64(q.Ranked)
		for _, k := range ks {
			q.HitAt[k] /= n
			q.RecallAt[k] /= n
		}
		q.MRR /= n
		q.NDCG10 /= n
		if shownKnown {
			v := float64(shownHits) / n
			q.ShownHit = &v
		}
	}
	if selN > 0 {
		q.SelectedPrecision = float64(selTP) / float64(selN)
	}
	if expN > 0 {
		q.SelectedRecall = float64(selTP) / float64(expN)
	}
	if q.Empty > 0 {
		v := float64(q.Injected) / float64(q.Empty)
		q.FalseInjectionRate = &v
	}
	return q
}
