// Package lru is a bounded map that forgets its least recently used
// entries first: bounded by entry count and, optionally, by a cost the
// caller gives each value (its bytes, say). Safe for concurrent use.
package lru

import (
	"container/list"
	"sync"
)

// Cache maps K to V, keeping at most Max entries and, when Cost is set, at
// most MaxCost of their summed cost (always at least the newest entry).
type Cache[K comparable, V any] struct {
	mu      sync.Mutex
	max     int
	maxCost int
	cost    func(V) int
	total   int
	m       map[K]*list.Element
	l       list.List // of *entry[K, V], most recent first
}

type entry[K comparable, V any] struct {
	key K
	val V
}

// New returns a cache of up to maxEntries entries and, when cost is not
// nil, up to maxCost of their cost.
func New[K comparable, V any](maxEntries, maxCost int, cost func(V) int) *Cache[K, V] {
	return &Cache[K, V]{max: maxEntries, maxCost: maxCost, cost: cost, m: make(map[K]*list.Element, min(maxEntries, 64))}
}

// Get returns the value of k and marks it the most recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.l.MoveToFront(e)
	return e.Value.(*entry[K, V]).val, true
}

// Put keeps v under k as the most recently used entry. When k has a value
// already, replace decides whether v takes its place (nil: always).
func (c *Cache[K, V]) Put(k K, v V, replace func(old, v V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.l.MoveToFront(e)
		en := e.Value.(*entry[K, V])
		if replace == nil || replace(en.val, v) {
			c.total += c.costOf(v) - c.costOf(en.val)
			en.val = v
		}
	} else {
		c.m[k] = c.l.PushFront(&entry[K, V]{key: k, val: v})
		c.total += c.costOf(v)
	}
	for c.l.Len() > c.max || c.cost != nil && c.total > c.maxCost && c.l.Len() > 1 {
		old := c.l.Back()
		en := old.Value.(*entry[K, V])
		c.l.Remove(old)
		delete(c.m, en.key)
		c.total -= c.costOf(en.val)
	}
}

// Len returns the number of entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.l.Len()
}

// Cost returns the summed cost of the entries (0 without a cost function).
func (c *Cache[K, V]) Cost() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Max returns the entry bound.
func (c *Cache[K, V]) Max() int { return c.max }

func (c *Cache[K, V]) costOf(v V) int {
	if c.cost == nil {
		return 0
	}
	return c.cost(v)
}
