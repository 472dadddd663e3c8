package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/chat"
)

// library loads the sandbox fixtures through the real skills scanner and
// builds a keyword-ranking router over them (no embedder needed).
func library(t *testing.T) (*skills.Snapshot, *router.Router) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	ctx := context.Background()
	snap := skills.Load(ctx, []string{filepath.Join("testdata", "skills")}, skills.Options{})
	for _, id := range []string{"calc", "scripts-demo", "word-count", "broken-exec"} {
		if _, ok := snap.Get(id); !ok {
			t.Fatalf("fixture %s not loaded; problems: %v", id, snap.Problems())
		}
	}
	if s, _ := snap.Get("calc"); s.Type != skills.TypeExecutable {
		t.Fatalf("calc has type %q", s.Type)
	}
	r, err := router.New(ctx, snap, router.Options{Strategy: router.StrategyBM25})
	if err != nil {
		t.Fatal(err)
	}
	return snap, r
}

func provider(t *testing.T, snap *skills.Snapshot, enabled bool) *sandbox.Provider {
	t.Helper()
	p, err := sandbox.New(sandbox.Config{
		Enabled: enabled, OutputRoot: filepath.Join(t.TempDir(), "out"), Lookup: snap.Get,
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rewriteChat rewrites a chat body as the proxy does, with nothing
// auto-loaded, so activation happens only through the model's load_skill
// call: the parsed request, the plan and session, and the upstream body.
func rewriteChat(t *testing.T, r *router.Router, body []byte, opts router.RewriteOptions) (*chat.Request, *router.Rewrite, []byte) {
	t.Helper()
	req, err := chat.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	none := -1
	rw, err := r.Rewrite(context.Background(), req.View(), opts, router.Overrides{TopK: &none})
	if err != nil {
		t.Fatal(err)
	}
	out, err := req.Render(rw.Plan)
	if err != nil {
		t.Fatal(err)
	}
	return req, rw, out
}

// TestSessionRegistersExecutableSkillOnLoad drives router.Session the way the
// proxy does: load_skill activates the executable skill, the next round
// offers its --help-json tool, and calling it runs --run-json.
func TestSessionRegistersExecutableSkillOnLoad(t *testing.T) {
	snap, r := library(t)
	p := provider(t, snap, true)
	ctx := context.Background()
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"What is six times seven?"}]}`)
	req, rw, body := rewriteChat(t, r, body, router.RewriteOptions{Tools: p})
	sess := rw.Session
	if sess.Handles("calc_numbers") {
		t.Fatal("calc_numbers offered before calc was loaded")
	}
	if res := sess.Call(ctx, "c1", "load_skill", json.RawMessage(`{"skill_id":"calc"}`)); !strings.Contains(res.Content, "calc") {
		t.Fatalf("load_skill: %s", res.Content)
	}
	for _, name := range []string{"calc_numbers", sandbox.ToolExecute, sandbox.ToolReadResource} {
		if !sess.Handles(name) {
			t.Errorf("after load_skill, %s is not handled", name)
		}
	}
	res := sess.Call(ctx, "c2", "calc_numbers", json.RawMessage(`{"operation":"multiply","numbers":[6,7]}`))
	if res.Content != `{"result": 42}` {
		t.Fatalf("calc_numbers: %s", res.Content)
	}
	next, err := req.FollowUp(body, &wire.Answer{
		Calls: []wire.ToolCall{{ID: "c2", Name: "calc_numbers", Arguments: json.RawMessage(`{}`)}},
		Turn:  json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"calc_numbers","arguments":"{}"}}]}`),
	}, []router.ToolResult{res}, sess.Tools())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(toolNames(t, next), "calc_numbers") {
		t.Errorf("follow-up tools %v lack calc_numbers", toolNames(t, next))
	}
	// A skill that exists but was not loaded is refused with a hint.
	out := sess.Call(ctx, "c3", sandbox.ToolExecute, json.RawMessage(`{"skill_id":"scripts-demo","command":"scripts/hello.sh"}`))
	if !strings.Contains(out.Content, sandbox.CodeSkillNotActive) || !strings.Contains(out.Content, "load_skill") {
		t.Errorf("inactive skill: %s", out.Content)
	}
}

// TestSessionReadsResourcesOfLoadedSkill: read_skill_resource works for a
// skill once load_skill made it active.
func TestSessionReadsResourcesOfLoadedSkill(t *testing.T) {
	snap, r := library(t)
	p := provider(t, snap, true)
	ctx := context.Background()
	_, rw, _ := rewriteChat(t, r, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), router.RewriteOptions{Tools: p})
	rw.Session.Call(ctx, "c1", "load_skill", json.RawMessage(`{"skill_id":"scripts-demo"}`))
	res := rw.Session.Call(ctx, "c2", sandbox.ToolReadResource, json.RawMessage(`{"skill_id":"scripts-demo","path":"references/guide.md"}`))
	if !strings.Contains(res.Content, `"ok":true`) || !strings.Contains(res.Content, "Héllo wörld") {
		t.Errorf("read_skill_resource: %s", res.Content)
	}
}

func TestAllowedToolsFromFrontmatter(t *testing.T) {
	snap, _ := library(t)
	p, err := sandbox.New(sandbox.Config{AllowedTools: []string{"Read", "Bash"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := snap.Get("scripts-demo")
	if got, want := p.AllowedTools([]*skills.Skill{s}), []string{"Bash", "Bash(git:*)", "Read"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestSessionOffersNothingWhenDisabled: with execution off, loading an
// executable skill adds no tools, none are offered, and a call to a built-in
// tier-3 tool is answered by the proxy with "execution disabled" rather than
// reaching the client.
func TestSessionOffersNothingWhenDisabled(t *testing.T) {
	snap, r := library(t)
	p := provider(t, snap, false)
	ctx := context.Background()
	_, rw, body := rewriteChat(t, r, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), router.RewriteOptions{Tools: p})
	for _, name := range toolNames(t, body) {
		if name == "calc_numbers" || sandbox.IsTool(name) {
			t.Errorf("disabled, yet %s is offered", name)
		}
	}
	rw.Session.Call(ctx, "c1", "load_skill", json.RawMessage(`{"skill_id":"calc"}`))
	if rw.Session.Handles("calc_numbers") {
		t.Error("disabled, yet calc_numbers is handled")
	}
	for _, name := range []string{sandbox.ToolExecute, sandbox.ToolReadResource} {
		if !rw.Session.Handles(name) {
			t.Errorf("disabled %s should still be answered by the proxy", name)
		}
		res := rw.Session.Call(ctx, "c2", name, json.RawMessage(`{"skill_id":"calc","command":"execute.py"}`))
		if res.Content != sandbox.DisabledResult(name) || !strings.Contains(strings.ToLower(res.Content), "disabled") {
			t.Errorf("%s while disabled: %s", name, res.Content)
		}
	}
}

func toolNames(t *testing.T, body []byte) []string {
	t.Helper()
	var b struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range b.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

// fakeUpstream is a scripted OpenAI-compatible chat endpoint: each answer is
// chosen by the request it receives.
type fakeUpstream struct {
	mu       sync.Mutex
	requests [][]byte
	answer   func(round int, req map[string]any) map[string]any
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	round := len(f.requests)
	f.requests = append(f.requests, body)
	f.mu.Unlock()
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	msg := f.answer(round, req)
	finish := "stop"
	if _, ok := msg["tool_calls"]; ok {
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

func toolCall(id, name, args string) map[string]any {
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args},
	}}}
}

// lastToolResult returns the content of the last tool message in a request.
func lastToolResult(req map[string]any) string {
	msgs, _ := req["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, _ := msgs[i].(map[string]any); m["role"] == "tool" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// TestProxyToolLoopRunsExecutableSkill is the end-to-end path: a client asks
// the proxy; the (fake) model calls load_skill, then the executable skill's
// tool registered from --help-json; the proxy answers both server-side and
// the client sees only the final answer built from the script's JSON result.
func TestProxyToolLoopRunsExecutableSkill(t *testing.T) {
	snap, r := library(t)
	p := provider(t, snap, true)
	up := &fakeUpstream{answer: func(round int, req map[string]any) map[string]any {
		switch round {
		case 0:
			return toolCall("call-1", "load_skill", `{"skill_id":"calc"}`)
		case 1:
			return toolCall("call-2", "calc_numbers", `{"operation":"add","numbers":[40,2]}`)
		default:
			return map[string]any{"role": "assistant", "content": "The tool said " + lastToolResult(req)}
		}
	}}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL + "/v1")
	srv, err := proxy.New(proxy.Config{
		Upstream: u, Rewriter: proxy.NewRewriter(r, router.RewriteOptions{Tools: p}),
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v1/chat/completions",
		bytes.NewReader([]byte(`{"model":"m","messages":[{"role":"user","content":"Add forty and two, please."}]}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Skillrouter-Top-K", "0")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []any  `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("answer %s (%v)", rec.Body, err)
	}
	if got := out.Choices[0].Message; got.Content != `The tool said {"result": 42}` || len(got.ToolCalls) != 0 {
		t.Errorf("client saw %+v", got)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.requests) != 3 {
		t.Fatalf("%d upstream rounds, want 3", len(up.requests))
	}
	if !slices.Contains(toolNames(t, up.requests[1]), "calc_numbers") {
		t.Errorf("round 2 tools %v lack calc_numbers", toolNames(t, up.requests[1]))
	}
}
