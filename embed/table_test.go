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
		for _, s := range tab.slots {
			if s.gen == tab.gen {
				got[s.key] = s.val
			}
		}
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

// TestDFTable: countOnce counts a key once per document stamp however often
// it comes, across growth, low-bit collisions, a restamp and touches, as a
// map of per-document sets would; ref adds counts for merging.
func TestDFTable(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var tab dfTable
	tab.touch([]uint64{1, 2}) // an empty table
	want := map[uint64]int32{}
	stamp := uint32(firstStamp)
	for doc := range 300 {
		keys := make([]uint64, r.IntN(200))
		for i := range keys {
			keys[i] = r.Uint64N(3000) * 0x9e3779b97f4a7c15
			if r.IntN(3) == 0 {
				keys[i] &= 0xff << 40 // same low bits: long probe runs
			}
			if i > 0 && r.IntN(4) == 0 {
				keys[i] = keys[r.IntN(i)] // a duplicate within the document
			}
		}
		seen := map[uint64]bool{}
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				want[k]++
			}
		}
		tab.touch(keys)
		for _, k := range keys {
			tab.countOnce(k, stamp)
		}
		stamp++
		if doc == 150 {
			tab.restamp()
			stamp = firstStamp
		}
	}
	got := map[uint64]int32{}
	tab.each(func(k uint64, c int32) { got[k] = c })
	if len(got) != len(want) || tab.n != len(want) {
		t.Fatalf("%d keys (n %d), want %d", len(got), tab.n, len(want))
	}
	for k, c := range want {
		if got[k] != c {
			t.Fatalf("key %x counted %d times, want %d", k, got[k], c)
		}
	}
	var other dfTable
	for k, c := range want {
		other.ref(k).count += c
	}
	other.ref(12345).count += 2
	other.each(func(k uint64, c int32) { tab.ref(k).count += c })
	for k, c := range want {
		if s := tab.ref(k); s.count != 2*c {
			t.Fatalf("merged key %x: %d, want %d", k, s.count, 2*c)
		}
	}
	if s := tab.ref(12345); s.count != 2 {
		t.Fatalf("merged new key: %d, want 2", s.count)
	}
}
