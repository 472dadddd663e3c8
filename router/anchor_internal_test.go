package router

import (
	"slices"
	"testing"
)

// The memo of a library several routers serve (A/B arms with their own
// embedders) follows each router's index generation apart: one router's
// newer index drops only its own rankings, and a router whose builds count
// lower still memoises.
func TestAnchorMemoPerRouter(t *testing.T) {
	var a anchorMemo
	ra, rb := &Router{}, &Router{}
	ka, kb := anchorKey{r: ra, conv: "c"}, anchorKey{r: rb, conv: "c"}
	a.put(ka, []string{"a2"}, 2)
	a.put(kb, []string{"b1"}, 1)
	if ids, ok := a.get(kb, 1); !ok || !slices.Equal(ids, []string{"b1"}) {
		t.Fatalf("router b's ranking at its generation 1: %v %v", ids, ok)
	}
	if ids, ok := a.get(ka, 2); !ok || !slices.Equal(ids, []string{"a2"}) {
		t.Fatalf("router a's ranking: %v %v", ids, ok)
	}
	a.put(ka, []string{"a3"}, 3) // a settled: its older rankings go, b's stay
	if _, ok := a.get(ka, 2); ok {
		t.Error("a ranking of router a's older index is still served")
	}
	if _, ok := a.get(kb, 1); !ok {
		t.Error("router a's settle dropped router b's ranking")
	}
	a.put(ka, []string{"late"}, 2) // a request ranked before the settle
	if ids, _ := a.get(ka, 3); !slices.Equal(ids, []string{"a3"}) {
		t.Errorf("an older index's ranking replaced the newer one: %v", ids)
	}
}
