package router

import (
	"math"
	"slices"
	"testing"
)

func TestRankSortOrder(t *testing.T) {
	score := []float64{0.5, math.NaN(), -1, 2, 0.5, math.Copysign(0, -1), 0, math.Inf(1), -1e-9, 1e-9}
	res := &rankResult{score: score}
	res.sort(nil)
	// Descending, ties (0.5 at 0 and 4; -0 and 0 at 5 and 6) by index, NaN last.
	want := []int{7, 3, 0, 4, 9, 5, 6, 8, 2, 1}
	if !slices.Equal(res.order, want) {
		t.Errorf("order %v, want %v", res.order, want)
	}
}
