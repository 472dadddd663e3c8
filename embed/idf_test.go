package embed

import (
	"math/rand/v2"
	"testing"
)

// TestIDFTableMatchesMap checks the table against a Go map on keys chosen to
// collide in the low bits (long probe runs, wrap-around at the end of the
// table), on the empty-slot key 0, on overwrites and on misses.
func TestIDFTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		keys func(i int) uint64
		n    int
	}{
		{"random", func(int) uint64 { return rng.Uint64() }, 5000},
		{"same low bits", func(i int) uint64 { return uint64(i+1) << 40 }, 300},
		{"wrap-around", func(i int) uint64 { return 15 | uint64(i)<<32 }, 7},
		{"zero key", func(i int) uint64 { return uint64(i) }, 3},
		{"empty", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[uint64]float32{}
			tab := newIDFTable(tt.n)
			for i := 0; i < tt.n; i++ {
				k := tt.keys(i)
				want[k] = float32(i) + 0.5
				tab.set(k, float32(i)+0.5)
			}
			for k := range want { // overwrite half
				if k%2 == 0 {
					want[k] += 10
					tab.set(k, want[k])
				}
			}
			if tab.len() != len(want) {
				t.Fatalf("len %d, want %d", tab.len(), len(want))
			}
			for k, v := range want {
				if got, ok := tab.get(k); !ok || got != v {
					t.Fatalf("get(%#x) = %v, %v; want %v", k, got, ok, v)
				}
			}
			for i := 0; i < 1000; i++ {
				k := rng.Uint64()
				if _, in := want[k]; in {
					continue
				}
				if got, ok := tab.get(k); ok {
					t.Fatalf("get(%#x) = %v for a key never set", k, got)
				}
			}
			if _, in := want[0]; !in {
				if _, ok := tab.get(0); ok {
					t.Fatal("key 0 found but never set")
				}
			}
		})
	}
}
