package embed

import (
	"math/rand/v2"
	"testing"
)

// u64Table behaves as a map across growth and resets, including keys that
// collide in the low bits.
func TestU64Table(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var tab u64Table
	for round := range 20 {
		want := map[uint64]int32{}
		for range r.IntN(5000) {
			k := r.Uint64()
			if r.IntN(3) == 0 {
				k &= 0xff << 40 // same low bits: long probe runs
			}
			p, added := tab.ref(k)
			if _, had := want[k]; had == added {
				t.Fatalf("round %d: key %x added %v, map had it %v", round, k, added, had)
			}
			*p += int32(k % 7)
			want[k] += int32(k % 7)
		}
		got := map[uint64]int32{}
		tab.each(func(k uint64, v int32) { got[k] = v })
		if len(got) != len(want) || tab.n != len(want) {
			t.Fatalf("round %d: %d keys (n %d), want %d", round, len(got), tab.n, len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("round %d: key %x = %d, want %d", round, k, got[k], v)
			}
		}
		tab.reset()
		if round == 10 {
			tab.gen = ^uint32(0) // the next reset wraps
		}
	}
}
