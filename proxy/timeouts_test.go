package proxy

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// TestHungUpstreamFailsAtTheHeaderTimeout (issue 14, repro 7): a streamed
// request to an upstream that never answers fails at HeaderTimeout with a
// 504 in the API's envelope, for each client API; the long UpstreamTimeout
// does not apply.
func TestHungUpstreamFailsAtTheHeaderTimeout(t *testing.T) {
	for _, tc := range []struct{ path, body, envelope string }{
		{"/v1/chat/completions", streamChat(""), `"type":"upstream_error"`},
		{"/v1/responses", `{"model":"m","stream":true,"input":"hi"}`, `"type":"upstream_error"`},
		{"/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"type":"timeout_error"`},
	} {
		h := newHarness(t, func(c *Config) { c.HeaderTimeout = 100 * time.Millisecond })
		h.up.Script(fakeai.Hang())
		resp, b := h.do("POST", tc.path, tc.body, nil)
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(b), tc.envelope) ||
			!strings.Contains(string(b), "sent no response headers within 100ms") {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, b)
		}
	}
}

// TestStalledStreamFailsAtTheIdleTimeout: a stream that stops sending ends
// with the API's error event once IdleTimeout passes, with the tool-round
// trailers, also when it is a later round that stalls.
func TestStalledStreamFailsAtTheIdleTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	never := make(chan struct{})
	h.up.Script(
		fakeai.Reply(fakeai.Turn{Content: "a", ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"x"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "one two three", Hold: never, HoldAfter: 2}),
	)
	resp, b := h.chat(streamChat(""), nil)
	a := assemble(t, b)
	if resp.StatusCode != 200 || len(a.Errors) != 1 || !strings.Contains(a.Errors[0], "sent nothing more within 100ms (upstream.idle_timeout)") || a.Done != 0 {
		t.Fatalf("want one idle-timeout error event and no [DONE]: %d %+v", resp.StatusCode, a)
	}
	if resp.Trailer.Get(HeaderToolRounds) != "1" || resp.Trailer.Get(HeaderRoundsExceeded) != "false" {
		t.Fatalf("trailers %v", resp.Trailer)
	}
}

// TestHealthyStreamOutlivesEveryTimeout: a stream that keeps sending runs
// longer than the header, idle and non-streaming timeouts together.
func TestHealthyStreamOutlivesEveryTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.UpstreamTimeout, c.HeaderTimeout, c.IdleTimeout = 150*time.Millisecond, 150*time.Millisecond, 300*time.Millisecond
	})
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "a b c d e f g h i j k l", Interval: 40 * time.Millisecond}))
	start := time.Now()
	_, b := h.chat(streamChat(""), nil)
	a := assemble(t, b)
	if a.Content != "a b c d e f g h i j k l" || len(a.Errors) != 0 || a.Done != 1 {
		t.Fatalf("stream cut: %+v", a)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Skip("the stream was faster than the timeouts it is meant to outlive")
	}
}

func TestConnectTimeoutIsAnUpstreamTimeout(t *testing.T) {
	err := &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}
	if f := classifyUpstream(err); f.status != http.StatusGatewayTimeout || !strings.Contains(f.msg, "could not connect") {
		t.Fatalf("%+v", f)
	}
	if f := classifyUpstream(fmt.Errorf("post: %w", &timeoutError{phase: phaseHeaders, after: time.Second})); f.code != "upstream_timeout" || !strings.Contains(f.msg, "within 1s") {
		t.Fatalf("%+v", f)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// A Messages stream that stalls gets the error type its 504 would have had
// before the stream started (timeout_error), not api_error.
func TestStalledMessagesStreamIsATimeoutError(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	never := make(chan struct{})
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "one two three", Hold: never, HoldAfter: 2}))
	_, b := h.do("POST", "/v1/messages", `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
	if !strings.Contains(string(b), "event: error") || !strings.Contains(string(b), `"type":"timeout_error"`) {
		t.Errorf("stalled stream:\n%s", b)
	}
}

// TestTimeoutNamesItsSetting: the 504 and the log line say which timeout
// cut the exchange, by its configuration key, once: over HTTP/1 (the
// transport reports the context's cause) and HTTP/2 (it reports
// context.Canceled), as every https upstream speaks.
func TestTimeoutNamesItsSetting(t *testing.T) {
	var protos sync.Map
	h2 := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		<-r.Context().Done()
	}))
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)
	h2URL, _ := url.Parse(h2.URL + "/v1")
	for _, tc := range []struct {
		name, body, want string
		http2            bool
	}{
		{"non-streaming", simpleChat, "upstream sent no whole answer within 100ms (upstream.timeout)", false},
		{"streaming", streamChat(""), "upstream sent no response headers within 100ms (upstream.header_timeout)", false},
		{"non-streaming over HTTP/2", simpleChat, "upstream sent no whole answer within 100ms (upstream.timeout)", true},
		{"streaming over HTTP/2", streamChat(""), "upstream sent no response headers within 100ms (upstream.header_timeout)", true},
	} {
		h := newHarness(t, func(c *Config) {
			c.UpstreamTimeout, c.HeaderTimeout = 100*time.Millisecond, 100*time.Millisecond
			if tc.http2 {
				c.Upstream, c.Transport = h2URL, h2.Client().Transport
			}
		})
		h.up.Script(fakeai.Hang())
		resp, b := h.chat(tc.body, nil)
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, b)
		}
		line := h.requestLine("/v1/chat/completions")
		if n := strings.Count(line, "within 100ms"); !strings.Contains(line, tc.want) || n != 1 {
			t.Errorf("%s: log line names the timeout %d times: %s", tc.name, n, line)
		}
	}
	if _, ok := protos.Load("HTTP/2.0"); !ok {
		t.Error("the TLS upstream was not reached over HTTP/2")
	}
}
