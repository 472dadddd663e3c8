package proxy

import (
	"encoding/json"
	"testing"

	"github.com/skillrouter/skillrouter/upstreamcheck"
)

type fixedCheck upstreamcheck.Result

func (f fixedCheck) Last() upstreamcheck.Result { return upstreamcheck.Result(f) }

// TestReadyzReportsUpstreams: /readyz's body carries the last upstream
// check, ready or not; a failing upstream never makes the proxy unready.
func TestReadyzReportsUpstreams(t *testing.T) {
	down := fixedCheck{Name: "upstream.url", Host: "127.0.0.1:11434", Status: upstreamcheck.StatusNotFound, HTTPStatus: 404,
		Error: "GET /models answered 404", Hint: "did you mean http://127.0.0.1:11434/v1?", LatencyMS: 1.5}
	h := newHarness(t, func(c *Config) { c.UpstreamChecks = []UpstreamCheck{down} })
	type body struct {
		Status    string                 `json:"status"`
		Upstreams []upstreamcheck.Result `json:"upstreams"`
	}
	for _, ready := range []bool{true, false} {
		h.rw.ready = ready
		resp, b := h.do("GET", "/readyz", "", nil)
		var got body
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		want := 200
		if !ready {
			want = 503
		}
		if resp.StatusCode != want || len(got.Upstreams) != 1 || got.Upstreams[0].Status != upstreamcheck.StatusNotFound ||
			got.Upstreams[0].Hint != down.Hint || got.Upstreams[0].LatencyMS != 1.5 || got.Upstreams[0].Host != down.Host {
			t.Fatalf("ready=%v: %d %s", ready, resp.StatusCode, b)
		}
	}
	// Without checks, no upstreams key.
	h = newHarness(t, nil)
	_, b := h.do("GET", "/readyz", "", nil)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if _, ok := m["upstreams"]; ok {
		t.Errorf("upstreams without checks: %s", b)
	}
}
