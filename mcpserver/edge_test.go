package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

func writeSkill(t testing.TB, dir, name, desc string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: "+desc+"\n---\nBody.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTopFolderNeedingEscapes: a library whose first folder level has a
// space (or ':' / '@', which docs/mcp.md says are escaped in the first
// segment) must still be served: the first client must not crash the server.
func TestTopFolderNeedingEscapes(t *testing.T) {
	for _, folder := range []string{"My Team", "team:a", "ops@corp"} {
		t.Run(folder, func(t *testing.T) {
			dir := t.TempDir()
			writeSkill(t, filepath.Join(dir, folder, "pdf-tool"), "pdf-tool", "Work with PDF files.")
			writeSkill(t, filepath.Join(dir, "sql-tuning"), "sql-tuning", "Tune slow SQL queries.")
			f := newFixtureAt(t, dir, false)
			var cs *mcp.ClientSession
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("the first client connection panicked (router mcp would crash at start): %v", p)
					}
				}()
				cs = f.connect(t, nil)
			}()
			ctx := context.Background()
			n := 0
			for r, err := range cs.Resources(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				n++
				if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI}); err != nil {
					t.Errorf("read %s: %v", r.URI, err)
				}
			}
			if n == 0 {
				t.Error("no resources")
			}
			res, text := call(t, cs, "load_skill", map[string]any{"skill_id": folder + "/pdf-tool"})
			if res.IsError {
				t.Errorf("load_skill: %s", text)
			}
		})
	}
}

// TestExecuteUnknownSkill: skill_execute with a skill id that is not
// in the library (a typo, a name, or none) must be refused as the sandbox
// refuses it ({"ok":false,"error":{"code":"unknown_skill"|"invalid_arguments"}}),
// not told "skill_execute is not a tool".
func TestExecuteUnknownSkill(t *testing.T) {
	f := newFixture(t, true)
	cs := f.connect(t, nil)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"skill_id": "team/pdf-formz", "command": "scripts/fields.py"}, `"code":"unknown_skill"`},
		{map[string]any{"command": "scripts/fields.py"}, `"code":"invalid_arguments"`},
	} {
		res, text := call(t, cs, "skill_execute", tc.args)
		if !res.IsError || !strings.HasPrefix(text, `{"ok":false`) || !strings.Contains(text, tc.want) {
			t.Errorf("%v: isError=%v %s; want {\"ok\":false,...%s}", tc.args, res.IsError, text, tc.want)
		}
	}
}

// TestReloadWithFolderNeedingEscapes: a reload that brings a skill under a
// top-level folder with a space (legal on disk, RFC 3986 reg-name allows its
// percent-encoding) must not stop the other changes of that reload from
// being published.
func TestReloadWithFolderNeedingEscapes(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	ctx := context.Background()
	writeSkill(t, filepath.Join(f.dir, "My Team", "pdf-tool"), "pdf-tool", "Work with PDF files.")
	writeSkill(t, filepath.Join(f.dir, "regex-builder"), "regex-builder", "Build and test regular expressions.")
	f.reg.Reload(ctx) // subscribers run before it returns
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "regex-builder"}); err != nil {
		t.Errorf("prompt of the new skill regex-builder: %v", err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://regex-builder/SKILL.md"}); err != nil {
		t.Errorf("resource of the new skill regex-builder: %v", err)
	}
}

// TestHTTPProtocolVersion: docs/mcp.md says /mcp negotiates up to
// 2025-11-25 (the SDK serves 2026-07-28 over HTTP only without sessions):
// a client asking for 2026-07-28 falls back, and works. Should a new SDK
// change this, the test says so, and the docs need changing.
func TestHTTPProtocolVersion(t *testing.T) {
	f := newFixture(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ts := httptest.NewServer(f.srv.Handler(ctx, nil))
	defer ts.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("over streamable HTTP a client asking for 2026-07-28 got %s; docs/mcp.md says 2025-11-25", v)
	}
	if r, text := call(t, cs, "search_skills", map[string]any{"query": "slow postgres query"}); r.IsError || !strings.Contains(text, `"id":"sql-tuning"`) {
		t.Errorf("search over the negotiated protocol: %s", text)
	}
}

// TestReadResourceBadTypes: docs/mcp.md's table: read_skill_resource
// fails as {"ok":false,"error":{"code":...}}, invalid_arguments among the
// codes. Arguments of the wrong type get a plain-text message instead.
func TestReadResourceBadTypes(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	for _, a := range []string{`{"skill_id":5,"path":"SKILL.md"}`, `{"skill_id":"sql-tuning","path":5}`, `[1]`} {
		res, text := call(t, cs, "read_skill_resource", json.RawMessage(a))
		if !res.IsError || !strings.HasPrefix(text, `{"ok":false`) || !strings.Contains(text, `"invalid_arguments"`) {
			t.Errorf("%s: isError=%v %s", a, res.IsError, text)
		}
	}
}

// TestNonASCIISkillNames: skills named with lowercase non-ASCII letters
// (the spec allows them) are published, a top-level one too: RFC 3986 lets
// a reg-name authority percent-encode UTF-8 and the Go SDK accepts it (the
// TypeScript SDK takes any string as a URI). Their tools work by id, and
// read_skill_resource reads their files.
func TestNonASCIISkillNames(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, filepath.Join(dir, "café"), "café", "Bake French pastries.")
	writeSkill(t, filepath.Join(dir, "日本語"), "日本語", "Proofread Japanese text.")
	writeSkill(t, filepath.Join(dir, "ru", "навык-2"), "навык-2", "Write quarterly reports.")
	if err := os.MkdirAll(filepath.Join(dir, "café", "references"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "café", "references", "crème.md"), []byte("# Crème pâtissière\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixtureAt(t, dir, false)
	cs := f.connect(t, nil)
	ctx := context.Background()
	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI}); err != nil {
			t.Errorf("read %s: %v", r.URI, err)
		}
	}
	for _, want := range []string{
		"skill://caf%C3%A9/SKILL.md",
		"skill://caf%C3%A9/references/cr%C3%A8me.md",
		"skill://%E6%97%A5%E6%9C%AC%E8%AA%9E/SKILL.md",
		"skill://ru/%D0%BD%D0%B0%D0%B2%D1%8B%D0%BA-2/SKILL.md",
	} {
		if !slices.Contains(uris, want) {
			t.Errorf("%s not published; resources: %q", want, uris)
		}
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"load_skill", map[string]any{"skill_id": "日本語"}, `id="日本語"`},
		{"load_skill", map[string]any{"skill_id": "навык-2"}, `id="ru/навык-2"`},
		{"read_skill_resource", map[string]any{"skill_id": "café", "path": "references/crème.md"}, `Crème pâtissière`},
		{"search_skills", map[string]any{"query": "French pastries"}, `café`},
	} {
		res, text := call(t, cs, tc.tool, tc.args)
		if res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: isError=%v %s; want %s", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}
}

// serveHTTP serves f's streamable HTTP handler until the test ends.
func (f *fixture) serveHTTP(t *testing.T) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ts := httptest.NewServer(f.srv.Handler(ctx, nil))
	t.Cleanup(ts.Close)
	return ts
}

// postMCP sends one JSON-RPC message to ts's /mcp, in session (none: "").
func postMCP(t *testing.T, ts *httptest.Server, session, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// TestHTTPSecondInitialize: an initialize in an open session is an invalid
// request (-32600; the SDK's own answer has error code 0).
func TestHTTPSecondInitialize(t *testing.T) {
	ts := newFixture(t, false).serveHTTP(t)
	first, b := postMCP(t, ts, "", initializeLine("1", "2025-06-18"))
	session := first.Header.Get("Mcp-Session-Id")
	if first.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: %d %s", first.StatusCode, b)
	}
	if resp, b := postMCP(t, ts, session, initializeLine("1", "2025-06-18")); resp.StatusCode != 400 || gjson.GetBytes(b, "error.code").Int() != -32600 || gjson.GetBytes(b, "id").Raw != "1" {
		t.Errorf("second initialize: %d %s", resp.StatusCode, b)
	}
	del, _ := http.NewRequest("DELETE", ts.URL+"/mcp", nil)
	del.Header.Set("Mcp-Session-Id", session)
	if resp, err := ts.Client().Do(del); err == nil {
		resp.Body.Close()
	}
}

// TestHTTPInexactIDs: a numeric id the SDK would answer changed (16.5 as
// 16, 2^53+1 as 2^53) is refused over HTTP as on stdio, with the id as sent.
func TestHTTPInexactIDs(t *testing.T) {
	ts := newFixture(t, false).serveHTTP(t)
	for _, id := range []string{"16.5", "9007199254740993"} {
		resp, b := postMCP(t, ts, "", initializeLine(id, "2025-06-18"))
		if resp.StatusCode != 400 || gjson.GetBytes(b, "id").Raw != id || gjson.GetBytes(b, "error.code").Int() != -32600 {
			t.Errorf("id %s: %d %s", id, resp.StatusCode, b)
		}
	}
}

// TestHTTPNoSession: a POST without Mcp-Session-Id that is not an
// initialize is refused 400 (the transport's rule for servers that need
// sessions), with the request's id, and opens no session.
func TestHTTPNoSession(t *testing.T) {
	ts := newFixture(t, false).serveHTTP(t)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		resp, b := postMCP(t, ts, "", body)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Mcp-Session-Id") != "" ||
			gjson.GetBytes(b, "error.code").Int() != -32600 || !strings.Contains(string(b), "no Mcp-Session-Id") {
			t.Errorf("%s: %d %q %s", body, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), b)
		}
		if strings.Contains(body, `"id":7`) && gjson.GetBytes(b, "id").Raw != "7" {
			t.Errorf("answer's id %s, want 7", gjson.GetBytes(b, "id").Raw)
		}
	}
}
