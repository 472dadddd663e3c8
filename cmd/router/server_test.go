package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// servedProxy is runServe in this process, in front of a small upstream.
type servedProxy struct {
	addr string
	logs func() string
	stop func() error // cancels runServe's context and waits for it
}

// startServe runs runServe with cfg (listen, skills and upstream filled
// in) until the test ends or stop is called.
func startServe(t *testing.T, cfg config, upstream http.Handler) *servedProxy {
	t.Helper()
	return startServeOn(t, cfg, upstream, filepath.Join("..", "..", "examples", "skills"))
}

// startServeOn is startServe with the library in the folders roots.
func startServeOn(t *testing.T, cfg config, upstream http.Handler, roots ...string) *servedProxy {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = ln.Addr().String()
	ln.Close()
	cfg.Upstream.URL = up.URL + "/v1"
	cfg.Skills = roots
	cfg.Watch = false
	logFile, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, cfg, cfg.Skills, logFile) }()
	var once sync.Once
	var runErr error
	sp := &servedProxy{addr: cfg.Listen,
		logs: func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) },
		stop: func() error {
			once.Do(func() { cancel(); runErr = <-done })
			return runErr
		}}
	t.Cleanup(func() { sp.stop() })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(sp.logs(), "proxy ready") {
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", sp.logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return sp
}

func defaultsFor(t *testing.T, args ...string) config {
	t.Helper()
	cfg, err := loadFor(t, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// sseUpstream streams chat chunks, one every interval, holding after the
// first until hold is closed (nil: no hold).
func sseUpstream(hold <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fl := http.NewResponseController(w)
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`+"\n\n")
		fl.Flush()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	})
}

const streamBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"write a git commit message"}]}`

// TestShutdownGraceEndsStreams (issue 14, repro 5): a stream still open at
// the end of server.shutdown_grace gets a final error event and is logged
// with outcome shutdown, and runServe returns.
func TestShutdownGraceEndsStreams(t *testing.T) {
	cfg := defaultsFor(t, "--shutdown-grace", "300ms")
	never := make(chan struct{})
	sp := startServe(t, cfg, sseUpstream(never))
	resp, err := http.Post("http://"+sp.addr+"/v1/chat/completions", "application/json", strings.NewReader(streamBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.HasPrefix(first, "data: ") {
		t.Fatalf("stream did not start: %q", first)
	}
	start := time.Now()
	if err := sp.stop(); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(rest), `"code":"server_shutdown"`) {
		t.Errorf("no final shutdown error event: %q", rest)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("stopped after %v, before the grace", took)
	}
	logs := sp.logs()
	for _, want := range []string{"shutdown grace over", "outcome=shutdown"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestConnectionCap (issue 14, repro 1): over server.max_connections a new
// connection is answered 503 at once and the refusal is logged; when
// connections close, clients are served again. A liveness probe is
// answered 200 all the same: a busy pod is not a dead one.
func TestConnectionCap(t *testing.T) {
	cfg := defaultsFor(t, "--max-connections", "4")
	sp := startServe(t, cfg, sseUpstream(nil))
	var idle []net.Conn
	for i := 0; i < 4; i++ {
		c, err := net.Dial("tcp", sp.addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	resp, err := http.Get("http://" + sp.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "too_many_connections") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %d %s", resp.StatusCode, b)
	}
	for _, path := range []string{"/healthz", "/healthz?verbose=1"} {
		resp, err = http.Get("http://" + sp.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"ok"`) {
			t.Errorf("liveness %s over the cap: %d %s", path, resp.StatusCode, b)
		}
	}
	if !strings.Contains(sp.logs(), "connection limit reached") {
		t.Errorf("no log line:\n%s", sp.logs())
	}
	for _, c := range idle {
		c.Close()
	}
	waitServe(t, func() bool {
		resp, err := http.Get("http://" + sp.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	m := httpGet(t, "http://"+sp.addr+"/metrics")
	// At least one: waitServe may have met the cap again while it closed.
	if !strings.Contains(m, `skillrouter_connections_refused_total{listener="api"} `) ||
		strings.Contains(m, `skillrouter_connections_refused_total{listener="api"} 0`) {
		t.Errorf("metrics lack the refusal")
	}
}

// TestIdleConnectionsAreClosed (issue 14, repro 1): a keep-alive
// connection left idle is closed after server.idle_timeout, one that sends
// nothing after ReadHeaderTimeout.
func TestIdleConnectionsAreClosed(t *testing.T) {
	cfg := defaultsFor(t)
	cfg.Server.IdleTimeout, cfg.Server.ReadHeaderTimeout = 200*time.Millisecond, 200*time.Millisecond
	sp := startServe(t, cfg, sseUpstream(nil))
	for _, first := range []string{"GET /healthz HTTP/1.1\r\nHost: " + sp.addr + "\r\n\r\n", ""} {
		c, err := net.Dial("tcp", sp.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, first)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		if first != "" {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%q: connection not closed by the server: %v", first, err)
		}
		c.Close()
	}
}

// TestMetricsOnTheirOwnAddress: with server.metrics_listen, /metrics is
// served there and not with the API.
func TestMetricsOnTheirOwnAddress(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	maddr := ln.Addr().String()
	ln.Close()
	cfg := defaultsFor(t, "--metrics-listen", maddr)
	sp := startServe(t, cfg, sseUpstream(nil))
	if resp, err := http.Get("http://" + sp.addr + "/metrics"); err != nil || resp.StatusCode != 404 {
		t.Errorf("/metrics with the API: %v %v", resp, err)
	}
	if m := httpGet(t, "http://"+maddr+"/metrics"); !strings.Contains(m, "skillrouter_requests_total") {
		t.Errorf("metrics listener: %.200s", m)
	}
}

// TestMCPIsProtected: /mcp, served by `router serve`, gets the same checks
// as the API: client keys, Origin and Host.
func TestMCPIsProtected(t *testing.T) {
	keys := writeFile(t, "keys", "# client keys\nsk-one\n\nsk-two\n")
	cfg := defaultsFor(t, "--api-keys-file", keys)
	sp := startServe(t, cfg, sseUpstream(nil))
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"no key", nil, 401},
		{"key", map[string]string{"Authorization": "Bearer sk-two"}, 200},
		{"web page", map[string]string{"Authorization": "Bearer sk-two", "Origin": "http://evil.example"}, 403},
	} {
		req, _ := http.NewRequest("POST", "http://"+sp.addr+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range tc.hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, b)
		}
	}
	req, _ := http.NewRequest("POST", "http://"+sp.addr+"/mcp", strings.NewReader(initialize))
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer sk-one")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("rebinding Host: %v %v", resp, err)
	}
	// Counted and logged as the API's requests are, under path /mcp.
	mreq, _ := http.NewRequest("GET", "http://"+sp.addr+"/metrics", nil)
	mreq.Header.Set("Authorization", "Bearer sk-one")
	resp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`path="/mcp",status="200"`, `path="/mcp",status="401"`, `path="/mcp",status="403"`} {
		if !strings.Contains(strings.ReplaceAll(string(m), `arm="default",`, ""), want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
	if logs := sp.logs(); !strings.Contains(logs, `path=/mcp status=200`) {
		t.Errorf("no log line of the served /mcp request:\n%s", logs)
	}
	// A session is its key's: the holder of another key gets 404 for it.
	post := func(key, id, body string) *http.Response {
		req, _ := http.NewRequest("POST", "http://"+sp.addr+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	id := post("sk-one", "", initialize).Header.Get("Mcp-Session-Id")
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if code := post("sk-two", id, ping).StatusCode; code != http.StatusNotFound {
		t.Errorf("another key's session answered %d, want 404", code)
	}
	if code := post("sk-one", id, ping).StatusCode; code != http.StatusOK {
		t.Errorf("the owner's session answered %d", code)
	}
}

func TestPrintConfigRedactsClientKeys(t *testing.T) {
	cfg, err := loadFor(t, nil, map[string]string{"SKILLROUTER_AUTH_API_KEYS": "sk-a,sk-b", "SKILLROUTER_AUTH_ADMIN_TOKEN": "adm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Auth.APIKeys) != 2 || cfg.Auth.AdminToken != "adm" {
		t.Fatalf("auth %+v", cfg.Auth)
	}
	r := cfg.redacted()
	if r.Auth.AdminToken != "REDACTED" || strings.Join(r.Auth.APIKeys, ",") != "REDACTED,REDACTED" || cfg.Auth.APIKeys[0] != "sk-a" {
		t.Errorf("redacted %+v (original %+v)", r.Auth, cfg.Auth)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func waitServe(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStalledClientIsReset: serve's listener closes the connection of a
// client cut for reading nothing (server.write_timeout) with a reset, so
// the kernel drops the answer the client never read at once; a client that
// resumes reading is told (ECONNRESET), where an orderly close left that
// data queued behind the FIN until TCP gave up.
func TestStalledClientIsReset(t *testing.T) {
	cfg := defaultsFor(t)
	cfg.Server.WriteTimeout = 300 * time.Millisecond
	big := strings.Repeat("x", 12<<20) // more than the socket buffers hold
	sp := startServe(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, big)
	}))
	c, err := net.Dial("tcp", sp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"model":"m","messages":[{"role":"user","content":"write a git commit message"}]}`
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", sp.addr, len(body), body)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(sp.logs(), "server.write_timeout"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled client was not cut:\n%s", sp.logs())
		}
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second)) // liveness guard
	if n, err := io.Copy(io.Discard, c); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the client read %d bytes, then %v; want ECONNRESET", n, err)
	}
}

// Over the connection cap, liveness is answered 200 only while connections
// still close (a busy server); a server where none has closed for
// livenessWindow is stuck, and its probe gets the 503 that restarts it.
func TestRefuseLiveness(t *testing.T) {
	for _, tc := range []struct {
		req   string
		alive bool
		want  string
	}{
		{"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", true, "200 OK"},
		{"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", false, "503"},
		{"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n", true, "503"},
		{"GET /healthzz HTTP/1.1\r\nHost: x\r\n\r\n", true, "503"},
	} {
		server, client := net.Pipe()
		go refuse(server, tc.alive)
		_ = client.SetDeadline(time.Now().Add(5 * time.Second))
		go func() { _, _ = client.Write([]byte(tc.req)) }()
		b, _ := io.ReadAll(client)
		client.Close()
		if first, _, _ := strings.Cut(string(b), "\r\n"); !strings.Contains(first, tc.want) {
			t.Errorf("%q alive=%v: %q, want %s", strings.SplitN(tc.req, "\r\n", 2)[0], tc.alive, first, tc.want)
		}
	}
}
