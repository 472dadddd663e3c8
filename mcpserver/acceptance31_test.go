package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// TestSearchSkillsWholeNumberLimit: "limit": 20.0 (JSON Schema's integer
// allows it; Python hosts send it) was refused as not a whole number; 1e10
// is the most search_skills gives, 20.5 is still refused.
func TestSearchSkillsWholeNumberLimit(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	for _, tt := range []struct {
		limit   string
		isError bool
	}{
		{"20.0", false}, {"3.0", false}, {"50.0", false}, {"1e10", false}, {"2E0", false},
		{"20.5", true},
	} {
		res, text := call(t, cs, "search_skills", json.RawMessage(`{"query":"pdf","limit":`+tt.limit+`}`))
		if res.IsError != tt.isError || (!tt.isError && !strings.Contains(text, `"results":[{"id":`)) ||
			(tt.isError && !strings.Contains(text, `must be a whole number, got number `+tt.limit)) {
			t.Errorf("limit %s: isError=%v %s", tt.limit, res.IsError, text)
		}
	}
}

// TestStdioRequestBeforeInitialize: a request before initialize got the
// SDK's refusal with error code 0, which JSON-RPC has not; it is -32600
// (Invalid Request, as the other MCP SDKs answer it), with the request's
// id, and the session goes on: ping works before, and an initialize after.
func TestStdioRequestBeforeInitialize(t *testing.T) {
	send, next, end := stdioSession(t)
	for _, tt := range []struct{ line, id string }{
		{`{"jsonrpc":"2.0","id":"pre","method":"tools/list"}`, `"pre"`},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search_skills","arguments":{"query":"pdf"}}}`, `4`},
		{`{"jsonrpc":"2.0","id":5,"method":"skills/list"}`, `5`},
	} {
		send(tt.line)
		l := next()
		if gjson.Get(l, "id").Raw != tt.id || gjson.Get(l, "error.code").Int() != jsonrpc.CodeInvalidRequest ||
			!strings.Contains(gjson.Get(l, "error.message").Str, "not initialized") {
			t.Errorf("%s answered %s, want -32600 with id %s", tt.line, l, tt.id)
		}
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	if l := next(); gjson.Get(l, "id").Int() != 6 || !gjson.Get(l, "result").Exists() {
		t.Fatalf("ping before initialize: %s", l)
	}
	send(initializeLine("1", "2025-11-25"))
	if l := next(); !gjson.Get(l, "result.serverInfo").Exists() {
		t.Fatalf("initialize after the refusals: %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":"post","method":"tools/list"}`)
	if l := next(); gjson.Get(l, "id").Str != "post" || !strings.Contains(l, "load_skill") {
		t.Fatalf("tools/list after initialize: %s", l)
	}
	end()
}

// TestHTTPBatchByAgreedVersion: over HTTP a batch is judged by the version
// the session agreed on, as on stdio: without MCP-Protocol-Version the SDK
// took 2025-03-26 (which had batches) and ran it on a 2025-06-18 session.
func TestHTTPBatchByAgreedVersion(t *testing.T) {
	ts := newFixture(t, false).serveHTTP(t)
	const batch = `[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","id":9,"method":"ping"}]`
	for _, tt := range []struct {
		asked, header string
		refused       bool
	}{
		{"2025-06-18", "", true},
		{"2025-06-18", "2025-06-18", true},
		{"2025-11-25", "", true},
		{"2026-07-28", "", true}, // agreed on 2025-11-25
		{"1999-01-01", "", true}, // the SDK's newest
		{"2025-03-26", "", false},
		{"2025-03-26", "2025-03-26", false},
	} {
		first, b := postMCP(t, ts, "", initializeLine("1", tt.asked))
		session := first.Header.Get("Mcp-Session-Id")
		if first.StatusCode != 200 || session == "" {
			t.Fatalf("initialize %s: %d %s", tt.asked, first.StatusCode, b)
		}
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(batch))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		if tt.header != "" {
			req.Header.Set("Mcp-Protocol-Version", tt.header)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if tt.refused {
			if resp.StatusCode != http.StatusBadRequest || gjson.GetBytes(b, "error.code").Int() != jsonrpc.CodeInvalidRequest || !strings.Contains(string(b), "batches") {
				t.Errorf("asked %s, header %q: %d %s, want 400 with -32600", tt.asked, tt.header, resp.StatusCode, b)
			}
		} else if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"id":9`) {
			t.Errorf("asked %s, header %q: %d %s, want the batch answered", tt.asked, tt.header, resp.StatusCode, b)
		}
		endSession(t, ts.URL, session)
	}
}

// TestLongInputsQuotedCut: a 5 MB query came back twice (the text and the
// structured content), a 100 KB path twice in read_skill_resource's
// refusal: what a call sent is quoted cut (wire.Clip), in answers and
// error messages.
func TestLongInputsQuotedCut(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	huge := "pdf " + strings.Repeat("ab", 5<<19) // 5 MB
	long := strings.Repeat("x/", 50<<10)         // 100 KB
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_skills", map[string]any{"query": huge}, `"results":[`},
		{"load_skill", map[string]any{"skill_id": long}, `reason="not_found"`},
		{"read_skill_resource", map[string]any{"skill_id": "team/pdf-forms", "path": long}, `"ok":false`},
		{"read_skill_resource", map[string]any{"skill_id": long, "path": "SKILL.md"}, `"unknown_skill"`},
	} {
		res, text := call(t, cs, tt.tool, tt.args)
		b, _ := json.Marshal(res.StructuredContent)
		if len(text) > 2000 || len(b) > 2000 || !strings.Contains(text, tt.want) || !strings.Contains(text, "...") {
			t.Errorf("%s: %d bytes of text, %d structured: %.300s", tt.tool, len(text), len(b), text)
		}
	}
	for _, tt := range []struct {
		method string
		params any
	}{
		{"skills/get", &GetSkillParams{URI: "skill://" + long}},
		{"resources/directory/read", &ReadDirectoryParams{URI: "skill://" + long}},
		{"skills/list", &ListSkillsParams{Cursor: long}},
	} {
		var err error
		ctx := context.Background()
		switch p := tt.params.(type) {
		case *GetSkillParams:
			_, err = mcp.CallCustomMethod[*GetSkillParams, *GetSkillResult](ctx, cs, tt.method, p)
		case *ReadDirectoryParams:
			_, err = mcp.CallCustomMethod[*ReadDirectoryParams, *ReadDirectoryResult](ctx, cs, tt.method, p)
		case *ListSkillsParams:
			_, err = mcp.CallCustomMethod[*ListSkillsParams, *ListSkillsResult](ctx, cs, tt.method, p)
		}
		if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), "...") {
			t.Errorf("%s: %.300s (%d bytes)", tt.method, err, len(fmt.Sprint(err)))
		}
	}
}

// TestSkillArgumentOneRule: load_skill takes a unique frontmatter name or
// id suffix ("pdf-forms" for team/pdf-forms) and a copied #mention;
// read_skill_resource and skill_execute answered unknown_skill for them.
// Every tool naming a skill resolves it by load_skill's rule.
func TestSkillArgumentOneRule(t *testing.T) {
	f := newFixture(t, true)
	cs := f.connect(t, nil)
	for _, arg := range []string{"team/pdf-forms", "pdf-forms", "#pdf-forms", " /team/pdf-forms "} {
		if res, text := call(t, cs, "load_skill", map[string]any{"skill_id": arg}); res.IsError || !strings.HasPrefix(text, `<skill_context id="team/pdf-forms">`) {
			t.Errorf("load_skill %q: %.200s", arg, text)
		}
		if res, text := call(t, cs, "read_skill_resource", map[string]any{"skill_id": arg, "path": "references/acroform.md"}); res.IsError || !strings.Contains(text, `"skill_id":"team/pdf-forms"`) {
			t.Errorf("read_skill_resource %q: %.300s", arg, text)
		}
		// Refused on the command, past the skill: no script needed to run.
		if res, text := call(t, cs, "skill_execute", map[string]any{"skill_id": arg, "command": "scripts/none.py"}); !res.IsError || !strings.Contains(text, `"code":"not_found"`) || !strings.Contains(text, `"skill_id":"team/pdf-forms"`) {
			t.Errorf("skill_execute %q: %.300s", arg, text)
		}
	}
	for _, tool := range []string{"read_skill_resource", "skill_execute"} {
		if res, text := call(t, cs, tool, map[string]any{"skill_id": "pdf-formz", "path": "SKILL.md", "command": "scripts/fields.py"}); !res.IsError || !strings.Contains(text, `"code":"unknown_skill"`) {
			t.Errorf("%s of an unknown skill: %.300s", tool, text)
		}
	}
}

// TestHTTPSessionCapAnswersTheRequestID: the 503 at the session cap is
// written before the SDK reads the request; it answered "id": null though
// the initialize's id was readable.
func TestHTTPSessionCapAnswersTheRequestID(t *testing.T) {
	f := newFixture(t, false)
	f.srv.cfg.MaxSessions = 1
	ts := f.serveHTTP(t)
	first, b := postMCP(t, ts, "", initializeLine("1", "2025-06-18"))
	session := first.Header.Get("Mcp-Session-Id")
	if first.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: %d %s", first.StatusCode, b)
	}
	defer endSession(t, ts.URL, session)
	for _, id := range []string{`1`, `"init-2"`, `-7`} {
		resp, b := postMCP(t, ts, "", initializeLine(id, "2025-06-18"))
		if resp.StatusCode != http.StatusServiceUnavailable || gjson.GetBytes(b, "id").Raw != id || gjson.GetBytes(b, "error.code").Int() != -32000 {
			t.Errorf("id %s at the cap: %d %s", id, resp.StatusCode, b)
		}
	}
}

// TestParamsErrorsInPlainTerms: read_skill_resource {"path":5} answered
// with Go's "json: cannot unmarshal … Go struct field"; it goes through
// the proxy's DecodeToolArgs like every other tool (double-encoded
// arguments included). resources/read without a uri said "Resource not
// found"; a bad resources/list or prompts/list cursor was a bare "invalid
// params" where skills/list says what to pass back.
func TestParamsErrorsInPlainTerms(t *testing.T) {
	send, next, end := stdioSession(t)
	send(initializeLine("1", "2025-11-25"))
	next()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	long := "skill://sql-tuning/" + strings.Repeat("x", 5000)
	for _, tt := range []struct {
		line   string
		code   int64  // 0: a tool result
		want   string // in the error's message, or the tool result's text
		absent string
	}{
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_skill_resource","arguments":{"skill_id":"sql-tuning","path":5}}}`,
			0, `argument \"path\" must be a string, got number`, "Go struct"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_skill_resource","arguments":"{\"skill_id\":\"sql-tuning\",\"path\":\"SKILL.md\"}"}}`,
			0, `"ok":true`, ""},
		{`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{}}`, jsonrpc.CodeInvalidParams, "uri is required", ""},
		{`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"` + long + `"}}`, mcp.CodeResourceNotFound, "Resource not found", strings.Repeat("x", 300)},
		{`{"jsonrpc":"2.0","id":6,"method":"resources/list","params":{"cursor":"bad"}}`, jsonrpc.CodeInvalidParams, `invalid cursor \"bad\": pass back the nextCursor of the previous page`, ""},
		{`{"jsonrpc":"2.0","id":7,"method":"prompts/list","params":{"cursor":"bad"}}`, jsonrpc.CodeInvalidParams, `invalid cursor \"bad\": pass back the nextCursor of the previous page`, ""},
		{`{"jsonrpc":"2.0","id":8,"method":"skills/list","params":{"cursor":"bad"}}`, jsonrpc.CodeInvalidParams, `invalid cursor \"bad\": pass back the nextCursor of the previous page`, ""},
		{`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"skill://sql-tuning/SKILL.md"}}`, 0, "", ""},
	} {
		send(tt.line)
		l := next()
		if tt.code == 0 {
			text := gjson.Get(l, "result.content.0.text").Str + gjson.Get(l, "result.contents.0.text").Str
			if gjson.Get(l, "error").Exists() || text == "" || !strings.Contains(text, tt.want) || (tt.absent != "" && strings.Contains(text, tt.absent)) {
				t.Errorf("%.120s: %.400s", tt.line, l)
			}
			continue
		}
		if gjson.Get(l, "error.code").Int() != tt.code || !strings.Contains(l, tt.want) || (tt.absent != "" && strings.Contains(l, tt.absent)) {
			t.Errorf("%.120s: %.400s, want code %d with %q", tt.line, l, tt.code, tt.want)
		}
	}
	end()
}

// TestReadDirectoryTrailingSlash: resources/directory/read refused a
// folder written with its trailing slash (skill://sql-tuning/,
// skill://sql-tuning/references/) with -32602; it is the same folder.
func TestReadDirectoryTrailingSlash(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	ctx := context.Background()
	list := func(uri string) (string, error) {
		res, err := mcp.CallCustomMethod[*ReadDirectoryParams, *ReadDirectoryResult](ctx, cs, methodReadDirectory, &ReadDirectoryParams{URI: uri})
		if err != nil {
			return "", err
		}
		var out []string
		for _, r := range res.Resources {
			out = append(out, r.URI)
		}
		return strings.Join(out, " "), nil
	}
	for _, tt := range []struct {
		uri, same string // same: "" when refused
	}{
		{"skill://sql-tuning/", "skill://sql-tuning"},
		{"skill://sql-tuning/references/", "skill://sql-tuning/references"},
		{"skill://sql-tuning/references//", "skill://sql-tuning/references"},
		{"skill://team/pdf-forms/scripts/", "skill://team/pdf-forms/scripts"},
		{"skill://sql-tuning/SKILL.md/", ""}, // a file, not a folder
		{"skill:///", ""},
		{"skill://nope/", ""},
	} {
		got, err := list(tt.uri)
		if tt.same == "" {
			if rpcCode(err) != jsonrpc.CodeInvalidParams {
				t.Errorf("%s: %q %v, want -32602", tt.uri, got, err)
			}
			continue
		}
		want, werr := list(tt.same)
		if err != nil || werr != nil || got != want || got == "" {
			t.Errorf("%s: %q %v; %s: %q %v", tt.uri, got, err, tt.same, want, werr)
		}
	}
	// A file's URI followed by any number of slashes is quoted cut.
	if _, err := list("skill://sql-tuning/SKILL.md" + strings.Repeat("/", 100_000)); err == nil || len(err.Error()) > 1000 {
		t.Errorf("a long URI quoted whole: %d bytes", len(fmt.Sprint(err)))
	}
}
