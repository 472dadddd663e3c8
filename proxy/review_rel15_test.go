package proxy

// Reliability review, round 15: upstream answers the proxy relays as a
// success although the client cannot read them, and misclassified upstream
// failures.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// rel15Harness is a proxy in front of the given upstream handler.
func rel15Harness(t *testing.T, hf http.HandlerFunc, mod func(*Config)) *harness {
	t.Helper()
	up := httptest.NewServer(hf)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL + "/v1")
	return newHarness(t, func(c *Config) {
		c.Upstream = u
		if mod != nil {
			mod(c)
		}
	})
}

// An upstream (or something in front of it: a captive portal, an ingress
// serving its SPA, a load balancer's error page with status 200) answering
// a routed model request with 200 and a body that is not the API's answer
// is an upstream failure: the client must get a 502 in its API's envelope,
// the request must not be logged and counted as complete. Today the body
// is relayed as a 200 success (the non-streaming path takes ReadAnswer's
// !ok for "nothing to do" and writes the raw body; the streaming path
// relays any non-event-stream answer "as is").
func TestRel15Upstream200NotAnAnswer(t *testing.T) {
	html := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><body>Sign in to continue</body></html>")
	}
	truncated := func(w http.ResponseWriter, r *http.Request) {
		// A clean end (chunked terminator) after half an answer: an
		// upstream worker that died behind a buffering proxy.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assi`)
	}
	sse := func(w http.ResponseWriter, r *http.Request) {
		// A gateway that streams whatever the client asked: the proxy's own
		// load_skill call reaches a client that cannot answer it.
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"demo/pdf\"}"}}]}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`+"\n\ndata: [DONE]\n\n")
	}
	anthropic := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	cases := []struct {
		name, path, body string
		hdr              map[string]string
		up               http.HandlerFunc
	}{
		{"chat html", "/v1/chat/completions", simpleChat, nil, html},
		{"chat truncated json", "/v1/chat/completions", simpleChat, nil, truncated},
		{"chat stream html", "/v1/chat/completions", streamChat(""), nil, html},
		{"chat answered with an event stream", "/v1/chat/completions", simpleChat, nil, sse},
		{"responses html", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, nil, html},
		{"messages html", "/v1/messages", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"make me a pdf"}]}`, anthropic, html},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := rel15Harness(t, tc.up, nil)
			resp, b := h.do("POST", tc.path, tc.body, tc.hdr)
			if resp.StatusCode != http.StatusBadGateway {
				t.Errorf("status %d (Content-Type %q), want 502 in the API's error envelope; body: %.100s",
					resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			var env map[string]any
			if json.Unmarshal(b, &env) != nil || env["error"] == nil {
				t.Errorf("body is not the API's error envelope: %.100s", b)
			}
			if strings.Contains(h.logText(), `"outcome":"complete","duration_ms"`) && strings.Contains(h.logText(), `"status":200`) {
				t.Errorf("logged as a complete 200: %s", h.logText())
			}
		})
	}
}

// docs/proxy.md, Errors: "upstream closed or reset the connection without
// a (whole) response: 502 (upstream_connection_closed)". Over HTTP/2 (the
// default transport negotiates it with any TLS upstream: OpenAI, Anthropic,
// most gateways) a reset arrives as RST_STREAM, which net/http reports as a
// StreamError, not ECONNRESET or EOF: classifyUpstream falls through to
// "upstream_unreachable" and tells the client the upstream could not be
// reached, although it answered 200 (the log says upstream_status 200),
// and skillrouter_upstream_errors_total counts it as unreachable.
func TestRel15HTTP2ResetMidBodyIsConnectionClosed(t *testing.T) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "400")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // HTTP/2: RST_STREAM INTERNAL_ERROR
	}))
	up.EnableHTTP2 = true
	up.StartTLS()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL + "/v1")
	tr := NewTransport(0).(*http.Transport)
	tr.TLSClientConfig = up.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	t.Cleanup(tr.CloseIdleConnections)
	h := newHarness(t, func(c *Config) { c.Upstream = u; c.Transport = tr })
	resp, b := h.chat(simpleChat, nil)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502: %s", resp.StatusCode, b)
	}
	msg := checkAPIError(t, b, "upstream_connection_closed")
	if strings.Contains(msg, "unreachable") {
		t.Errorf("message says the upstream was unreachable, but it answered 200 and reset the stream: %s", msg)
	}
}

// A redirect from the upstream (an http:// upstream.url redirected to
// https, a moved deployment, a gateway's login redirect) is relayed to the
// client as it came: status 3xx with the upstream's Location. That hands
// the client an internal address of the upstream (docs/proxy.md: upstreams
// are named by host only, never by URL), and a client that follows it (the
// OpenAI and Anthropic SDKs follow redirects) resends its request straight
// to that address, bypassing the proxy: no skills, no tool loop, and the
// proxy's load_skill calls come back to a client that cannot answer them.
// A routed request must get a 502 in its API's envelope instead.
func TestRel15UpstreamRedirectNotRelayed(t *testing.T) {
	h := rel15Harness(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/internal/v1/chat/completions?token=s3cret", http.StatusTemporaryRedirect)
	}, nil)
	h.ts.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, body := range []string{simpleChat, streamChat("")} {
		resp, b := h.chat(body, nil)
		if loc := resp.Header.Get("Location"); loc != "" {
			t.Errorf("the client got the upstream's Location %q (status %d)", loc, resp.StatusCode)
		}
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("status %d, want 502 in the API's envelope: %q", resp.StatusCode, b)
		}
	}
}

// The same misclassification for an answer whose Content-Encoding the
// Transport cannot decode (a gzip header over a plain or corrupt body, as
// a misconfigured gateway sends): the upstream was reached and answered,
// yet the client is told it is unreachable (code upstream_unreachable),
// which sends an operator looking at the network instead of the upstream.
func TestRel15CorruptGzipAnswerIsNotUnreachable(t *testing.T) {
	h := rel15Harness(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		fmt.Fprint(w, "this body is not gzip at all")
	}, nil)
	resp, b := h.chat(simpleChat, nil)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502: %s", resp.StatusCode, b)
	}
	if msg := checkAPIError(t, b, ""); strings.Contains(msg, "unreachable") || strings.Contains(string(b), "upstream_unreachable") {
		t.Errorf("an upstream that answered is reported unreachable: %s", b)
	}
}
