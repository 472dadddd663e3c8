package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// TestAllowedOriginNotForwarded: the proxy answers a browser's CORS itself
// (server.allowed_origins), so the Origin of an allowed web application
// stays on the browser's hop. Forwarded, it makes the upstream treat the
// proxy's server-side call as a browser's: Anthropic's API answers any
// request carrying Origin 401 authentication_error "CORS requests must set
// 'anthropic-dangerous-direct-browser-access' header" (or refuses it
// outright for organizations that disallow CORS). Every request the proxy
// sends for the client goes without it: routed, hidden rounds, passed
// through. The same holds for the browser's Cookie and the forwarding
// headers an ingress adds (the end user's address), while any other header
// (an organization, a custom one) still goes as sent.
func TestAllowedOriginNotForwarded(t *testing.T) {
	loadThenAnswer := []fakeai.Responder{
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}),
	}
	tests := []struct {
		name, method, path, body string
		script                   bool
	}{
		{"messages, with a hidden round", "POST", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, true},
		{"messages stream", "POST", "/v1/messages", `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"make me a pdf"}]}`, false},
		{"chat, with a hidden round", "POST", "/v1/chat/completions", simpleChat, true},
		{"responses", "POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, false},
		{"pass-through", "GET", "/v1/models", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Access.AllowedOrigins = []string{"https://chat.example.com"} })
			if tc.script {
				h.up.Script(loadThenAnswer...)
			}
			hdr := map[string]string{"Origin": "https://chat.example.com", "X-Api-Key": "sk-test", "Anthropic-Version": "2023-06-01",
				"Cookie": "session=s3cret", "X-Forwarded-For": "203.0.113.7", "Forwarded": "for=203.0.113.7", "X-Real-Ip": "203.0.113.7",
				"X-Forwarded-Host": "chat.example.com", "X-Forwarded-Proto": "https", "X-Forwarded-Port": "443",
				"True-Client-IP": "203.0.113.7", "CF-Connecting-IP": "203.0.113.7", "Fastly-Client-IP": "203.0.113.7", "X-Client-IP": "203.0.113.7",
				"Openai-Organization": "org-1", "X-Custom": "kept"}
			resp, b := h.do(tc.method, tc.path, tc.body, hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "https://chat.example.com" {
				t.Errorf("CORS answer lost: %v", resp.Header)
			}
			reqs := h.up.Requests()
			if tc.script && len(reqs) < 2 {
				t.Fatalf("upstream got %d requests, want a hidden round", len(reqs))
			}
			for _, r := range reqs {
				for _, k := range []string{"Origin", "Cookie", "X-Forwarded-For", "Forwarded", "X-Real-Ip", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port",
					"True-Client-Ip", "Cf-Connecting-Ip", "Fastly-Client-Ip", "X-Client-Ip"} {
					if v := r.Header.Get(k); v != "" {
						t.Errorf("%s %s went upstream with %s %q", r.Method, r.Path, k, v)
					}
				}
				for _, k := range []string{"Openai-Organization", "X-Custom"} {
					if r.Header.Get(k) == "" {
						t.Errorf("%s %s went upstream without %s", r.Method, r.Path, k)
					}
				}
			}
		})
	}
}

// TestRefusalsQuoteRequestValuesShortly: a 400 quotes what the client sent
// wrong, and the access log records the message; a value of any length
// (a header up to net/http's 1 MB, a body up to body_limit) is quoted cut
// short, so one request cannot write a multi-megabyte log line (which log
// pipelines drop: Loki, CloudWatch and Cloud Logging cap a line or event
// at 256 KB) nor get it echoed back.
func TestRefusalsQuoteRequestValuesShortly(t *testing.T) {
	long := strings.Repeat("9", 300_000)
	msgs := func(role string) string {
		return `{"model":"m","max_tokens":10,"messages":[{"role":"` + role + `","content":"hi"}]}`
	}
	tests := []struct {
		name, path, body string
		hdr              map[string]string
		status           int
	}{
		{"X-Skillrouter-Top-K", "/v1/chat/completions", simpleChat, map[string]string{HeaderTopK: "x" + long}, 400},
		{"X-Skillrouter-Strategy", "/v1/chat/completions", simpleChat, map[string]string{HeaderStrategy: "x" + long}, 400},
		{"X-Skillrouter-Disable", "/v1/chat/completions", simpleChat, map[string]string{HeaderDisable: "x" + long}, 400},
		{"X-Skillrouter-Catalog", "/v1/chat/completions", simpleChat, map[string]string{HeaderCatalog: "x" + long}, 400},
		{"X-Skillrouter-Arm", "/v1/chat/completions", simpleChat, map[string]string{HeaderArmIn: "x" + long}, 400},
		{"Content-Encoding", "/v1/chat/completions", simpleChat, map[string]string{"Content-Encoding": "x" + long}, 415},
		{"chat role", "/v1/chat/completions", msgs("x" + long), nil, 400},
		{"chat n", "/v1/chat/completions", `{"model":"m","n":1.` + long + `,"messages":[{"role":"user","content":"hi"}]}`, nil, 400},
		{"messages role", "/v1/messages", msgs("x" + long), nil, 400},
		{"responses role", "/v1/responses", `{"model":"m","input":[{"role":"x` + long + `","content":"hi"}]}`, nil, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.AB = &ABConfig{Arms: []Arm{{Name: "a", Percent: 50, Rewriter: newFakeRewriter()}, {Name: "b", Percent: 50, Rewriter: newFakeRewriter()}}}
			})
			resp, b := h.do("POST", tc.path, tc.body, tc.hdr)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d: %.300s", resp.StatusCode, b)
			}
			if len(b) > 2000 {
				t.Errorf("error body of %d bytes: %.300s…", len(b), b)
			}
			for _, line := range strings.Split(h.logText(), "\n") {
				if len(line) > 2000 {
					t.Errorf("log line of %d bytes: %.300s…", len(line), line)
				}
			}
		})
	}
}

// TestAccessLogPathShort: the access log records the request path, which
// the client chooses up to net/http's 1 MB header limit; it is recorded cut
// short (see TestRefusalsQuoteRequestValuesShortly), for the proxy's own
// routes, pass-through and handlers served beside it (Protect: MCP).
func TestAccessLogPathShort(t *testing.T) {
	long := "/" + strings.Repeat("a", 300_000)
	tests := []struct {
		name, path string
		protect    bool
		relayed    bool // the answer is the upstream's
	}{
		{"pass-through", "/v1/files" + long, false, true},
		{"unknown path", long, false, false},
		{"beside the proxy, refused", "/mcp" + long, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Access.APIKeys = []string{"sk-client"} })
			target := h.srv.ServeHTTP
			if tc.protect {
				target = h.srv.Protect(http.NotFoundHandler()).ServeHTTP
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", tc.path, nil)
			req.Host = "127.0.0.1"
			req.Header.Set("Authorization", "Bearer sk-client")
			if tc.protect {
				req.Header.Del("Authorization")
			}
			target(rec, req)
			if !tc.relayed && rec.Body.Len() > 2000 {
				t.Errorf("answer of %d bytes: %.300s…", rec.Body.Len(), rec.Body)
			}
			logs := h.logText()
			if !strings.Contains(logs, `"path":"`) {
				t.Fatalf("no access log line: %s", logs)
			}
			for _, line := range strings.Split(logs, "\n") {
				if len(line) > 2000 {
					t.Errorf("log line of %d bytes: %.300s…", len(line), line)
				}
			}
		})
	}
}

// TestRetryHeadersReachTheClient: the SDKs decide whether and when to retry
// from the upstream's refusal: status, retry-after (-ms), x-should-retry;
// and report its request id. A refusal of a routed request, on its first
// round or a hidden one, streamed or not, reaches the client with them.
func TestRetryHeadersReachTheClient(t *testing.T) {
	refuse := func(status int) fakeai.Responder {
		return func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
			h := w.Header()
			h.Set("Retry-After", "7")
			h.Set("Retry-After-Ms", "7000")
			h.Set("X-Should-Retry", "true")
			h.Set("Request-Id", "req_9")
			h.Set("X-Ratelimit-Remaining-Requests", "0")
			h.Set("Anthropic-Ratelimit-Requests-Remaining", "0")
			h.Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`))
		}
	}
	load := fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}})
	tests := []struct {
		name, path, body string
		status           int
		later            bool // refused on the hidden round
	}{
		{"chat 429", "/v1/chat/completions", simpleChat, 429, false},
		{"chat 429 on a hidden round", "/v1/chat/completions", simpleChat, 429, true},
		{"chat stream 503", "/v1/chat/completions", streamChat(""), 503, false},
		{"responses 429", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, 429, false},
		{"messages 529", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, 529, false},
		{"messages 529 on a hidden round", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, 529, true},
		{"messages stream 529", "/v1/messages", `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"make me a pdf"}]}`, 529, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if tc.later {
				h.up.Script(load, refuse(tc.status))
			} else {
				h.up.Script(refuse(tc.status))
			}
			resp, b := h.do("POST", tc.path, tc.body, map[string]string{"Anthropic-Version": "2023-06-01", "X-Api-Key": "sk-test"})
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			for k, v := range map[string]string{"Retry-After": "7", "Retry-After-Ms": "7000", "X-Should-Retry": "true", "Request-Id": "req_9",
				"X-Ratelimit-Remaining-Requests": "0", "Anthropic-Ratelimit-Requests-Remaining": "0"} {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestUpstreamCORSHeadersStayUpstream: the proxy answers a browser's CORS
// itself (guard.go), so the upstream's own Access-Control-* headers (the
// public APIs send them to allow browsers everywhere) must not replace the
// proxy's answer, and the proxy's Vary: Origin is kept beside the
// upstream's Vary. A client the proxy forwards for: Expect: 100-continue
// stays with the proxy, which has read the body already (forwarded, the
// transport would wait for the upstream's 100 on every round).
func TestUpstreamCORSHeadersStayUpstream(t *testing.T) {
	withCORS := func(next fakeai.Responder) fakeai.Responder {
		return func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
			w.Header().Set("Access-Control-Allow-Origin", "*")
			w.Header().Set("Access-Control-Expose-Headers", "x-secret-internal")
			w.Header().Set("Vary", "Accept-Encoding")
			// Naming the proxy's own CORS headers hop-by-hop must not
			// delete them from its answer.
			w.Header().Set("Connection", "Access-Control-Allow-Origin")
			next(w, r, rec)
		}
	}
	for _, tc := range []struct {
		name, origin, wantACAO string
	}{
		{"an allowed browser", "https://chat.example.com", "https://chat.example.com"},
		{"no browser", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Access.AllowedOrigins = []string{"https://chat.example.com"} })
			h.up.Script(withCORS(fakeai.Reply(fakeai.Turn{Content: "hi"})))
			hdr := map[string]string{"Expect": "100-continue"}
			if tc.origin != "" {
				hdr["Origin"] = tc.origin
			}
			resp, b := h.chat(simpleChat, hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if got := resp.Header.Values("Access-Control-Allow-Origin"); strings.Join(got, ",") != tc.wantACAO {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.wantACAO)
			}
			if got := resp.Header.Get("Access-Control-Expose-Headers"); strings.Contains(got, "x-secret-internal") {
				t.Errorf("the upstream's Access-Control-Expose-Headers reached the client: %q", got)
			}
			vary := strings.Join(resp.Header.Values("Vary"), ",")
			if !strings.Contains(vary, "Accept-Encoding") || (tc.origin != "" && !strings.Contains(vary, "Origin")) {
				t.Errorf("Vary %q, want the upstream's and the proxy's", vary)
			}
			for _, r := range h.up.Requests() {
				if e := r.Header.Get("Expect"); e != "" {
					t.Errorf("Expect %q went upstream", e)
				}
			}
		})
	}
}

// TestUpstreamSkillrouterHeadersStayUpstream: X-Skillrouter-* response
// headers report this proxy's decision. An upstream's (another skillrouter
// behind this one, or any server) must neither replace nor contradict them,
// streamed or not, nor reach the client when this proxy sets none.
func TestUpstreamSkillrouterHeadersStayUpstream(t *testing.T) {
	spoof := func(next fakeai.Responder) fakeai.Responder {
		return func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
			for _, k := range []string{HeaderSelected, HeaderStrategy, HeaderToolRounds, "X-Skillrouter-Upstream-Only"} {
				w.Header().Set(k, "spoofed")
			}
			// Hop-by-hop by the upstream's word: they stay on its hop,
			// and the proxy's own headers of those names stay too.
			w.Header().Set("Connection", "X-Skillrouter-Selected, x-skillrouter-strategy, X-Upstream-Hop")
			w.Header().Set("X-Upstream-Hop", "1")
			next(w, r, rec)
		}
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(spoof(fakeai.Reply(fakeai.Turn{Content: "hi"})))
			body := simpleChat
			if stream {
				body = streamChat("")
			}
			resp, b := h.chat(body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			for k, vv := range resp.Header {
				for _, v := range vv {
					if strings.HasPrefix(k, "X-Skillrouter-") && strings.Contains(v, "spoofed") {
						t.Errorf("%s: %q came from the upstream", k, v)
					}
				}
			}
			if _, ok := resp.Header[HeaderSelected]; !ok || resp.Header.Get(HeaderStrategy) == "" {
				t.Errorf("the proxy's own decision headers are missing: %v", resp.Header)
			}
			if resp.Header.Get("X-Upstream-Hop") != "" {
				t.Errorf("a header the upstream's Connection names reached the client")
			}
		})
	}
}

// upstream.forward_headers lets named ones of those headers through (any
// case), for an upstream that needs them (a gateway that authenticates by
// cookie); the others stay.
func TestForwardHeadersLetsNamedOnesThrough(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ForwardHeaders = []string{"cookie", "X-Real-IP"} })
	hdr := map[string]string{"Cookie": "gw_session=1", "X-Real-Ip": "203.0.113.7", "X-Forwarded-For": "203.0.113.7"}
	if resp, b := h.do("POST", "/v1/chat/completions", simpleChat, hdr); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	r := h.up.Requests()[0]
	if r.Header.Get("Cookie") != "gw_session=1" || r.Header.Get("X-Real-Ip") != "203.0.113.7" {
		t.Errorf("named headers kept back: %v", r.Header)
	}
	if r.Header.Get("X-Forwarded-For") != "" {
		t.Errorf("X-Forwarded-For went upstream: %v", r.Header)
	}
}
