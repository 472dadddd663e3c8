package proxy

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestPassThroughPatterns: the syntax of Config.PassThrough, checked as New
// and the configuration check read it; a bad pattern is an error naming it.
func TestPassThroughPatterns(t *testing.T) {
	tests := []struct {
		pattern string
		bad     string // part of the error; "" = valid
	}{
		{"**", ""},
		{"models", ""},
		{"models/*", ""},
		{"GET models/*", ""},
		{"POST responses/compact", ""},
		{"files/**", ""},
		{"conversations/*/items/**", ""},
		{"fine_tuning/jobs/ftjob-[a-z]*", ""},
		{"DELETE  conversations/*", ""}, // spaces between method and path
		{"", "empty"},
		{"/v1/models", "relative to /v1/"},
		{"/models", "relative to /v1/"},
		// The path as the client addresses it, /v1 included: it would
		// allow /v1/v1/models, never what was meant.
		{"v1/models", "relative to /v1/"},
		{"GET v1/models/*", "relative to /v1/"},
		{"v1/**", "relative to /v1/"},
		{"v1", "relative to /v1/"},
		{"models/", "empty segment"},
		{"models//x", "empty segment"},
		{"models/../files", "dot-segment"},
		{"./models", "dot-segment"},
		{"**/files", "only as the whole last segment"},
		{"files/**/content", "only as the whole last segment"},
		{"files/a**", "only as the whole last segment"}, // last, but not the whole segment
		{"files/[", "syntax"},
		{"get models", "method"},
		{"FETCH models", "method"},
		{"GET models extra", "method"},
	}
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			err := CheckPassThrough([]string{"models", tc.pattern})
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), `"`+tc.pattern+`"`) {
				t.Fatalf("error %v, want one naming %q and saying %q", err, tc.pattern, tc.bad)
			}
			pe, ok := err.(*PatternError)
			if !ok || pe.Index != 1 || pe.Pattern != tc.pattern {
				t.Fatalf("error %#v: want a *PatternError for pattern 1", err)
			}
			up, _ := url.Parse("http://127.0.0.1:1/v1")
			if _, err := New(Config{Upstream: up, Rewriter: newFakeRewriter(), PassThrough: []string{tc.pattern}}); err == nil ||
				!strings.Contains(err.Error(), tc.pattern) {
				t.Fatalf("New: %v", err)
			}
		})
	}
}

// TestPassThroughMatching: which request a list allows, on the path as
// the upstream would see it once cleaned (never the raw one).
func TestPassThroughMatching(t *testing.T) {
	tests := []struct {
		patterns     []string
		method, path string
		want         bool
	}{
		{[]string{"**"}, "GET", "/v1/models", true},
		{[]string{"**"}, "DELETE", "/v1/files/f/content", true},
		{[]string{"**"}, "GET", "/v1/", true},
		{[]string{}, "GET", "/v1/models", false},
		{nil, "GET", "/v1/models", false}, // parsed nil is empty: New applies the default before
		{[]string{"models"}, "GET", "/v1/models", true},
		{[]string{"models"}, "GET", "/v1/models/", true}, // cleaned: /v1/models
		{[]string{"models"}, "GET", "/v1/models/x", false},
		{[]string{"models"}, "GET", "/v1/modelsx", false},
		{[]string{"models/*"}, "GET", "/v1/models", false},
		{[]string{"models/*"}, "GET", "/v1/models/ft:gpt-4o:org..1", true},
		{[]string{"models/*"}, "GET", "/v1/models/a/b", false},
		{[]string{"models/**"}, "GET", "/v1/models", true},
		{[]string{"models/**"}, "GET", "/v1/models/a/b", true},
		{[]string{"models/**"}, "GET", "/v1/models/../files", false}, // cleaned: /v1/files
		{[]string{"models/**"}, "GET", "/v1/models/./x", true},
		{[]string{"files"}, "GET", "/v1//files", true}, // cleaned: /v1/files
		{[]string{"models"}, "GET", "/v1//files", false},
		{[]string{"*"}, "GET", "/v1/../admin", false}, // leaves /v1/
		{[]string{"**"}, "GET", "/v1/../admin", false},
		{[]string{"**"}, "GET", "/v1", true},
		{[]string{"GET models/*"}, "GET", "/v1/models/m", true},
		{[]string{"GET models/*"}, "HEAD", "/v1/models/m", true},
		{[]string{"GET models/*"}, "DELETE", "/v1/models/m", false},
		{[]string{"GET models/*", "DELETE models/*"}, "DELETE", "/v1/models/m", true},
		{[]string{"POST responses/compact"}, "POST", "/v1/responses/compact", true},
		{[]string{"responses/*/input_items"}, "GET", "/v1/responses/resp_1/input_items", true},
		{[]string{"fine_tuning/jobs/ftjob-[a-z]*"}, "GET", "/v1/fine_tuning/jobs/ftjob-abc", true},
		{[]string{"fine_tuning/jobs/ftjob-[a-z]*"}, "GET", "/v1/fine_tuning/jobs/ftjob-1", false},
		{[]string{"Models"}, "GET", "/v1/models", false}, // paths are case-sensitive
	}
	for _, tc := range tests {
		rules, err := parsePassThrough(tc.patterns)
		if err != nil {
			t.Fatal(err)
		}
		if got := rules.allow(tc.method, tc.path); got != tc.want {
			t.Errorf("%q: %s %s allowed = %v, want %v", tc.patterns, tc.method, tc.path, got, tc.want)
		}
	}
}

// TestPassThroughAllowlist: a path the list allows is relayed; any other
// is answered 404 in its API's envelope, naming upstream.passthrough, and
// never reaches the upstream. The routes the proxy serves itself (model
// requests, its own /v1/skills endpoints) are not pass-through and stay
// served; its read-backs of stored responses relay the client's GET with
// the operator's key, so the list decides them as it does pass-through.
func TestPassThroughAllowlist(t *testing.T) {
	tests := []struct {
		name         string
		patterns     []string // nil: the default
		method, path string
		body         string
		hdr          map[string]string
		pass         bool
	}{
		{"default passes all", nil, "DELETE", "/v1/files/file-1", "", nil, true},
		{"default passes batches", nil, "POST", "/v1/messages/batches", `{"requests":[]}`, nil, true},
		{"empty refuses models", []string{}, "GET", "/v1/models", "", nil, false},
		{"empty refuses stored completions", []string{}, "GET", "/v1/chat/completions", "", nil, false},
		{"empty refuses a stored response", []string{}, "GET", "/v1/responses/resp_1", "", nil, false},
		{"empty refuses compaction", []string{}, "POST", "/v1/responses/compact", `{"model":"m","input":"hi"}`, nil, false},
		{"listed", []string{"models", "models/*"}, "GET", "/v1/models", "", nil, true},
		{"listed id", []string{"models", "models/*"}, "GET", "/v1/models/gpt-4o", "", nil, true},
		{"listed with a query", []string{"models"}, "GET", "/v1/models?after=x", "", nil, true},
		{"not listed", []string{"models", "models/*"}, "GET", "/v1/files", "", nil, false},
		{"not listed delete", []string{"models", "models/*"}, "DELETE", "/v1/files/file-1", "", nil, false},
		{"method not listed", []string{"GET models/*"}, "DELETE", "/v1/models/ft-1", "", nil, false},
		{"double slash cleaned", []string{"models"}, "GET", "/v1//files", "", nil, false},
		{"anthropic path", []string{"models"}, "POST", "/v1/messages/batches", `{"requests":[]}`, nil, false},
		{"anthropic header", []string{"messages/**"}, "GET", "/v1/models", "", map[string]string{"Anthropic-Version": "2023-06-01"}, false},
		{"stored response read-back listed", []string{"GET responses/*"}, "GET", "/v1/responses/resp_1", "", nil, true},
		{"stored response read-back not listed", []string{"models"}, "GET", "/v1/responses/resp_1", "", nil, false},
		{"stored response as a stream not listed", []string{"models"}, "GET", "/v1/responses/resp_1?stream=true", "", nil, false},
		{"input items not listed", []string{"GET responses/*"}, "GET", "/v1/responses/resp_1/input_items", "", nil, false},
		{"conversation items not listed", []string{"models"}, "GET", "/v1/conversations/conv_1/items", "", nil, false},
		{"conversation item not listed", []string{"models"}, "GET", "/v1/conversations/conv_1/items/msg_1", "", nil, false},
		{"openai skills api not listed", []string{"models"}, "POST", "/v1/skills", `{}`, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.PassThrough = tc.patterns })
			resp, body := h.do(tc.method, tc.path, tc.body, tc.hdr)
			reqs := h.up.Requests()
			if tc.pass {
				if len(reqs) != 1 || reqs[0].Method != tc.method || reqs[0].Path != strings.Split(tc.path, "?")[0] {
					t.Fatalf("not relayed: %d %s; upstream got %+v", resp.StatusCode, body, reqs)
				}
				if strings.Contains(string(body), "passthrough_not_allowed") || strings.Contains(string(body), "upstream.passthrough") {
					t.Fatalf("refused: %s", body)
				}
				return
			}
			if len(reqs) != 0 {
				t.Fatalf("reached the upstream: %+v", reqs)
			}
			if resp.StatusCode != 404 {
				t.Fatalf("status %d, want 404: %s", resp.StatusCode, body)
			}
			if resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
			}
			msg := gjson.GetBytes(body, "error.message").Str
			if anthropicPath := strings.HasPrefix(tc.path, "/v1/messages") || tc.hdr["Anthropic-Version"] != ""; anthropicPath {
				if gjson.GetBytes(body, "type").Str != "error" || gjson.GetBytes(body, "error.type").Str != "not_found_error" {
					t.Fatalf("not Anthropic's envelope: %s", body)
				}
			} else {
				msg = checkAPIError(t, body, "passthrough_not_allowed")
			}
			if !strings.Contains(msg, "upstream.passthrough") || !strings.Contains(msg, tc.method+" ") {
				t.Fatalf("message %q names neither the request nor upstream.passthrough", msg)
			}
		})
	}
}

// TestPassThroughRoutedStaysServed: an empty list refuses every
// pass-through path, not what the proxy serves itself.
func TestPassThroughRoutedStaysServed(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PassThrough = []string{} })
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", simpleChat},
		{"POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`},
		{"POST", "/v1/responses/input_tokens", `{"model":"m","input":"make me a pdf"}`},
		{"GET", "/healthz", ""},
	} {
		resp, body := h.do(tc.method, tc.path, tc.body, nil)
		if resp.StatusCode == 404 || strings.Contains(string(body), "passthrough_not_allowed") {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, body)
		}
	}
	resp, body := h.do("POST", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`,
		map[string]string{"Anthropic-Version": "2023-06-01", "X-Api-Key": "k"})
	if resp.StatusCode != 200 {
		t.Errorf("messages: %d %s", resp.StatusCode, body)
	}
}

// TestPassThroughDotSegmentsStayRefused: a target with dot-segments is
// refused with 400 invalid_path before routing, as it always was, whatever
// the list allows: "/v1/models/../files" is never relayed, not even under
// models/**, and the list never sees the raw path.
func TestPassThroughDotSegmentsStayRefused(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PassThrough = []string{"models/**"} })
	addr := strings.TrimPrefix(h.ts.URL, "http://")
	for _, target := range []string{"/v1/models/../files", "/v1/models/%2e%2e/files"} {
		resp, body := rawRequest(t, addr, "GET", target, "")
		if resp.StatusCode != 400 || !strings.Contains(body, "invalid_path") {
			t.Errorf("%s: %d %s", target, resp.StatusCode, body)
		}
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Fatalf("upstream got %d requests", n)
	}
}

// TestPassThroughRefusalObserved: a refusal is in the access log, with the
// reason, and counted with outcome="passthrough_refused".
func TestPassThroughRefusalObserved(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PassThrough = []string{"models"} })
	h.do("GET", "/v1/files", "", nil)
	h.do("GET", "/v1/models", "", nil)
	_, m := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), `skillrouter_requests_total{arm="default",method="GET",outcome="passthrough_refused",path="/v1/files",status="404"} 1`)
	mustContain(t, string(m), `skillrouter_requests_total{arm="default",method="GET",outcome="complete",path="/v1/models",status="200"} 1`)
	logs := h.logText()
	mustContain(t, logs, `"path":"/v1/files","status":404,"outcome":"passthrough_refused"`)
	mustContain(t, logs, `upstream.passthrough`)
}
