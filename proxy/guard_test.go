package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// TestBrowserProtections (issue 14, repro 3): a request from a web page
// (any Origin not allowed, even a "simple" text/plain POST) and a Host that
// is not this server (DNS rebinding) are refused before anything goes
// upstream; SDKs and curl, which send no Origin, are not affected.
func TestBrowserProtections(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Access.AllowedOrigins = []string{"https://app.example"}
		c.Access.AllowedHosts = []string{"router.lan", "*.svc.cluster.local"}
	})
	tests := []struct {
		name   string
		hdr    map[string]string
		host   string
		status int
		code   string
	}{
		{"no origin (SDK, curl)", nil, "", 200, ""},
		{"drive-by from a web page", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, "", 403, "origin_not_allowed"},
		{"null origin", map[string]string{"Origin": "null"}, "", 403, "origin_not_allowed"},
		{"allowed origin", map[string]string{"Origin": "https://app.example"}, "", 200, ""},
		{"a page's image or link, no Origin", map[string]string{"Sec-Fetch-Site": "cross-site"}, "", 403, "origin_not_allowed"},
		{"another localhost port's page, no Origin", map[string]string{"Sec-Fetch-Site": "same-site"}, "", 403, "origin_not_allowed"},
		{"typed in the address bar", map[string]string{"Sec-Fetch-Site": "none"}, "", 200, ""},
		{"allowed origin with its fetch metadata", map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}, "", 200, ""},
		{"DNS rebinding", nil, "evil.example:8080", 403, "host_not_allowed"},
		{"localhost", nil, "localhost:8080", 200, ""},
		{"IPv6 loopback", nil, "[::1]:8080", 200, ""},
		{"configured name", nil, "router.lan:8080", 200, ""},
		{"configured suffix", nil, "skillrouter.ns.svc.cluster.local", 200, ""},
		{"suffix alone is not a subdomain", nil, "svc.cluster.local", 403, "host_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.up.Reset()
			req, _ := http.NewRequest("POST", h.ts.URL+"/v1/chat/completions", strings.NewReader(simpleChat))
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := h.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || (tc.code != "" && !strings.Contains(string(b), `"code":"`+tc.code+`"`)) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if got := len(h.up.Requests()); (tc.status == 200) != (got == 1) {
				t.Fatalf("upstream got %d requests", got)
			}
			if tc.name == "allowed origin" && resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
				t.Errorf("CORS headers %v", resp.Header)
			}
		})
	}
	// The allowed origin's preflight is answered; others' are refused.
	for origin, want := range map[string]int{"https://app.example": 204, "http://evil.example": 403} {
		req, _ := http.NewRequest("OPTIONS", h.ts.URL+"/v1/chat/completions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		resp, err := h.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || (want == 204 && resp.Header.Get("Access-Control-Allow-Headers") != "authorization, content-type") {
			t.Errorf("preflight from %s: %d %v", origin, resp.StatusCode, resp.Header)
		}
	}
}

// TestClientKeys: with auth.api_keys, every API needs one of the keys
// (Bearer; x-api-key on Anthropic paths); the client's key never goes
// upstream, the upstream key does.
func TestClientKeys(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Access.APIKeys = []string{"sk-client-1", "sk-client-2"}
		c.APIKey = "sk-upstream"
	})
	anth := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name, path, body string
		hdr              map[string]string
		status           int
		upstreamAuth     string // the upstream's Authorization or x-api-key
	}{
		{"no key", "/v1/chat/completions", simpleChat, nil, 401, ""},
		{"wrong key", "/v1/chat/completions", simpleChat, map[string]string{"Authorization": "Bearer sk-nope"}, 401, ""},
		{"x-api-key is not an OpenAI header", "/v1/chat/completions", simpleChat, map[string]string{"X-Api-Key": "sk-client-1"}, 401, ""},
		{"chat", "/v1/chat/completions", simpleChat, map[string]string{"Authorization": "Bearer sk-client-2"}, 200, "Bearer sk-upstream"},
		// The scheme's name is compared without case (RFC 9110, 11.1).
		{"lower-case scheme", "/v1/chat/completions", simpleChat, map[string]string{"Authorization": "bearer sk-client-2"}, 200, "Bearer sk-upstream"},
		// Azure's SDKs send the key as api-key too: the proxy's key stays here.
		{"the proxy's key as api-key too", "/v1/chat/completions", simpleChat, map[string]string{"Authorization": "Bearer sk-client-1", "Api-Key": "sk-client-1"}, 200, "Bearer sk-upstream"},
		{"responses", "/v1/responses", `{"model":"m","input":"hi"}`, map[string]string{"Authorization": "Bearer sk-client-1"}, 200, "Bearer sk-upstream"},
		{"pass-through", "/v1/models", "", map[string]string{"Authorization": "Bearer sk-client-1"}, 200, "Bearer sk-upstream"},
		{"messages with x-api-key", "/v1/messages", anth, map[string]string{"X-Api-Key": "sk-client-1", "Anthropic-Version": "2023-06-01"}, 200, "sk-upstream"},
		{"messages with Bearer", "/v1/messages", anth, map[string]string{"Authorization": "Bearer sk-client-1", "Anthropic-Version": "2023-06-01"}, 200, "sk-upstream"},
		{"messages without key", "/v1/messages", anth, nil, 401, ""},
		// The Anthropic SDKs' other calls (models.list) carry anthropic-version.
		{"anthropic models with x-api-key", "/v1/models", "", map[string]string{"X-Api-Key": "sk-client-1", "Anthropic-Version": "2023-06-01"}, 200, "sk-upstream"},
		{"anthropic models, wrong key", "/v1/models", "", map[string]string{"X-Api-Key": "sk-nope", "Anthropic-Version": "2023-06-01"}, 401, ""},
		{"metrics", "/metrics", "", nil, 401, ""},
		{"healthz is open", "/healthz", "", nil, 200, "-"},
		{"readyz is open", "/readyz", "", nil, 200, "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.up.Reset()
			method := "POST"
			if tc.body == "" {
				method = "GET"
			}
			resp, b := h.do(method, tc.path, tc.body, tc.hdr)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if tc.status == 401 {
				if strings.HasPrefix(tc.path, "/v1/messages") || tc.hdr["Anthropic-Version"] != "" {
					mustContain(t, string(b), `"type":"authentication_error"`)
				} else {
					mustContain(t, string(b), `"code":"invalid_api_key"`)
				}
				if len(h.up.Requests()) != 0 {
					t.Fatal("refused request went upstream")
				}
				return
			}
			if tc.upstreamAuth == "-" {
				return
			}
			got := h.up.Requests()[0].Header
			seen := got.Get("Authorization") + got.Get("X-Api-Key") + got.Get("Api-Key")
			if seen != tc.upstreamAuth || strings.Contains(seen, "client") {
				t.Fatalf("upstream saw credentials %q, want %q", seen, tc.upstreamAuth)
			}
		})
	}
}

// TestAdminEndpoints: POST /v1/skills/reload needs the admin token when
// one is set, and is served to loopback clients only when none is.
func TestAdminEndpoints(t *testing.T) {
	reload := func(srv *Server, remote, auth string) int {
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/skills/reload", nil)
		req.RemoteAddr = remote
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec.Code
	}
	noToken := newHarness(t, nil).srv
	withToken := newHarness(t, func(c *Config) { c.Access.AdminToken = "admin-secret"; c.Access.APIKeys = []string{"sk-client"} }).srv
	// Behind a sidecar proxy every client is a loopback one (Istio's 127.0.0.6).
	tokenOnly := newHarness(t, func(c *Config) { c.Access.AdminTokenOnly = true }).srv
	// 404: past the guard, and no library configured in the harness.
	for _, tc := range []struct {
		name         string
		srv          *Server
		remote, auth string
		want         int
	}{
		{"loopback without token", noToken, "127.0.0.1:5000", "", 404},
		{"IPv6 loopback without token", noToken, "[::1]:5000", "", 404},
		{"remote without token", noToken, "192.0.2.7:5000", "", 403},
		{"token missing", withToken, "127.0.0.1:5000", "", 401},
		{"client key is not the admin token", withToken, "127.0.0.1:5000", "Bearer sk-client", 401},
		{"token", withToken, "192.0.2.7:5000", "Bearer admin-secret", 404},
		{"sidecar's loopback, token only", tokenOnly, "127.0.0.6:5000", "", 403},
	} {
		if got := reload(tc.srv, tc.remote, tc.auth); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSlowBodyGets408 (issue 14, repro 1): a body trickled slower than
// BodyTimeout is answered 408 and logged, on routed and pass-through
// paths; the connection is released.
func TestSlowBodyGets408(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/files"} {
		h := newHarness(t, func(c *Config) { c.Access.BodyTimeout = 200 * time.Millisecond })
		addr := strings.TrimPrefix(h.ts.URL, "http://")
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		// ... and nothing more: the deadline passes.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "request body not received within 200ms") {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		if line := logLine(t, h.logText(), path); !strings.Contains(line, `"status":408`) {
			t.Errorf("%s: log %s", path, line)
		}
	}
}

// TestBodyDeadlineSparesLongStreams: once the body is read, the deadline
// is lifted; a stream longer than it runs to its end on the same
// connection, and the connection serves the next request.
func TestBodyDeadlineSparesLongStreams(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Access.BodyTimeout = 100 * time.Millisecond })
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "a b c d e f", Interval: 50 * time.Millisecond}))
	_, b := h.chat(streamChat(""), nil)
	if a := assemble(t, b); a.Content != "a b c d e f" || a.Done != 1 {
		t.Fatalf("%+v", a)
	}
	if resp, b := h.chat(simpleChat, nil); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// A client's own key goes upstream as sent, even when upstream.api_key is
// configured (that one only goes with requests without a key). An SDK's
// placeholder key then gets the upstream's 401, which said nothing about
// why: the access log now says what to set, with or without a configured
// key.
func TestPlaceholderKeyHint(t *testing.T) {
	for _, configured := range []bool{true, false} {
		h := newHarness(t, func(c *Config) {
			if configured {
				c.APIKey = "sk-upstream"
			}
		})
		h.up.Script(fakeai.Status(401, "invalid api key"))
		resp, _ := h.do("POST", "/v1/chat/completions", simpleChat, map[string]string{"Authorization": "Bearer unused-for-ollama"})
		if resp.StatusCode != 401 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		// The access log line is written after the answer.
		waitFor(t, func() bool { return strings.Contains(h.logText(), `"msg":"request"`) })
		logs := h.logText()
		want := "forwarded as sent"
		if !configured {
			want = "a placeholder such as unused-for-ollama"
		}
		if !strings.Contains(logs, `"level":"WARN"`) || !strings.Contains(logs, want) || !strings.Contains(logs, "override_auth") {
			t.Errorf("configured key %v: no warning with %q:\n%s", configured, want, logs)
		}
	}
}

// A base URL with /v1 twice (ANTHROPIC_BASE_URL ending in /v1) or none
// says what to change instead of passing through unrouted or a bare 404.
func TestBaseURLHints(t *testing.T) {
	h := newHarness(t, nil)
	resp, b := h.do("POST", "/v1/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Anthropic-Version": "2023-06-01"})
	if resp.StatusCode != 404 || !strings.Contains(string(b), "/v1 twice") || !strings.Contains(string(b), `"type":"error"`) || len(h.up.Requests()) != 0 {
		t.Errorf("/v1/v1/messages: %d %s (%d upstream requests)", resp.StatusCode, b, len(h.up.Requests()))
	}
	resp, b = h.do("POST", "/chat/completions", simpleChat, nil)
	if resp.StatusCode != 404 || !strings.Contains(string(b), "did you mean /v1/chat/completions?") {
		t.Errorf("/chat/completions: %d %s", resp.StatusCode, b)
	}
	if resp, b = h.do("GET", "/favicon.ico", "", nil); resp.StatusCode != 404 || strings.Contains(string(b), "did you mean") {
		t.Errorf("/favicon.ico: %d %s", resp.StatusCode, b)
	}
}

// TestFetchMetadataExemptions: a dashboard's link to a probe, and any page
// when allowed_origins holds "*", are not refused for their fetch metadata.
func TestFetchMetadataExemptions(t *testing.T) {
	strict := newHarness(t, nil)
	resp, b := strict.do("GET", "/readyz", "", map[string]string{"Sec-Fetch-Site": "cross-site"})
	if resp.StatusCode != 200 {
		t.Errorf("a link to /readyz: %d %s", resp.StatusCode, b)
	}
	open := newHarness(t, func(c *Config) { c.Access.AllowedOrigins = []string{"*"} })
	resp, b = open.chat(simpleChat, map[string]string{"Sec-Fetch-Site": "cross-site"})
	if resp.StatusCode != 200 {
		t.Errorf("allowed_origins *: %d %s", resp.StatusCode, b)
	}
}

// A request carrying this process's own Via element is one of its own
// upstream requests come back (upstream.url pointing at the proxy): 508 in
// the API's envelope, never sent on; every upstream request carries it,
// after the client's own Via.
func TestLoopDetected(t *testing.T) {
	h := newHarness(t, nil)
	resp, b := h.do("POST", "/v1/chat/completions", simpleChat, map[string]string{"Via": "1.1 gateway, " + Via()})
	if resp.StatusCode != http.StatusLoopDetected || !strings.Contains(string(b), "loop_detected") || len(h.up.Requests()) != 0 {
		t.Fatalf("%d %s, %d upstream requests", resp.StatusCode, b, len(h.up.Requests()))
	}
	resp, b = h.do("POST", "/v1/chat/completions", simpleChat, map[string]string{"Via": "1.1 gateway"})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if got := reqs[len(reqs)-1].Header.Values("Via"); !slices.Equal(got, []string{"1.1 gateway", Via()}) {
		t.Errorf("upstream Via %q, want the client's and this proxy's", got)
	}
}

// Paths only a wrong base URL sends are answered with a hint and logged as
// warnings carrying it: some clients (Claude Code) show their own guess
// instead of the answer.
func TestMisdirectedPathsWarn(t *testing.T) {
	for _, tc := range []struct{ path, hint string }{
		{"/v1/v1/messages", "the base URL has /v1 twice"},
		{"/chat/completions", "did you mean /v1/chat/completions?"},
		{"/messages", "Claude Code (ANTHROPIC_BASE_URL) take the address without /v1"},
		{"/v1/mcp", "the skills MCP server is at /mcp"},
	} {
		h := newHarness(t, nil)
		resp, b := h.do("POST", tc.path, simpleChat, nil)
		if resp.StatusCode != 404 || !strings.Contains(string(b), tc.hint) || len(h.up.Requests()) != 0 {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, b)
		}
		if !strings.Contains(string(b), `"code":"unknown_path"`) {
			t.Errorf("%s: not unknown_path: %s", tc.path, b)
		}
		if line := h.requestLine(tc.path); !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, tc.hint) {
			t.Errorf("%s: log line %s", tc.path, line)
		}
	}
}

// An upstream that answers a Messages request 404, with no Anthropic
// upstream of its own configured, is likely an OpenAI-only server: the
// answer goes back as it came, and the log line says what to set.
func TestMessages404HintsAnthropicUpstream(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Status(404, "not_found"))
	resp, _ := h.do("POST", "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, budgetHeaders("/v1/messages"))
	if resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if line := h.requestLine("/v1/messages"); !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, `"hint":"the upstream answered 404`) {
		t.Errorf("log line %s", line)
	}
}
