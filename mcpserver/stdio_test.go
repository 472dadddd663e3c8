package mcpserver

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/tidwall/gjson"
)

// A line that is not a JSON-RPC message (not JSON, a batch, no method) is
// answered with a JSON-RPC error and the session goes on: the SDK's stdio
// connection ended on it, losing the host its skill server.
// stdioSession runs a stdio session of a fresh fixture: send writes a
// line, next reads an answer, end closes stdin and checks the session
// ended cleanly.
func stdioSession(t *testing.T) (send func(string), next func() string, end func()) {
	return stdioSessionOf(t, newFixture(t, false))
}

// stdioSessionOf is stdioSession on f.
func stdioSessionOf(t *testing.T, f *fixture) (send func(string), next func() string, end func()) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- f.srv.runIO(ctx, inR, outW); _ = outW.Close() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	sent := 0
	send = func(s string) {
		t.Helper()
		sent++
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next = func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the session ended")
			}
			return l
		case <-ctx.Done():
			t.Fatalf("no answer after %d lines", sent)
		}
		return ""
	}
	end = func() {
		t.Helper()
		_ = inW.Close()
		if err := <-done; err != nil {
			t.Fatalf("session: %v", err)
		}
	}
	return send, next, end
}

// initializeLine is an initialize request with id (as JSON) asking for
// version.
func initializeLine(id, version string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
}

func TestStdioBadLinesAnswered(t *testing.T) {
	send, next, end := stdioSession(t)
	send(initializeLine("1", "2025-11-25"))
	if l := next(); gjson.Get(l, "id").Int() != 1 || !gjson.Get(l, "result.serverInfo").Exists() {
		t.Fatalf("initialize: %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tt := range []struct {
		line, id string
		code     int64
	}{
		{"not json at all", "null", jsonrpc.CodeParseError},
		{`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, "null", jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":9}`, "9", jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null", jsonrpc.CodeInvalidRequest}, // MCP: an id is never null
		{`{"jsonrpc":"2.0","id":16.5,"method":"ping"}`, "16.5", jsonrpc.CodeInvalidRequest}, // the SDK would answer 16
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, "9007199254740993", jsonrpc.CodeInvalidRequest},
		{"", "", 0}, // blank lines are skipped
	} {
		if tt.line == "" {
			send("")
			continue
		}
		send(tt.line)
		l := next()
		if gjson.Get(l, "id").Raw != tt.id || gjson.Get(l, "error.code").Int() != tt.code || gjson.Get(l, "jsonrpc").Str != "2.0" {
			t.Errorf("%q answered %s, want id %s code %d", tt.line, l, tt.id, tt.code)
		}
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if l := next(); gjson.Get(l, "id").Int() != 2 || !gjson.Get(l, "result").Exists() {
		t.Fatalf("ping after the bad lines: %s", l)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if l := next(); gjson.Get(l, "id").Int() != 3 || !strings.Contains(l, "load_skill") {
		t.Fatalf("tools/list after the bad lines: %s", l)
	}
	// A response that is not one is dropped, never answered.
	send(`{"jsonrpc":"2.0","id":77,"result":1,"error":{"code":1,"message":"x"}}`)
	send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if l := next(); gjson.Get(l, "id").Int() != 4 {
		t.Fatalf("ping after a bad response: %s", l)
	}
	end()
}

// A batch is judged by the version the session agreed on, not the one the
// client asked for: the SDK ends the session on a batch in 2025-06-18 or
// later, whatever the client asked (it answers an unknown version with its
// latest, and refuses a second initialize).
func TestStdioBatchByAgreedVersion(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opening []string
	}{
		{"unknown version asked", []string{initializeLine("1", "1999-01-01")}},
		{"a version between asked", []string{initializeLine("1", "2025-04-01")}},
		{"a second initialize asks an older one", []string{initializeLine("1", "2025-06-18"), initializeLine("2", "2024-11-05")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			send, next, end := stdioSession(t)
			for i, l := range tt.opening {
				send(l)
				if a := next(); i > 0 && gjson.Get(a, "error.code").Int() != jsonrpc.CodeInvalidRequest {
					t.Fatalf("a second initialize answered %s, want -32600", a)
				}
			}
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			send(`[{"jsonrpc":"2.0","id":5,"method":"ping"}]`)
			if l := next(); gjson.Get(l, "error.code").Int() != jsonrpc.CodeInvalidRequest {
				t.Fatalf("batch answered %s, want -32600", l)
			}
			send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
			if l := next(); gjson.Get(l, "id").Int() != 7 || !gjson.Get(l, "result").Exists() {
				t.Fatalf("ping after the batch: %s", l)
			}
			end()
		})
	}
}

// On a protocol version that has JSON-RPC batches (before 2025-06-18), a
// batch goes to the SDK, which answers it as one.
func TestStdioBatchOnOlderProtocol(t *testing.T) {
	f := newFixture(t, false)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","id":9,"method":"ping"}]`,
	}, "\n") + "\n"
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.srv.runIO(ctx, inR, outW); _ = outW.Close() }()
	go func() { _, _ = io.WriteString(inW, in) }()
	sc := bufio.NewScanner(outR)
	var got []string
	for len(got) < 2 && sc.Scan() {
		got = append(got, sc.Text())
	}
	_ = inW.Close()
	<-done
	if len(got) != 2 || !gjson.Get(got[1], "#").Exists() || gjson.Get(got[1], "#").Int() != 2 {
		t.Fatalf("answers %q, want the initialize result and a batch of two", got)
	}
}

// A host that writes its requests and closes stdin (`printf ... | router
// mcp`, or a shutdown right after a call) gets every answer: the SDK ends
// the session at the end of its input, dropping the calls still being
// worked on.
func TestStdioAnswersPendingAtEOF(t *testing.T) {
	f := newFixture(t, false)
	var id string
	for _, s := range f.reg.Snapshot().Skills() {
		id = s.ID
		break
	}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"load_skill","arguments":{"id":"` + id + `"}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"search_skills","arguments":{"query":"pdf"}}}`,
	}, "\n") + "\n"
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.runIO(ctx, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if gjson.Get(l, "result").Exists() {
			got[gjson.Get(l, "id").String()] = true
		}
	}
	for _, want := range []string{"1", "2", "three"} {
		if !got[want] {
			t.Errorf("no answer to request %s at the end of stdin; got:\n%s", want, out.String())
		}
	}
}

// The end of stdin waits for answers only: a batch's answers (an array),
// an id written 2.0 (answered as 2), a null id (refused at once) and an
// unknown method each let the session end as soon as everything is
// answered, not at the drain's limit.
func TestStdioDrainEndsWhenAnswered(t *testing.T) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	for name, tail := range map[string]string{
		"batch":   `[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","id":9,"method":"ping"}]`,
		"float":   `{"jsonrpc":"2.0","id":2.0,"method":"ping"}`,
		"half":    `{"jsonrpc":"2.0","id":2.5,"method":"ping"}`,
		"null":    `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		"unknown": `{"jsonrpc":"2.0","id":3,"method":"nope/nope"}`,
	} {
		f := newFixture(t, false)
		var out strings.Builder
		// Far below the drain's 30 s: a session that waited on an answer
		// that never comes would still be running at the deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := f.srv.runIO(ctx, strings.NewReader(init+tail+"\n"), &out)
		if ctx.Err() != nil {
			t.Errorf("%s: the session was still waiting at the deadline (err %v); output:\n%s", name, err, out.String())
		}
		cancel()
	}
}

// TestStdioCancelledNotAnswered: MCP's receiver of notifications/cancelled
// sends no answer to the request it names; the next request is answered.
func TestStdioCancelledNotAnswered(t *testing.T) {
	f := newFixture(t, false)
	hold := make(chan struct{})
	f.srv.ready = hold // tool calls wait for the index until cancelled
	send, next, end := stdioSessionOf(t, f)
	send(initializeLine("1", "2025-06-18"))
	next()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_skills","arguments":{"query":"pdf"}}}`)
	time.Sleep(50 * time.Millisecond)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`)
	time.Sleep(50 * time.Millisecond)
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if l := next(); gjson.Get(l, "id").Int() != 3 {
		t.Fatalf("the cancelled request was answered: %s", l)
	}
	end()
}

// TestStdioRefusalsLeaveTheSession: the filter's own refusals answer no
// request the SDK holds: a second initialize sent before the first was
// answered leaves the first's version agreed (batches on 2025-03-26).
func TestStdioRefusalsLeaveTheSession(t *testing.T) {
	send, next, end := stdioSession(t)
	send(initializeLine("1", "2025-03-26"))
	send(initializeLine("1", "2025-03-26"))
	var result, refused bool
	for range 2 {
		l := next()
		result = result || gjson.Get(l, "result.protocolVersion").Str == "2025-03-26"
		refused = refused || gjson.Get(l, "error.code").Int() == jsonrpc.CodeInvalidRequest
	}
	if !result || !refused {
		t.Fatalf("initialize answered %v, the second refused %v", result, refused)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`)
	if l := next(); !gjson.Get(l, "#").Exists() || gjson.Get(l, "0.id").Int() != 8 {
		t.Fatalf("a batch on 2025-03-26 answered %s", l)
	}
	end()
}
