package router

import (
	"container/list"
	"sync"
)

// rankCache remembers recent rankings of one index. Agentic clients resend
// the whole conversation on every tool round, so the latest user message —
// and with it the ranking — repeats across many requests; a hit skips the
// query embedding, the similarity scan, BM25 and the sort. It lives in the
// rankIndex, so a library reload starts it empty. Rankings that fell back to
// bm25 are not kept: the embedder may be back on the next request.
type rankCache struct {
	mu  sync.Mutex
	max int
	m   map[rankKey]*list.Element
	lru list.List // of *rankEntry, most recent first
}

type rankEntry struct {
	key rankKey
	res *rankResult
}

// rankCacheBytes bounds the memory of one index's cache; a ranking holds
// about six float64s per skill.
const rankCacheBytes = 32 << 20

// newRankCache sizes a cache for a library of n skills: size entries when
// size > 0, none when size < 0, else as many as rankCacheBytes allows
// (16 to 1,024).
func newRankCache(n, size int) *rankCache {
	switch {
	case size < 0:
		return nil
	case size == 0:
		size = min(max(rankCacheBytes/(max(n, 1)*6*8), 16), 1024)
	}
	return &rankCache{max: size, m: make(map[rankKey]*list.Element, size)}
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
	return e.Value.(*rankEntry).res
}

func (c *rankCache) put(k rankKey, res *rankResult) {
	if c == nil || res.fallback != "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.lru.MoveToFront(e)
		return
	}
	c.m[k] = c.lru.PushFront(&rankEntry{key: k, res: res})
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.m, old.Value.(*rankEntry).key)
	}
}
