package mcpserver

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReadSkillResourceHiddenFiles: skill:// resources leave out hidden
// files (docs/mcp.md: "every file below it except hidden ones"), and
// read_skill_resource over MCP is documented to read "the same files
// [that] are resources anyway". A skill folder that is a git clone holds
// .git/config (a remote URL with a token when cloned that way), and skill
// authors keep .env files beside their scripts. Over /mcp without client
// keys any local user (and any model steered by prompt injection, through
// the proxy's tool loop too) reads them with read_skill_resource, and the
// directory listing advertises them.
func TestReadSkillResourceHiddenFiles(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/skills", dir)
	sk := filepath.Join(dir, "sql-tuning")
	if err := os.MkdirAll(filepath.Join(sk, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{
		".env":        "GITHUB_TOKEN=ghp_planted_secret\n",
		".git/config": "[remote \"origin\"]\n\turl = https://user:ghp_planted_secret@github.com/acme/skills\n",
	}
	for rel, body := range secrets {
		if err := os.WriteFile(filepath.Join(sk, filepath.FromSlash(rel)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixtureAt(t, dir, false)
	cs := f.connect(t, nil)

	// The control: hidden files are not resources.
	for rel := range secrets {
		if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "skill://sql-tuning/" + rel}); err == nil {
			t.Fatalf("%s is a resource", rel)
		}
	}
	for rel := range secrets {
		res, text := call(t, cs, ToolReadResource, map[string]any{"skill_id": "sql-tuning", "path": rel})
		if strings.Contains(text, "ghp_planted_secret") || !res.IsError {
			t.Errorf("read_skill_resource %s (not a resource) is served: %s", rel, text)
		}
	}
	if _, text := call(t, cs, ToolReadResource, map[string]any{"skill_id": "sql-tuning", "path": "."}); strings.Contains(text, ".env") || strings.Contains(text, ".git") {
		t.Errorf("the folder listing names hidden files that are not resources: %s", text)
	}
}

// TestHTTPSessionsBounded: every initialize on /mcp creates a session the
// server keeps for 30 minutes of idleness, with no cap. docs/security.md
// lists "bounded memory" among what the proxy protects and caps
// connections (server.max_connections) for the same reason, but sessions
// outlive their connections: one local user (or any key holder) creating
// sessions in a loop — about 1,400 a second, one loopback connection
// each — grows `router serve` by ~32 KB of RSS a session (measured: +95 MB
// for 3,000 sessions in 2 s, so ~2.7 GB a minute) until it is killed. The server must refuse new sessions past a bound (the SDK
// answers an unknown session 404, so a client can start over).
func TestHTTPSessionsBounded(t *testing.T) {
	f := newFixture(t, false)
	ts := f.serveHTTP(t)
	const attempts = 3000
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`
	var ids []string
	defer func() { // end what was opened, so nothing outlives the test
		for _, id := range ids {
			req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
			req.Header.Set("Mcp-Session-Id", id)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		http.DefaultClient.CloseIdleConnections()
	}()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	deadline := time.Now().Add(60 * time.Second)
	refused := 0
	for i := 0; i < attempts && time.Now().Before(deadline); i++ {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); resp.StatusCode == http.StatusOK && id != "" {
			ids = append(ids, id)
		} else {
			refused++
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := (int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)) >> 10
	if refused == 0 {
		t.Errorf("%d sessions opened and kept for the idle timeout, none refused (heap+stacks grew %d MiB, ~%d KiB a session): nothing bounds the sessions a client may hold open",
			len(ids), grown>>10, grown/int64(max(1, len(ids))))
	}
}

// TestListChangedAfterNegotiatingDown: a client that sends initialize with
// a protocol version newer than the server's for its transport (here
// 2026-07-28, which docs/mcp.md says stdio negotiates; over HTTP it falls
// back to 2025-11-25 the same way) gets "protocolVersion":"2025-11-25" — the
// lifecycle's rule: the server answers with a version it supports and the
// session speaks that. The SDK (v1.8.0, notifySessions) decides who gets
// list_changed from the version the client *asked for* in
// InitializeParams, not the negotiated one: such a session counts as a
// 2026-07-28 one that must open subscriptions/listen (a method of a
// protocol it does not speak), and never hears of a reload. Seen with
// `router mcp`: after editing a SKILL.md, a 2025-06-18 session got both
// notifications, this one nothing.
func TestListChangedAfterNegotiatingDown(t *testing.T) {
	f := newFixture(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Close(); ss.Wait() }()
	msgs := make(chan jsonrpc.Message, 64)
	go func() {
		defer close(msgs)
		for {
			m, err := conn.Read(ctx)
			if err != nil {
				return
			}
			msgs <- m
		}
	}()
	write := func(raw string) {
		t.Helper()
		m, err := jsonrpc.DecodeMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"newer","version":"1"}}}`)
	select {
	case m := <-msgs:
		r, ok := m.(*jsonrpc.Response)
		if !ok || r.Error != nil || !strings.Contains(string(r.Result), `"protocolVersion":"2025-11-25"`) {
			t.Fatalf("initialize: %#v", m)
		}
	case <-ctx.Done():
		t.Fatal("no initialize result")
	}
	write(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	f.addSkill(t)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("connection closed")
			}
			if r, ok := m.(*jsonrpc.Request); ok && r.Method == "notifications/resources/list_changed" {
				return
			}
		case <-deadline:
			t.Fatal("a session that negotiated 2025-11-25 (having asked for 2026-07-28) got no notifications/resources/list_changed after a reload added a skill")
		}
	}
}
