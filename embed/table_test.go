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

// TestU64TableTouch: touch reads and changes nothing, on an empty table and
// on one that holds the keys it touches.
func TestU64TableTouch(t *testing.T) {
	var tab u64Table
	keys := []uint64{mix64(1), mix64(2), mix64(3)}
	tab.touch(keys)
	for i, k := range keys {
		v, _ := tab.ref(k)
		*v = int32(i + 1)
	}
	tab.touch(append(keys, mix64(4)))
	if tab.n != len(keys) {
		t.Fatalf("%d keys after touch, want %d", tab.n, len(keys))
	}
	for i, k := range keys {
		if s, ok := tab.slot(k); !ok || tab.slots[s].val != int32(i+1) {
			t.Errorf("key %d: found %v, value %d", i, ok, tab.slots[s].val)
		}
	}
	if _, ok := tab.slot(mix64(4)); ok {
		t.Error("touch added a key")
	}
}
