package bench

import (
	"cmp"
	"math"
	"slices"
)

// Percentile returns the nearest-rank percentile p (0 < p ≤ 100) of xs: the
// smallest value such that at least p% of the values are ≤ it, i.e. the
// element at 1-based rank ceil(p/100·n) of the sorted values. It never
// interpolates, so the result is always an observed value. Zero for no values.
func Percentile[T cmp.Ordered](xs []T, p float64) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	// p·n first: 95·20/100 is exactly 19, (95/100)·20 may not be.
	rank := int(math.Ceil(p * float64(len(s)) / 100))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Mean returns the arithmetic mean of xs, 0 for none.
func Mean[T int | int64 | float64](xs []T) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	return sum / float64(len(xs))
}
