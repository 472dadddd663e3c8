package router

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRankSortOrder(t *testing.T) {
	score := []float64{0.5, math.NaN(), -1, 2, 0.5, math.Copysign(0, -1), 0, math.Inf(1), -1e-9, 1e-9}
	// Descending, ties (0.5 at 0 and 4; -0 and 0 at 5 and 6) by index, NaN last.
	want := []int{7, 3, 0, 4, 9, 5, 6, 8, 2, 1}
	for depth := 0; depth <= len(score)+1; depth++ {
		n := len(score)
		keys := topOrder(score, depth, make([]uint64, n), make([]uint64, n))
		got := make([]int, len(keys))
		for k, key := range keys {
			got[k] = int(uint32(key))
		}
		w := want
		if depth > 0 && depth < n {
			w = want[:depth]
		}
		if !slices.Equal(got, w) {
			t.Errorf("depth %d: order %v, want %v", depth, got, w)
		}
	}
}

// TestTopOrderIsPrefix: every shallow top is the start of the whole
// ranking, ties and repeated scores included.
func TestTopOrderIsPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 5, 64, 407, 3000} {
		for _, levels := range []int{3, 1000, 1 << 30} {
			score := make([]float64, n)
			for i := range score {
				score[i] = float64(r.IntN(levels)) / float64(levels)
			}
			all := slices.Clone(topOrder(score, 0, make([]uint64, n), make([]uint64, n)))
			for _, depth := range []int{1, 3, 64, n - 1} {
				if depth <= 0 {
					continue
				}
				got := topOrder(score, depth, make([]uint64, n), make([]uint64, n))
				if !slices.Equal(got, all[:min(depth, n)]) {
					t.Fatalf("n %d, %d score levels, depth %d: top is not the start of the whole ranking", n, levels, depth)
				}
			}
		}
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
