package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
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

// An upstream that refuses the request naming the proxy's tool (a model
// that takes no tools, or not these) fails every request alike: the log
// line says so at warn, with what to change; the client gets the refusal
// as it came, streamed or not.
func TestUpstreamRefusingProxyToolsIsLogged(t *testing.T) {
	for _, stream := range []bool{false, true} {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Status(400, "Unknown tool type or name: load_skill is not permitted"))
		body := simpleChat
		if stream {
			body = streamChat("")
		}
		resp, b := h.chat(body, nil)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "load_skill is not permitted") {
			t.Fatalf("stream=%v: %d %s", stream, resp.StatusCode, b)
		}
		// The line is written once the handler returns, after the answer.
		waitFor(t, func() bool { return strings.Contains(h.logText(), `"msg":"request"`) })
		logs := h.logText()
		if !strings.Contains(logs, `"level":"WARN","msg":"request"`) || !strings.Contains(logs, "--no-tools") {
			t.Errorf("stream=%v: no warning with a hint:\n%s", stream, logs)
		}
	}
	// Another refusal stays at info, without the hint.
	h := newHarness(t, nil)
	h.up.Script(fakeai.Status(400, "temperature is out of range"))
	h.chat(simpleChat, nil)
	waitFor(t, func() bool { return strings.Contains(h.logText(), `"msg":"request"`) })
	if logs := h.logText(); strings.Contains(logs, "WARN") || strings.Contains(logs, "--no-tools") {
		t.Errorf("a refusal of something else is flagged:\n%s", logs)
	}
}
