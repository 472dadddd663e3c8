package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServeBeforeIndexBuilt: the proxy answers while its routing index is
// built: alive, not ready, and chat requests reach the upstream unmodified
// with X-Skillrouter-Error; once built, it is ready and rewrites.
func TestServeBeforeIndexBuilt(t *testing.T) {
	up, last := recordingUpstream(t)
	cfg, err := loadFor(t, []string{"--upstream", up.URL + "/v1", "--skills", filepath.Join("..", "..", "examples", "skills")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AB.Arms = []armConfig{{Name: "a", Percent: 50}, {Name: "b", Percent: 50, Strategy: "bm25"}}
	srv, _, build, err := buildProxy(context.Background(), cfg, cfg.Skills, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	const chat = `{"model":"m","messages":[{"role":"user","content":"write a git commit message for my staged changes"}]}`
	status := func(path string) int {
		t.Helper()
		r, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	post := func() *http.Response {
		t.Helper()
		r, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(chat))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return r
	}

	if s := status("/healthz"); s != 200 {
		t.Errorf("healthz while building: %d", s)
	}
	if s := status("/readyz"); s != 503 {
		t.Errorf("readyz while building: %d, want 503", s)
	}
	r := post()
	before := last()
	if r.StatusCode != 200 || !strings.Contains(r.Header.Get("X-Skillrouter-Error"), "not ready") || before != chat {
		t.Errorf("chat while building: status %d, X-Skillrouter-Error %q, upstream got %.200s", r.StatusCode, r.Header.Get("X-Skillrouter-Error"), before)
	}
	// Starting up is not a rewrite error.
	mr, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mr.Body)
	mr.Body.Close()
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "skillrouter_rewrite_errors_total{") && !strings.HasSuffix(line, " 0") {
			t.Errorf("counted as a rewrite error while building: %s", line)
		}
	}

	if err := build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := status("/readyz"); s != 200 {
		t.Errorf("readyz after build: %d", s)
	}
	r = post()
	after := last()
	if r.Header.Get("X-Skillrouter-Error") != "" || !strings.Contains(after, "<available_skills>") {
		t.Errorf("chat after build: X-Skillrouter-Error %q, upstream got %.200s", r.Header.Get("X-Skillrouter-Error"), after)
	}
	// Arm a has no strategy of its own: it runs the default (hybrid), so
	// asked for with that strategy it is still arm a, not "explicit".
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(chat))
	req.Header.Set("X-Skillrouter-Arm", "a")
	req.Header.Set("X-Skillrouter-Strategy", "hybrid")
	if r, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if got := r.Header.Get("X-Skillrouter-Arm"); got != "a" {
		t.Errorf("arm a asked for with its own (default) strategy: labelled %q", got)
	}
}

// TestRunServeLifecycle: runServe listens, logs broken skills with their
// paths, becomes ready, and stops cleanly when its context ends; a port in
// use fails at once.
func TestRunServeLifecycle(t *testing.T) {
	lib := t.TempDir()
	put := func(rel, content string) string {
		p := filepath.Join(lib, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	put("good/SKILL.md", "---\nname: good\ndescription: A good skill. Use when testing.\n---\nBody.\n")
	broken := put("broken/SKILL.md", "---\nname: broken\n---\nno description\n")

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg, err := loadFor(t, []string{"--skills", lib, "--listen", busy.Addr().String(), "--watch=false", "--upstream-api-key", "sk-on-the-command-line"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := runServe(context.Background(), cfg, cfg.Skills, io.Discard); err == nil || !strings.Contains(err.Error(), "address already in use: another process") {
		t.Fatalf("port in use: %v", err)
	}

	addr := busy.Addr().String()
	busy.Close()
	cfg.Listen = addr
	ctx, cancel := context.WithCancel(context.Background())
	// A file, not a buffer: the server writes while the test reads.
	logFile, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logs := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, cfg, cfg.Skills, logFile) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs(), "proxy ready") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	r, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Errorf("readyz %d", r.StatusCode)
	}
	// Every user can read a process's arguments: a key given there is said.
	if l := logs(); !strings.Contains(l, "visible to every user") || strings.Contains(l, "sk-on-the-command-line") {
		t.Errorf("a key given as --upstream-api-key: no warning, or the key logged:\n%s", l)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("runServe: %v", err)
	}
	out := logs()
	for _, want := range []string{"skipped a broken skill", broken, "listening", "proxy ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// recordingUpstream is a chat upstream that answers "hi" and keeps the last
// request body it received.
func recordingUpstream(t *testing.T) (*httptest.Server, func() string) {
	var mu sync.Mutex
	var got []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	return up, func() string {
		mu.Lock()
		defer mu.Unlock()
		return string(got)
	}
}

// TestServeReportsWrongUpstream: an upstream URL without /v1 is reported
// at start with the URL meant, and /readyz's body carries the check while
// the proxy itself is ready.
func TestServeReportsWrongUpstream(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"llama3.2","object":"model"}]}`)
	}))
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg, err := loadFor(t, []string{"--skills", filepath.Join("..", "..", "examples", "skills"), "--listen", addr,
		"--watch=false", "--upstream", up.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logs := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, cfg, cfg.Skills, logFile) }()
	hint := "upstream check failed: GET /models answered 404: did you mean " + up.URL + "/v1?"
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(logs(), hint) && strings.Contains(logs(), "proxy ready") {
			break
		}
	}
	if !strings.Contains(logs(), hint) {
		t.Errorf("log lacks %q:\n%s", hint, logs())
	}
	r, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || !strings.Contains(string(b), `"status":"not_found"`) || !strings.Contains(string(b), `"hint":"did you mean `+up.URL+`/v1?"`) {
		t.Errorf("readyz %d %s", r.StatusCode, b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// beyondLoopback decides the start-up warning about an API other machines
// reach without client keys (and the debug listener's).
func TestBeyondLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": false, "[::1]:8080": false, "127.0.0.2:1": false,
		"0.0.0.0:8080": true, "[::]:8080": true, "10.0.0.5:8080": true, "example.com:80": true,
	} {
		if got := beyondLoopback(addr); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
}

// TestLogDurations: a duration in a JSON log line is milliseconds under a
// key ending in _ms, as the access log's are, not integer nanoseconds; the
// text format writes it as Go does.
func TestLogDurations(t *testing.T) {
	for format, want := range map[string][]string{
		"json": {`"took_ms":210.5`, `"grace_ms":30000`},
		"text": {"took=210.5ms", "g.grace=30s"},
	} {
		var buf bytes.Buffer
		newLogger(logConfig{Level: "info", Format: format}, &buf).Info("ready", "took", 210500*time.Microsecond, slog.Group("g", "grace", 30*time.Second))
		for _, w := range want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s: %s lacks %s", format, buf.String(), w)
			}
		}
	}
}

// TestWarnNoInterpreters: exec on a PATH without sh, bash or python3 (the
// scratch image) warns at start; with one, nothing.
func TestWarnNoInterpreters(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	t.Setenv("PATH", t.TempDir())
	warnNoInterpreters(log)
	if !strings.Contains(buf.String(), "no sh, bash or python3 is on PATH") {
		t.Errorf("no warning on an empty PATH: %q", buf.String())
	}
	buf.Reset()
	t.Setenv("PATH", "/usr/bin:/bin")
	warnNoInterpreters(log)
	if buf.Len() != 0 {
		t.Errorf("warned with a shell on PATH: %q", buf.String())
	}
}

// With exec and no client keys, a script can use the upstream key through
// the proxy: serve warns of it when there is a key to use.
func TestScriptsUseUpstreamKey(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*config)
		want bool
	}{
		{"exec, upstream key, no client keys", func(c *config) {}, true},
		{"anthropic key", func(c *config) { c.Upstream.APIKey, c.Upstream.AnthropicAPIKey = "", "sk-ant" }, true},
		{"client keys", func(c *config) { c.Auth.APIKeys = []string{"sk-team"} }, false},
		{"a keys file", func(c *config) { c.Auth.APIKeysFile = "/etc/skillrouter/keys" }, false},
		{"no upstream key", func(c *config) { c.Upstream.APIKey = "" }, false},
		{"a password in the upstream URL", func(c *config) { c.Upstream.APIKey, c.Upstream.URL = "", "https://u:p@llm.example/v1" }, true},
		{"a key in the upstream URL's query", func(c *config) {
			c.Upstream.APIKey, c.Upstream.URL = "", "https://llm.example/v1?api-key=abcdefgh"
		}, true},
		{"no exec", func(c *config) { c.Exec.Enabled = false }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig()
			c.Exec.Enabled, c.Upstream.APIKey = true, "sk-up"
			tt.mod(&c)
			if got := scriptsUseUpstreamKey(c); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
