package router

import (
	"math"
	"math/rand/v2"
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

// TestRadixHigh32MatchesSort: the radix pass gives exactly the order of
// sorting the whole keys, for keys whose low half is the ascending index.
func TestRadixHigh32MatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	highs := map[string]func() uint32{
		"random":     r.Uint32,
		"few values": func() uint32 { return uint32(r.IntN(4)) << 30 },
		"all equal":  func() uint32 { return 0xdeadbeef },
		"low byte":   func() uint32 { return uint32(r.IntN(256)) },
	}
	for name, high := range highs {
		for _, n := range []int{0, 1, 2, 7, 407, 3000} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = uint64(high())<<32 | uint64(i)
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			if got := radixHigh32(keys, make([]uint64, n)); !slices.Equal(got, want) {
				t.Errorf("%s, %d keys: radix order differs from sort", name, n)
			}
		}
	}
}
