package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/wire"
)

func TestRequestValidation(t *testing.T) {
	const user = `[{"role":"user","content":"x"}]`
	tests := []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		code   string
		param  string // "" = null
		msg    string // exact, when set
	}{
		{"malformed JSON", `{"model":"m","messages":[`, nil, 400, "invalid_json", "", ""},
		{"not an object", `[1,2]`, nil, 400, "invalid_json", "", "request body must be a JSON object"},
		{"empty body", ``, nil, 400, "invalid_json", "", ""},
		{"no messages", `{"model":"m"}`, nil, 400, "missing_messages", "messages", "missing required parameter: 'messages'"},
		{"null messages", `{"model":"m","messages":null}`, nil, 400, "missing_messages", "messages", ""},
		{"empty messages", `{"model":"m","messages":[]}`, nil, 400, "empty_messages", "messages", "'messages' must contain at least one message"},
		{"messages not an array", `{"model":"m","messages":"hi"}`, nil, 400, "invalid_type", "messages",
			"'messages' must be an array of message objects, got a string"},
		{"messages an object", `{"model":"m","messages":{"role":"user"}}`, nil, 400, "invalid_type", "messages",
			"'messages' must be an array of message objects, got an object"},
		{"message not an object", `{"model":"m","messages":[{"role":"user","content":"x"}, "hi"]}`, nil, 400, "invalid_type", "messages[1]",
			"'messages[1]' must be a message object, got a string"},
		{"message null", `{"model":"m","messages":[null]}`, nil, 400, "invalid_type", "messages[0]",
			"'messages[0]' must be a message object, got null"},
		{"model not a string", `{"model":5,"messages":` + user + `}`, nil, 400, "invalid_type", "model",
			"'model' must be a string, got a number"},
		{"stream not a bool", `{"model":"m","stream":"yes","messages":` + user + `}`, nil, 400, "invalid_type", "stream",
			"'stream' must be a boolean, got a string"},
		{"include_usage not a bool", `{"model":"m","stream_options":{"include_usage":1},"messages":` + user + `}`, nil, 400, "invalid_type",
			"stream_options.include_usage", "'stream_options.include_usage' must be a boolean, got a number"},
		{"stream_options not an object", `{"model":"m","stream_options":[],"messages":` + user + `}`, nil, 400, "invalid_type",
			"stream_options", "'stream_options' must be an object, got an array"},
		{"n not an integer", `{"model":"m","n":1.5,"messages":` + user + `}`, nil, 400, "invalid_type", "n", "'n' must be an integer, got 1.5"},
		{"user not a string", `{"model":"m","user":true,"messages":` + user + `}`, nil, 400, "invalid_type", "user", "'user' must be a string, got a boolean"},
		{"bad strategy header", simpleChat, map[string]string{HeaderStrategy: "magic"}, 400, "invalid_skillrouter_header", "", ""},
		{"bad top-k header", simpleChat, map[string]string{HeaderTopK: "-1"}, 400, "invalid_skillrouter_header", "", ""},
		{"bad disable header", simpleChat, map[string]string{HeaderDisable: "perhaps"}, 400, "invalid_skillrouter_header", "", ""},
		{"bad catalog header", simpleChat, map[string]string{HeaderCatalog: "some"}, 400, "invalid_skillrouter_header", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			resp, b := h.chat(tc.body, tc.hdr)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			msg := checkAPIError(t, b, tc.code)
			if tc.msg != "" && msg != tc.msg {
				t.Errorf("message %q, want %q", msg, tc.msg)
			}
			for _, internal := range []string{"Go ", "struct", "json.", "RawMessage", "chatRequest"} {
				if strings.Contains(msg, internal) {
					t.Errorf("message %q shows Go internals (%q)", msg, internal)
				}
			}
			var e struct {
				Error struct {
					Param *string `json:"param"`
				} `json:"error"`
			}
			_ = json.Unmarshal(b, &e)
			var param string
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if param != tc.param || (e.Error.Param != nil) != (tc.param != "") {
				t.Errorf("param %q (set: %v), want %q", param, e.Error.Param != nil, tc.param)
			}
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

// The default takes what the APIs take: Anthropic Messages accepts 32 MB
// (a session with a few screenshots or PDFs passes 8 MiB).
func TestDefaultBodyLimitIs32MiB(t *testing.T) {
	h := newHarness(t, nil)
	if h.srv.cfg.BodyLimit != 32<<20 {
		t.Fatalf("default body limit %d", h.srv.cfg.BodyLimit)
	}
}

func TestUpstreamUnreachable(t *testing.T) {
	// A privileged loopback port: nothing listens there. (A port that was
	// just free could be taken by another test's server meanwhile, which
	// then answered.)
	addr := "127.0.0.1:1"
	// Credentials and a query in the URL must never reach a client.
	dead := "http://user:s3cret@" + addr + "/v1?key=s3cret"
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
		msg := checkAPIError(t, b, "upstream_unreachable")
		// The client learns which upstream (its host) and why, never the
		// URL with its credentials; the log has the whole error.
		if want := "upstream " + addr + " unreachable: connection refused"; msg != want {
			t.Errorf("%s: message %q, want %q", tc.path, msg, want)
		}
		if strings.Contains(string(b), "s3cret") {
			t.Errorf("%s: the answer shows credentials: %s", tc.path, b)
		}
		if !strings.Contains(h.logText(), addr) {
			t.Errorf("%s: the log line lacks the upstream error:\n%s", tc.path, h.logText())
		}
	}
}

// An upstream that was reached but hung up is reported as such (502), not as
// unreachable with net/http's bare "EOF".
func TestUpstreamClosedConnection(t *testing.T) {
	closeConn := func(c net.Conn) {}
	cutShort := func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":")
	}
	reset := func(c net.Conn) { c.(*net.TCPConn).SetLinger(0) }
	tests := []struct {
		name, method, path, body string
		upstream                 func(net.Conn) // after reading the request; the connection is closed next
		msg                      string
	}{
		{"chat", "POST", "/v1/chat/completions", simpleChat, closeConn, "upstream closed the connection without a response"},
		{"stream", "POST", "/v1/chat/completions", streamChat(""), closeConn, "upstream closed the connection without a response"},
		{"pass-through", "GET", "/v1/models", "", closeConn, "upstream closed the connection without a response"},
		{"chat answer cut short", "POST", "/v1/chat/completions", simpleChat, cutShort, "upstream closed the connection before the end of its response"},
		{"chat reset", "POST", "/v1/chat/completions", simpleChat, reset, "upstream reset the connection"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := rawUpstream(t, tc.upstream)
			h := newHarness(t, func(c *Config) { c.Upstream = u })
			resp, b := h.do(tc.method, tc.path, tc.body, nil)
			if resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if msg, want := checkAPIError(t, b, "upstream_connection_closed"), strings.Replace(tc.msg, "upstream", "upstream "+u.Host, 1); msg != want {
				t.Errorf("message %q, want %q", msg, want)
			}
			_, m := h.do("GET", "/metrics", "", nil)
			mustContain(t, string(m), `skillrouter_upstream_errors_total{kind="upstream_connection_closed"} 1`)
		})
	}
}

// rawUpstream serves each connection by reading one request, calling act
// and closing the connection.
func rawUpstream(t *testing.T, act func(net.Conn)) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				io.Copy(io.Discard, req.Body)
				act(c)
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	u, _ := url.Parse("http://" + ln.Addr().String() + "/v1")
	return u
}

func TestUpstreamTimeout(t *testing.T) {
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", simpleChat},
		{"POST", "/v1/chat/completions", streamChat("")},
		{"GET", "/v1/models", ""},
	} {
		h := newHarness(t, func(c *Config) { c.UpstreamTimeout, c.HeaderTimeout = 50*time.Millisecond, 50*time.Millisecond })
		slow := fakeai.Delay(10*time.Second, fakeai.Reply(fakeai.Turn{Content: "late"}))
		h.up.Script(slow)
		h.up.Handle("/v1/models", slow)
		resp, b := h.do(tc.method, tc.path, tc.body, nil)
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("%s: status %d: %s", tc.path, resp.StatusCode, b)
		}
		if msg := checkAPIError(t, b, "upstream_timeout"); strings.Contains(msg, h.up.URL) {
			t.Errorf("%s: message %q shows the upstream's URL", tc.path, msg)
		}
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

// TestClassifyStream: an error after a stream started is the stream's, not
// "unreachable"; the message never carries the upstream's URL.
func TestClassifyStream(t *testing.T) {
	ctx := context.Background()
	urlErr := func(inner error) error {
		return &url.Error{Op: "Post", URL: "http://10.1.2.3:11434/v1/chat/completions", Err: inner}
	}
	tests := []struct {
		name string
		err  error
		code string
		msg  string // substring of the client's message
	}{
		{"event too large", fmt.Errorf("reading: %w", wire.ErrEventTooLarge), "upstream_response_too_large", "exceeds"},
		{"cut off", io.ErrUnexpectedEOF, "upstream_connection_closed", "before the end"},
		{"reset", urlErr(syscall.ECONNRESET), "upstream_connection_closed", "reset"},
		{"other", urlErr(errors.New("http2: stream error: INTERNAL_ERROR")), "upstream_stream_error", "upstream stream failed"},
		{"timeout", urlErr(context.DeadlineExceeded), "upstream_timeout", "timed out"},
	}
	for _, tc := range tests {
		f := classifyStream(ctx, tc.err)
		if f.code != tc.code || !strings.Contains(f.msg, tc.msg) || strings.Contains(f.msg, "10.1.2.3") {
			t.Errorf("%s: %s %q, want %s containing %q and no address", tc.name, f.code, f.msg, tc.code, tc.msg)
		}
		if !strings.Contains(f.logText(), tc.err.Error()) {
			t.Errorf("%s: log text %q lacks the error", tc.name, f.logText())
		}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if f := classifyStream(gone, wire.ErrEventTooLarge); f.code != "client_closed" {
		t.Errorf("client gone: %s", f.code)
	}
}

// TestUpstreamErrorKeyMasked: an upstream error that quotes the operator's
// key (some gateways repeat the credential they refused) reaches the client
// with the key masked, on routed and passed-through requests alike.
func TestUpstreamErrorKeyMasked(t *testing.T) {
	const key = "sk-OPERATOR-SECRET-0123456789"
	h := newHarness(t, func(c *Config) { c.APIKey = key })
	echo := func(w http.ResponseWriter, r *http.Request, _ fakeai.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, r.Header.Get("Authorization"))
	}
	h.up.Script(echo)
	h.up.Handle("/v1/models", echo)
	// A gateway that compresses its errors for a client that accepts gzip.
	h.up.Handle("/v1/files", func(w http.ResponseWriter, r *http.Request, _ fakeai.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("the client's Accept-Encoding did not go upstream: %q", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusUnauthorized)
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, `{"error":{"message":"Incorrect API key provided: %s"}}`, r.Header.Get("Authorization"))
		zw.Close()
	})
	for _, path := range []string{"/v1/chat/completions", "/v1/models", "/v1/files"} {
		method, body, hdr := "POST", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, map[string]string(nil)
		if path != "/v1/chat/completions" {
			method, body, hdr = "GET", "", map[string]string{"Accept-Encoding": "gzip"}
		}
		resp, b := h.do(method, path, body, hdr)
		if resp.Header.Get("Content-Encoding") == "gzip" { // set by hand, the client does not decode
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(zr)
		}
		if resp.StatusCode != 401 || strings.Contains(string(b), key) || !strings.Contains(string(b), "Bearer sk-**********************6789") {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
}

// An upstream error page that quotes the URL it refused shows the
// credentials the base URL carries (a query key, a password): masked as the
// operator's key is, whoever authenticated the request; a short or
// harmless parameter is left as it came.
func TestUpstreamErrorURLSecretsMasked(t *testing.T) {
	const qkey, pass = "sk-QUERYKEY-99999", "hunter2-long-password"
	h := newHarness(t, func(c *Config) {
		u := *c.Upstream
		u.RawQuery = "api-key=" + qkey + "&api-version=2024-10-21&sig=abc"
		u.User = url.UserPassword("op", pass)
		c.Upstream = &u
	})
	h.up.Handle("/v1/echourl", func(w http.ResponseWriter, r *http.Request, _ fakeai.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		user, p, _ := r.BasicAuth()
		fmt.Fprintf(w, "Unknown URL %s (user %s:%s)", r.URL.RequestURI(), user, p)
	})
	resp, b := h.do("GET", "/v1/echourl?foo=bar", "", map[string]string{"Authorization": "Bearer sk-client-key-000"})
	got := string(b)
	if resp.StatusCode != 404 || strings.Contains(got, qkey) || strings.Contains(got, pass) ||
		!strings.Contains(got, "sk-**********9999") || !strings.Contains(got, "api-version=2024-10-21") || !strings.Contains(got, "sig=abc") {
		t.Errorf("%d %s", resp.StatusCode, got)
	}
}
