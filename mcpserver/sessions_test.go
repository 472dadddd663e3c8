package mcpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// At the session cap, a session idle for evictIdle with nothing in flight
// is closed to admit a new one (its client gets 404 and starts anew); a
// busy or recent one is not, and the new session is refused as before. One
// local user opening sessions and leaving them shut everyone else out
// until they timed out, 30 minutes later.
func TestSessionCapEvictsIdle(t *testing.T) {
	f := newFixture(t, false)
	srv, err := New(Config{MaxSessions: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv.Sync(f.reg.Snapshot())
	var mu sync.Mutex
	now := time.Now()
	srv.activity.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ts := httptest.NewServer(srv.Handler(ctx, nil))
	defer ts.Close()
	defer http.DefaultClient.CloseIdleConnections()
	post := func(id, body string) (int, string) {
		t.Helper()
		resp := mcpDo(t, http.MethodPost, ts.URL, id, body, nil)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	initialize := initializeMsg
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	_, first := post("", initialize)
	_, second := post("", initialize)
	if first == "" || second == "" {
		t.Fatalf("sessions not opened: %q %q", first, second)
	}
	post(first, ping) // both used since their initialize
	post(second, ping)
	if code, _ := post("", initialize); code != http.StatusServiceUnavailable {
		t.Fatalf("at the cap with both sessions recent: %d, want 503", code)
	}
	advance(evictIdle)
	post(second, ping) // the second is used again: the first is the idlest
	// A request that opens no session (not an initialize) closes none.
	if code, _ := post("", ping); code == http.StatusOK {
		t.Fatalf("a ping without a session at the cap: %d", code)
	}
	if code, _ := post(first, ping); code != http.StatusOK {
		t.Fatalf("a malformed request closed an idle session: %d", code)
	}
	advance(evictIdle)
	post(second, ping)
	code, third := post("", initialize)
	if code != http.StatusOK || third == "" {
		t.Fatalf("at the cap with an idle session: %d, want a new session", code)
	}
	if code, _ := post(first, ping); code != http.StatusNotFound {
		t.Errorf("the evicted session answered %d, want 404 (its client starts a new one)", code)
	}
	if code, _ := post(second, ping); code != http.StatusOK {
		t.Errorf("the session in use was closed: %d", code)
	}
	post(third, ping)
	if code, _ := post("", initialize); code != http.StatusServiceUnavailable {
		t.Fatalf("at the cap, nothing idle: %d, want 503", code)
	}
	srv.activity.idlest(srv.openIDs(), "") // forgets the closed first session
	srv.activity.mu.Lock()
	n := len(srv.activity.last)
	srv.activity.mu.Unlock()
	if n != 2 {
		t.Errorf("activity remembers %d sessions, want the 2 open", n)
	}
	for _, id := range []string{second, third} {
		req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", id)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

// Which session the cap closes: one never used since its initialize after
// a minute, before one in use after five; never one with a request in
// flight; none recent.
func TestActivityIdlest(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	a := newActivity()
	a.now = func() time.Time { return now }
	open := func() []string { return []string{"used", "unused", "busy"} }
	for _, id := range open() {
		a.opened(id, "", 10, open)
	}
	endUsed := a.begin("used")
	endUsed(http.MethodPost, http.StatusOK)
	a.begin("busy") // never ends: in flight
	now = now.Add(30 * time.Second)
	if id, ok := a.idlest(open(), ""); ok {
		t.Errorf("after 30 s: %q closed, want none", id)
	}
	now = now.Add(time.Minute)
	if id, ok := a.idlest(open(), ""); !ok || id != "unused" {
		t.Errorf("after 90 s: %q, %v; want the session never used", id, ok)
	}
	if id, ok := a.idlest([]string{"used", "busy"}, ""); ok {
		t.Errorf("after 90 s, without the unused one: %q closed, want none", id)
	}
	now = now.Add(evictIdle)
	if id, ok := a.idlest([]string{"used", "busy"}, ""); !ok || id != "used" {
		t.Errorf("after 6.5 min: %q, %v; want the used one, not the busy one", id, ok)
	}
	// A client's own idle session goes before an idler one of another's.
	b := newActivity()
	b.now = func() time.Time { return now }
	two := func() []string { return []string{"theirs", "mine"} }
	b.opened("theirs", "key-a", 10, two)
	now = now.Add(time.Second)
	b.opened("mine", "key-b", 10, two)
	now = now.Add(2 * time.Minute)
	if id, ok := b.idlest(two(), "key-b"); !ok || id != "mine" {
		t.Errorf("for key-b: %q, %v; want its own session first", id, ok)
	}
	if id, ok := b.idlest(two(), ""); !ok || id != "theirs" {
		t.Errorf("without a client: %q, %v; want the idlest", id, ok)
	}
	if id, ok := b.idlest([]string{"theirs"}, "key-b"); !ok || id != "theirs" {
		t.Errorf("key-b with none of its own: %q, %v; want the idlest of anyone's", id, ok)
	}
	// A 404 forgets an id (the client's, not a session).
	end := a.begin("bogus")
	end(http.MethodPost, http.StatusNotFound)
	if _, ok := a.last["bogus"]; ok {
		t.Error("an unknown session id is remembered")
	}
}

// A POST without a session whose body trickles in (a slow client, up to the
// server's body timeout) must not hold up another client's initialize: the
// admission lock was held while the SDK read the body.
func TestSlowPostDoesNotBlockInitialize(t *testing.T) {
	f := newFixture(t, false)
	srv, err := New(Config{MaxSessions: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv.Sync(f.reg.Snapshot())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ts := httptest.NewServer(srv.Handler(ctx, nil))
	defer ts.Close()
	defer http.DefaultClient.CloseIdleConnections()
	newReq := func(body io.Reader) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		return req
	}
	pr, pw := io.Pipe()
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		if resp, err := http.DefaultClient.Do(newReq(pr)); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	// More than the peeked head, then nothing: the SDK is left reading.
	if _, err := pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", peekLimit+10))); err != nil {
		t.Fatal(err)
	}
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(newReq(strings.NewReader(initializeMsg)))
		if err != nil {
			done <- nil
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp
	}()
	select {
	case resp := <-done:
		if resp == nil || resp.StatusCode != http.StatusOK {
			t.Errorf("initialize beside a slow POST: %v", resp)
		} else {
			endSession(t, ts.URL, resp.Header.Get("Mcp-Session-Id"))
		}
	case <-time.After(20 * time.Second):
		t.Error("initialize waited for another client's slow POST")
	}
	pw.CloseWithError(io.ErrUnexpectedEOF)
	<-slowDone
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		srv.admitMu.Lock()
		opening := srv.opening
		srv.admitMu.Unlock()
		if opening == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d places still held after both POSTs ended", opening)
		}
	}
}

// Host is the caller's to check (proxy.Server.Protect, with
// server.allowed_hosts): the SDK's own check refused every Host but
// localhost on a loopback listener, so an allowed name, or a reverse proxy
// keeping the client's Host, got 403 at /mcp and 200 at the API.
func TestHandlerLeavesHostToCaller(t *testing.T) {
	f := newFixture(t, false)
	ts := f.serveHTTP(t)
	defer http.DefaultClient.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(initializeMsg))
	req.Host = "router.internal"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Host router.internal: %d, want 200", resp.StatusCode)
	}
	endSession(t, ts.URL, resp.Header.Get("Mcp-Session-Id"))
}

// endSession ends an HTTP session (DELETE), so that no goroutine outlives
// the test.
func endSession(t *testing.T, base, id string) {
	t.Helper()
	mcpDo(t, http.MethodDelete, base, id, "", nil)
}

// A session answers only the client (key) that opened it: another key's
// holder can neither use it nor end it, and learns nothing of it (404, as
// for a closed one).
func TestSessionBoundToClient(t *testing.T) {
	f := newFixture(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ts := httptest.NewServer(f.srv.Handler(ctx, func(r *http.Request) string { return r.Header.Get("X-Test-Client") }))
	defer ts.Close()
	defer http.DefaultClient.CloseIdleConnections()
	do := func(method, client, id, body string) *http.Response {
		t.Helper()
		return mcpDo(t, method, ts.URL, id, body, map[string]string{"X-Test-Client": client})
	}
	initialize := initializeMsg
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	id := do(http.MethodPost, "a", "", initialize).Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("no session opened")
	}
	if code := do(http.MethodPost, "b", id, ping).StatusCode; code != http.StatusNotFound {
		t.Errorf("another client's ping: %d, want 404", code)
	}
	if code := do(http.MethodDelete, "b", id, "").StatusCode; code != http.StatusNotFound {
		t.Errorf("another client's DELETE: %d, want 404", code)
	}
	if code := do(http.MethodPost, "a", id, ping).StatusCode; code != http.StatusOK {
		t.Errorf("the owner's ping after the other's attempts: %d, want 200", code)
	}
	if code := do(http.MethodDelete, "a", id, "").StatusCode; code >= 300 {
		t.Errorf("the owner's DELETE: %d", code)
	}
	// Without client ids (no keys), sessions are anyone's, as before.
	open := do(http.MethodPost, "", "", initialize).Header.Get("Mcp-Session-Id")
	if code := do(http.MethodPost, "", open, ping).StatusCode; code != http.StatusOK {
		t.Errorf("unbound session: %d", code)
	}
	endSession(t, ts.URL, open)
}

// initializeMsg opens a session at protocol 2025-06-18.
const initializeMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// mcpDo sends an MCP request over streamable HTTP to base (in session id
// when given, with hdr's headers) and returns the answer, its body read.
func mcpDo(t testing.TB, method, base, id, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
