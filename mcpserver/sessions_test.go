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
	ts := httptest.NewServer(srv.Handler(ctx))
	defer ts.Close()
	defer http.DefaultClient.CloseIdleConnections()
	post := func(id, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
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
	srv.activity.idlest(srv.openIDs()) // forgets the closed first session
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
		a.opened(id, 10, open)
	}
	endUsed := a.begin("used")
	endUsed(http.MethodPost, http.StatusOK)
	a.begin("busy") // never ends: in flight
	now = now.Add(30 * time.Second)
	if id, ok := a.idlest(open()); ok {
		t.Errorf("after 30 s: %q closed, want none", id)
	}
	now = now.Add(time.Minute)
	if id, ok := a.idlest(open()); !ok || id != "unused" {
		t.Errorf("after 90 s: %q, %v; want the session never used", id, ok)
	}
	if id, ok := a.idlest([]string{"used", "busy"}); ok {
		t.Errorf("after 90 s, without the unused one: %q closed, want none", id)
	}
	now = now.Add(evictIdle)
	if id, ok := a.idlest([]string{"used", "busy"}); !ok || id != "used" {
		t.Errorf("after 6.5 min: %q, %v; want the used one, not the busy one", id, ok)
	}
	// A 404 forgets an id (the client's, not a session).
	end := a.begin("bogus")
	end(http.MethodPost, http.StatusNotFound)
	if _, ok := a.last["bogus"]; ok {
		t.Error("an unknown session id is remembered")
	}
}
