package router

import (
	"container/list"
	"sync"
	"unsafe"
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
	mu    sync.Mutex
	max   int // entries
	bytes int // of the rankings kept
	m     map[rankKey]*list.Element
	lru   list.List // of *cachedRank, most recent first
}

type cachedRank struct {
	key rankKey
	res *rankResult
}

// rankCacheBytes bounds the memory of one index's cache; rankCacheMax its
// entries (a request keeps about a hundred ranks: ~7 KB).
const (
	rankCacheBytes = 32 << 20
	rankCacheMax   = 1024
)

// rankBytes estimates what one cached ranking holds.
func rankBytes(res *rankResult) int {
	return int(unsafe.Sizeof(*res)+unsafe.Sizeof(cachedRank{})) + 64 + len(res.top)*int(unsafe.Sizeof(rankEntry{}))
}

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
	return &rankCache{max: size, m: make(map[rankKey]*list.Element, min(size, 64))}
}

func (c *rankCache) get(k rankKey) *rankResult {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cachedRank).res
}

// put keeps res under k, replacing a shallower ranking kept there.
func (c *rankCache) put(k rankKey, res *rankResult) {
	if c == nil || res.fallback != "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.lru.MoveToFront(e)
		cr := e.Value.(*cachedRank)
		if len(res.top) > len(cr.res.top) {
			c.bytes += rankBytes(res) - rankBytes(cr.res)
			cr.res = res
		}
	} else {
		c.m[k] = c.lru.PushFront(&cachedRank{key: k, res: res})
		c.bytes += rankBytes(res)
	}
	for c.lru.Len() > c.max || c.bytes > rankCacheBytes && c.lru.Len() > 1 {
		old := c.lru.Back()
		cr := old.Value.(*cachedRank)
		c.lru.Remove(old)
		delete(c.m, cr.key)
		c.bytes -= rankBytes(cr.res)
	}
}
