package router

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// Components must marshal exactly as the map it replaced did.
func TestComponentsJSONMatchesMap(t *testing.T) {
	for _, tc := range []map[string]float64{
		{},
		{"keyword": 1},
		{"bm25": 12.3456, "bm25_norm": 0.5},
		{"bm25": 0, "bm25_norm": 1e-7, "confidence": 2.5e21, "cosine": -0.0001, "keyword": 123456789},
	} {
		var c Components
		for name, v := range tc {
			k := slices.Index(componentNames[:], name)
			if k < 0 {
				t.Fatalf("unknown %s", name)
			}
			c.put(k, v)
		}
		got, err := json.Marshal(Scored{ID: "x", Score: 1, Components: c})
		if err != nil {
			t.Fatal(err)
		}
		type mapScored struct {
			ID         string             `json:"id"`
			Score      float64            `json:"score"`
			Components map[string]float64 `json:"components,omitempty"`
		}
		want, _ := json.Marshal(mapScored{ID: "x", Score: 1, Components: tc})
		if string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		var back Scored
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if back.Components != c {
			t.Errorf("round trip: %+v, want %+v", back.Components, c)
		}
		if len(c.Names()) != len(tc) {
			t.Errorf("Names %v for %v", c.Names(), tc)
		}
		for name, v := range tc {
			if got, ok := c.Get(name); !ok || got != v {
				t.Errorf("Get(%s) = %v, %v", name, got, ok)
			}
		}
	}
	var c Components
	c.put(compCosine, math.NaN())
	if _, err := json.Marshal(c); err == nil {
		t.Error("NaN marshalled without error")
	}
	if err := json.Unmarshal([]byte(`{"rrf":1}`), &c); err == nil {
		t.Error("unknown component accepted")
	}
	if _, ok := c.Get("nope"); ok {
		t.Error("Get of an unknown name reported present")
	}
}
