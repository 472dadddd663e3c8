package router

import "testing"

func TestRankCacheEvictsLeastRecent(t *testing.T) {
	c := newRankCache(2)
	a, b, d := &rankResult{}, &rankResult{}, &rankResult{}
	c.put(rankKey{1}, a)
	c.put(rankKey{2}, b)
	if c.get(rankKey{1}) != a { // 1 is now the most recent
		t.Fatal("miss on a fresh entry")
	}
	c.put(rankKey{3}, d)
	if c.get(rankKey{2}) != nil || c.get(rankKey{1}) != a || c.get(rankKey{3}) != d {
		t.Error("did not evict the least recently used entry")
	}
	if c.c.Len() != 2 {
		t.Errorf("%d entries, max 2", c.c.Len())
	}
	c.put(rankKey{4}, &rankResult{fallback: "embedder down"})
	if c.get(rankKey{4}) != nil {
		t.Error("fallback ranking cached")
	}
	for _, tc := range []struct{ size, want int }{{0, rankCacheMax}, {5, 5}} {
		if got := newRankCache(tc.size).c.Max(); got != tc.want {
			t.Errorf("newRankCache(%d).max = %d, want %d", tc.size, got, tc.want)
		}
	}
	// Bytes bound the cache too: whole-library rankings of a large
	// library are not kept by the thousand.
	big := newRankCache(0)
	for k := range 200 {
		big.put(rankKey{uint64(k)}, &rankResult{n: 10000, top: make([]rankEntry, 10000)})
	}
	if big.c.Cost() > rankCacheBytes || big.c.Len() >= 200 || big.c.Len() == 0 {
		t.Errorf("%d rankings of 10,000 kept in %d bytes, bound %d", big.c.Len(), big.c.Cost(), rankCacheBytes)
	}
	if newRankCache(-1) != nil {
		t.Error("size <0 should disable")
	}
}
