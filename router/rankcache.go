package router

import (
	"unsafe"

	"github.com/skillrouter/skillrouter/internal/lru"
)

// rankCache remembers recent rankings of one index. Agentic clients resend
// the whole conversation on every tool round, so the latest user message —
// and with it the ranking — repeats across many requests; a hit skips the
// query embedding, the similarity scan, BM25 and the selection of the top.
// It lives in the rankIndex, so a library reload starts it empty. Rankings
// that fell back to bm25 are not kept: the embedder may be back on the next
// request. A ranking holds only its top (rankResult), so the number kept
// does not shrink as the library grows.
type rankCache struct {
	c *lru.Cache[rankKey, *rankResult]
}

// rankCacheBytes bounds the memory of one index's cache; rankCacheMax its
// entries (a request keeps about a hundred ranks: ~7 KB).
const (
	rankCacheBytes = 32 << 20
	rankCacheMax   = 1024
)

// rankBytes estimates what one cached ranking holds.
func rankBytes(res *rankResult) int {
	entry := unsafe.Sizeof(struct {
		k rankKey
		r *rankResult
	}{})
	return int(unsafe.Sizeof(*res)+entry) + 64 + len(res.top)*int(unsafe.Sizeof(rankEntry{}))
}

// DefaultRankCache is how many rankings Options.RankCache 0 keeps at most.
const DefaultRankCache = rankCacheMax

// newRankCache returns a cache of size entries when size > 0, none when
// size < 0, else of up to rankCacheMax entries; either way it holds at most
// rankCacheBytes of rankings.
func newRankCache(size int) *rankCache {
	switch {
	case size < 0:
		return nil
	case size == 0:
		size = rankCacheMax
	}
	return &rankCache{c: lru.New[rankKey, *rankResult](size, rankCacheBytes, rankBytes)}
}

func (c *rankCache) get(k rankKey) *rankResult {
	if c == nil {
		return nil
	}
	res, _ := c.c.Get(k)
	return res
}

// put keeps res under k, replacing a shallower ranking kept there.
func (c *rankCache) put(k rankKey, res *rankResult) {
	if c == nil || res.fallback != "" {
		return
	}
	c.c.Put(k, res, deeper)
}

// deeper reports whether ranking res keeps more of the top than old.
func deeper(old, res *rankResult) bool { return len(res.top) > len(old.top) }
