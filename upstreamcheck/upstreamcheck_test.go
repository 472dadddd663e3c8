package upstreamcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/skillrouter/skillrouter/internal/syncbuf"
)

// openAI serves GET /v1/models as OpenAI does, and 404 elsewhere; with
// key set, it wants "Authorization: Bearer key".
func openAI(t *testing.T, key string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
			return
		}
		if r.URL.Path != "/v1/models" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"llama3.2","object":"model","owned_by":"library"},{"id":"gpt-oss:20b","object":"model","owned_by":"library"}]}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func check(t *testing.T, cfg Config) Result {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "upstream.url"
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Last(); got.Status != StatusPending {
		t.Fatalf("before the first check: %+v", got)
	}
	r := c.Check(context.Background())
	if got := c.Last(); got.Status != r.Status || got.CheckedAt != r.CheckedAt {
		t.Fatalf("Last %+v, Check %+v", got, r)
	}
	return r
}

func TestCheck(t *testing.T) {
	up := openAI(t, "")
	host := strings.TrimPrefix(up.URL, "http://")
	keyed := openAI(t, "sk-right")
	keyedHost := strings.TrimPrefix(keyed.URL, "http://")
	dead := "127.0.0.1:1" // privileged: nothing listens there
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>hello</html>")) }))
	defer notJSON.Close()
	bearer := func(k string) http.Header { return http.Header{"Authorization": {"Bearer " + k}} }
	// A proxy whose upstream is this one: it refuses its own request back.
	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusLoopDetected)
	}))
	defer loop.Close()

	tests := []struct {
		name   string
		url    string
		header http.Header
		status Status
		code   int
		err    string
		hint   string
	}{
		{name: "ok", url: up.URL + "/v1", status: StatusOK, code: 200},
		{name: "ok with trailing slash", url: up.URL + "/v1/", status: StatusOK, code: 200},
		{name: "missing /v1", url: up.URL, status: StatusNotFound, code: 404,
			err: "GET /models answered 404", hint: "did you mean " + up.URL + "/v1?"},
		{name: "whole endpoint pasted", url: up.URL + "/v1/chat/completions", status: StatusNotFound, code: 404,
			hint: "did you mean " + up.URL + "/v1?"},
		{name: "wrong path, no better guess", url: up.URL + "/api", status: StatusNotFound, code: 404,
			hint: "did you mean " + up.URL + "/api/v1? (the base URL usually ends in /v1)"},
		{name: "has /v1 but no models", url: up.URL + "/x/v1", status: StatusNotFound, code: 404,
			hint: "is " + up.URL + "/x/v1 an OpenAI-compatible API?"},
		{name: "no key", url: keyed.URL + "/v1", status: StatusUnauthorized, code: 401,
			err: "GET /models answered 401", hint: "the upstream wants a key: clients must send their own"},
		{name: "wrong key", url: keyed.URL + "/v1", header: bearer("sk-wrong"), status: StatusUnauthorized, code: 401,
			hint: "the upstream rejects the configured key (upstream.api_key)"},
		{name: "right key", url: keyed.URL + "/v1", header: bearer("sk-right"), status: StatusOK, code: 200},
		{name: "unreachable", url: "http://" + dead + "/v1", status: StatusUnreachable,
			err: "unreachable: connection refused", hint: "is the server running, and is upstream.url its address?"},
		{name: "a loop back to the proxy", url: loop.URL + "/v1", status: StatusError, code: 508,
			err: "GET /models answered 508", hint: loop.URL + "/v1 sends requests back to this proxy (a loop)"},
		{name: "not a model list", url: notJSON.URL + "/v1", status: StatusError, code: 200,
			err: "GET /models answered 200 but not with a model list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := check(t, Config{URL: tc.url, Header: tc.header})
			if r.Status != tc.status || r.HTTPStatus != tc.code || !strings.HasPrefix(r.Error, tc.err) || !strings.HasPrefix(r.Hint, tc.hint) {
				t.Fatalf("got %+v\nwant status %s, http %d, error %q, hint %q", r, tc.status, tc.code, tc.err, tc.hint)
			}
			if r.OK() && (r.Models == 0 || r.ModelIDs[0] == "") {
				t.Errorf("ok without models: %+v", r)
			}
			if r.Name != "upstream.url" || (r.Host != host && r.Host != keyedHost && r.Host != dead && !strings.Contains(notJSON.URL, r.Host) && !strings.Contains(loop.URL, r.Host)) {
				t.Errorf("name/host %q %q", r.Name, r.Host)
			}
		})
	}
}

// TestNoCredentialsInResults: a URL carrying credentials or a query shows
// neither in the result (served on /readyz) nor in the log.
func TestNoCredentialsInResults(t *testing.T) {
	up := openAI(t, "")
	var logs bytes.Buffer
	u := strings.Replace(up.URL, "http://", "http://user:s3cret@", 1) + "?api-key=s3cret"
	c, err := New(Config{Name: "upstream.url", URL: u, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.Run(context.Background(), 0)
	b, _ := json.Marshal(c.Last())
	if strings.Contains(string(b), "s3cret") || strings.Contains(logs.String(), "s3cret") {
		t.Fatalf("credentials shown:\n%s\n%s", b, logs.String())
	}
	if c.Last().Status != StatusNotFound || !strings.Contains(logs.String(), "did you mean "+up.URL+"/v1?") {
		t.Fatalf("result %s, log %s", b, logs.String())
	}
}

// TestRunLogsChanges: the first result is logged, then only changes.
func TestRunLogsChanges(t *testing.T) {
	var mu sync.Mutex
	down := false
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"data":[{"id":"m"}]}`))
	}))
	defer s.Close()
	var logs syncbuf.Buffer
	c, err := New(Config{Name: "upstream.url", URL: s.URL + "/v1", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.Run(context.Background(), 0)
	c.Check(context.Background()) // same status: Run alone logs, and only changes
	mu.Lock()
	down = true
	mu.Unlock()
	r := c.Check(context.Background())
	c.logResult(r, false)
	out := logs.String()
	if strings.Count(out, "upstream ok") != 1 || !strings.Contains(out, "upstream check failed: GET /models answered 503") {
		t.Fatalf("log:\n%s", out)
	}
	if r.Summary() != "GET /models answered 503" {
		t.Errorf("summary %q", r.Summary())
	}
}

// TestAnthropicKeyHint: an upstream checked with another key names that
// key in its hint, and the probe carries the configured headers.
func TestAnthropicKeyHint(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "sk-ant" || r.Header.Get("Anthropic-Version") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
			return
		}
		w.Write([]byte(`{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5"}],"has_more":false}`))
	}))
	defer s.Close()
	h := http.Header{"Anthropic-Version": {"2023-06-01"}}
	r := check(t, Config{Name: "upstream.anthropic_url", URL: s.URL + "/v1", Header: h, KeyName: "upstream.anthropic_api_key"})
	if want := "the upstream wants a key: clients must send their own (Claude Code and the SDKs do), or set upstream.anthropic_api_key (SKILLROUTER_UPSTREAM_ANTHROPIC_API_KEY)"; r.Hint != want || !r.ClientKeys {
		t.Errorf("hint %q, want %q", r.Hint, want)
	}
	h.Set("X-Api-Key", "sk-ant")
	if r := check(t, Config{Name: "upstream.anthropic_url", URL: s.URL + "/v1", Header: h, KeyName: "upstream.anthropic_api_key"}); !r.OK() || r.Models != 1 {
		t.Errorf("with the key: %+v", r)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:11434", "ftp://x/v1"} {
		if _, err := New(Config{Name: "upstream.url", URL: u}); err == nil || !strings.Contains(err.Error(), "upstream.url") {
			t.Errorf("%q: %v", u, err)
		}
	}
}
