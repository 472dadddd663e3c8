package lru

import (
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		maxCost int
		cost    func(string) int
		puts    []string // keys, values = key
		get     string   // used after the first put
		want    []string // kept
		gone    []string
	}{
		{"by count", 2, 0, nil, []string{"a", "b", "c"}, "", []string{"b", "c"}, []string{"a"}},
		{"recently used kept", 2, 0, nil, []string{"a", "b", "c"}, "a", []string{"a", "c"}, []string{"b"}},
		{"by cost", 10, 5, func(v string) int { return len(v) }, []string{"aa", "bb", "cc"}, "", []string{"bb", "cc"}, []string{"aa"}},
		{"the newest kept over the cost", 10, 1, func(v string) int { return len(v) }, []string{"aa", "bbbb"}, "", []string{"bbbb"}, []string{"aa"}},
	}
	for _, tt := range tests {
		c := New[string, string](tt.max, tt.maxCost, tt.cost)
		for i, k := range tt.puts {
			c.Put(k, k, nil)
			if i == 1 && tt.get != "" {
				c.Get(tt.get)
			}
		}
		for _, k := range tt.want {
			if v, ok := c.Get(k); !ok || v != k {
				t.Errorf("%s: %s lost", tt.name, k)
			}
		}
		for _, k := range tt.gone {
			if _, ok := c.Get(k); ok {
				t.Errorf("%s: %s kept", tt.name, k)
			}
		}
	}
}

func TestCacheReplace(t *testing.T) {
	c := New[string, string](4, 100, func(v string) int { return len(v) })
	c.Put("k", "long", nil)
	longer := func(old, v string) bool { return len(v) > len(old) }
	c.Put("k", "s", longer)
	if v, _ := c.Get("k"); v != "long" || c.Cost() != 4 {
		t.Errorf("kept %q, cost %d", v, c.Cost())
	}
	c.Put("k", "longer", longer)
	if v, _ := c.Get("k"); v != "longer" || c.Cost() != 6 || c.Len() != 1 {
		t.Errorf("kept %q, cost %d, len %d", v, c.Cost(), c.Len())
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := New[int, int](100, 0, nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				c.Put(g*1000+i, i, nil)
				c.Get(i)
			}
		}()
	}
	wg.Wait()
	if c.Len() != 100 {
		t.Errorf("len %d", c.Len())
	}
}
