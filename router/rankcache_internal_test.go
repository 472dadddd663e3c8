package router

import "testing"

func TestRankCacheEvictsLeastRecent(t *testing.T) {
	c := newRankCache(10, 2)
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
	if c.lru.Len() != 2 || len(c.m) != 2 {
		t.Errorf("%d entries, max 2", c.lru.Len())
	}
	c.put(rankKey{4}, &rankResult{fallback: "embedder down"})
	if c.get(rankKey{4}) != nil {
		t.Error("fallback ranking cached")
	}
	for _, tc := range []struct{ n, size, want int }{{407, 0, 1024}, {10000, 0, 69}, {10_000_000, 0, 16}, {10, 5, 5}} {
		if got := newRankCache(tc.n, tc.size).max; got != tc.want {
			t.Errorf("newRankCache(%d, %d).max = %d, want %d", tc.n, tc.size, got, tc.want)
		}
	}
	if newRankCache(10, -1) != nil {
		t.Error("size <0 should disable")
	}
}
