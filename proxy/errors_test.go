package proxy

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

func TestRequestValidation(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"malformed JSON", `{"model":"m","messages":[`, nil, 400, "invalid_json"},
		{"not an object", `[1,2]`, nil, 400, "invalid_json"},
		{"empty body", ``, nil, 400, "invalid_json"},
		{"no messages", `{"model":"m"}`, nil, 400, "missing_messages"},
		{"null messages", `{"model":"m","messages":null}`, nil, 400, "missing_messages"},
		{"empty messages", `{"model":"m","messages":[]}`, nil, 400, "empty_messages"},
		{"messages not an array", `{"model":"m","messages":"hi"}`, nil, 400, "invalid_type"},
		{"stream not a bool", `{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`, nil, 400, "invalid_type"},
		{"bad strategy header", simpleChat, map[string]string{HeaderStrategy: "magic"}, 400, "invalid_skillrouter_header"},
		{"bad top-k header", simpleChat, map[string]string{HeaderTopK: "-1"}, 400, "invalid_skillrouter_header"},
		{"bad disable header", simpleChat, map[string]string{HeaderDisable: "perhaps"}, 400, "invalid_skillrouter_header"},
		{"bad catalog header", simpleChat, map[string]string{HeaderCatalog: "some"}, 400, "invalid_skillrouter_header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			resp, b := h.chat(tc.body, tc.hdr)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			checkAPIError(t, b, tc.code)
			if n := len(h.up.Requests()); n != 0 {
				t.Fatalf("invalid request reached the upstream (%d requests)", n)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BodyLimit = 1024 })
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`
	t.Run("content-length", func(t *testing.T) {
		resp, b := h.chat(big, nil)
		if resp.StatusCode != 413 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		checkAPIError(t, b, "request_too_large")
	})
	t.Run("chunked", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() { io.WriteString(pw, big); pw.Close() }()
		req, _ := http.NewRequest("POST", h.ts.URL+"/v1/chat/completions", pr)
		resp, err := h.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		checkAPIError(t, b, "request_too_large")
	})
	t.Run("at the limit passes", func(t *testing.T) {
		body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("y", 900) + `"}]}`
		resp, b := h.chat(body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	})
	if len(h.up.Requests()) != 1 {
		t.Fatalf("upstream got %d requests, want 1", len(h.up.Requests()))
	}
}

func TestDefaultBodyLimitIs8MiB(t *testing.T) {
	h := newHarness(t, nil)
	if h.srv.cfg.BodyLimit != 8<<20 {
		t.Fatalf("default body limit %d", h.srv.cfg.BodyLimit)
	}
}

func TestUpstreamUnreachable(t *testing.T) {
	// A port that was just free: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", simpleChat},
		{"POST", "/v1/chat/completions", streamChat("")},
		{"GET", "/v1/models", ""},
	} {
		h := newHarness(t, func(c *Config) { c.Upstream, _ = url.Parse(dead) })
		resp, b := h.do(tc.method, tc.path, tc.body, nil)
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("%s: status %d: %s", tc.path, resp.StatusCode, b)
		}
		checkAPIError(t, b, "upstream_unreachable")
	}
}

func TestUpstreamTimeout(t *testing.T) {
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", simpleChat},
		{"POST", "/v1/chat/completions", streamChat("")},
		{"GET", "/v1/models", ""},
	} {
		h := newHarness(t, func(c *Config) { c.UpstreamTimeout = 50 * time.Millisecond })
		slow := fakeai.Delay(10*time.Second, fakeai.Reply(fakeai.Turn{Content: "late"}))
		h.up.Script(slow)
		h.up.Handle("/v1/models", slow)
		resp, b := h.do(tc.method, tc.path, tc.body, nil)
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("%s: status %d: %s", tc.path, resp.StatusCode, b)
		}
		checkAPIError(t, b, "upstream_timeout")
	}
}

func TestUnknownRouteIsOpenAIError(t *testing.T) {
	h := newHarness(t, nil)
	resp, b := h.do("GET", "/nope", "", nil)
	if resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	checkAPIError(t, b, "not_found")
	// GET /v1/chat/completions lists stored completions upstream: pass-through, not routed.
	h.do("GET", "/v1/chat/completions?limit=2", "", nil)
	reqs := h.up.Requests()
	if len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].RawQuery != "limit=2" || len(h.rw.overrides()) != 0 {
		t.Fatalf("GET chat completions not passed through: %+v", reqs)
	}
}
