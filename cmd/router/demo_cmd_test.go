package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire/chat"
)

// TestDemo runs the README's first command in-process: the real proxy in
// front of the stand-in model, over HTTP, on the shipped example library.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	err := runDemo(context.Background(), &out, []string{"../../examples/skills"}, "127.0.0.1:0", false, "", demoPrompts)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"auto-loaded: sql-query-tuning",
		"skill instructions in my context: sql-query-tuning (user)",
		"auto-loaded: (none)", // the capital of Australia
		"no skill instructions were loaded",
		"server-side tool rounds: 1",
		"skill instructions in my context: git-commit-messages (tool)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("demo output lacks %q:\n%s", want, got)
		}
	}
}

func TestDemoModelReply(t *testing.T) {
	tests := []struct {
		name     string
		req      string
		wantTool bool
		want     string
	}{
		{"asks to load", `{"model":"m","messages":[{"role":"user","content":"load regex-builder"}],"tools":[{"type":"function","function":{"name":"load_skill"}}]}`, true, ""},
		{"no tool offered", `{"model":"m","messages":[{"role":"user","content":"load regex-builder"}]}`, false, "no skill instructions"},
		{"answered", `{"model":"m","messages":[{"role":"user","content":"load x"},{"role":"tool","tool_call_id":"a","content":"<skill_context id=\"x\">"}],"tools":[{"type":"function","function":{"name":"load_skill"}}]}`, false, "x (tool)"},
		// A library without the skill: the demo says why nothing loaded.
		{"not found", `{"model":"m","messages":[{"role":"user","content":"load x\u0026y"},{"role":"tool","tool_call_id":"a","content":"<skill_error id=\"x\u0026amp;y\" reason=\"not_found\">\n  <message>The skill \"x\u0026amp;y\" is unavailable: no skill has this id.</message>\n</skill_error>"}],"tools":[{"type":"function","function":{"name":"load_skill"}}]}`,
			false, `load_skill "x&y" answered not_found: The skill "x&y" is unavailable: no skill has this id.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := chat.Parse([]byte(tt.req))
			if err != nil {
				t.Fatal(err)
			}
			rep := demoReply(req.View())
			if isTool := len(rep.Calls) > 0; isTool != tt.wantTool {
				t.Fatalf("tool call = %v, want %v (%+v)", isTool, tt.wantTool, rep)
			}
			if tt.want != "" && !strings.Contains(rep.Text, tt.want) {
				t.Errorf("text %q lacks %q", rep.Text, tt.want)
			}
		})
	}
}

// TestDemoModelAPIs: the stand-in answers the three APIs, JSON and streamed,
// in their own shapes, with a load_skill call when asked.
func TestDemoModelAPIs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(serveDemoModel))
	defer srv.Close()
	tests := []struct {
		path, body string
		want       []string
	}{
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"load x"}],"tools":[{"type":"function","function":{"name":"load_skill"}}]}`,
			[]string{`"object":"chat.completion"`, `"name":"load_skill"`, `"finish_reason":"tool_calls"`}},
		{"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			[]string{`"object":"chat.completion.chunk"`, `[demo model]`, `"finish_reason":"stop"`, `"usage":`, "data: [DONE]"}},
		{"/v1/responses", `{"model":"m","input":"load x","tools":[{"type":"function","name":"load_skill","parameters":{}}]}`,
			[]string{`"object":"response"`, `"type":"function_call"`, `"name":"load_skill"`}},
		{"/v1/responses", `{"model":"m","input":"hi","stream":true}`,
			[]string{"event: response.created", "event: response.output_text.delta", "event: response.completed", `"sequence_number":`}},
		{"/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"load x"}],"tools":[{"name":"load_skill","input_schema":{}}]}`,
			[]string{`"type":"message"`, `"type":"tool_use"`, `"stop_reason":"tool_use"`}},
		{"/v1/messages", `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			[]string{"event: message_start", "event: content_block_delta", `"stop_reason":"end_turn"`, "event: message_stop"}},
		{"/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, []string{`"input_tokens":`}},
		{"/v1/responses/input_tokens", `{"model":"m","input":"hi"}`, []string{`"object":"response.input_tokens"`, `"input_tokens":`}},
		{"/v1/messages", `{"model":"m"}`, []string{`"type":"error"`, `"invalid_request_error"`}},
	}
	for _, tt := range tests {
		resp, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, w := range tt.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s %s: answer lacks %s:\n%s", tt.path, tt.body, w, b)
			}
		}
	}
}

// TestDemoStackAllAPIs sends each client API through the real proxy and
// router to the stand-in model, JSON and streamed: the model's load_skill
// call is answered server-side and hidden, and its final answer shows the
// skill in its context.
func TestDemoStackAllAPIs(t *testing.T) {
	ctx := context.Background()
	d, err := startDemo(ctx, []string{"../../examples/skills"}, "127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.stop()
	// MCP is served beside the APIs, as serve does by default.
	mreq, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(d.base, "/v1")+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	mreq.Header.Set("Content-Type", "application/json")
	mreq.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(mreq); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"serverInfo"`) {
			t.Errorf("/mcp: status %d: %s", resp.StatusCode, b)
		}
	}
	const ask = "Please load regex-builder and then write a regex for ISO dates."
	tests := []struct {
		name, path, body string
		hdr              map[string]string
	}{
		{"chat", "/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"` + ask + `"}]}`, nil},
		{"chat stream", "/chat/completions", `{"model":"demo","stream":true,"messages":[{"role":"user","content":"` + ask + `"}]}`, nil},
		{"responses", "/responses", `{"model":"demo","input":"` + ask + `"}`, nil},
		{"responses stream", "/responses", `{"model":"demo","stream":true,"instructions":"Be brief.","input":[{"role":"user","content":"` + ask + `"}]}`, nil},
		{"messages", "/messages?beta=true", `{"model":"demo","max_tokens":100,"messages":[{"role":"user","content":"` + ask + `"}]}`,
			map[string]string{"anthropic-version": "2023-06-01"}},
		{"messages stream", "/messages", `{"model":"demo","max_tokens":100,"stream":true,"system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":"` + ask + `"}]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, d.base+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Skillrouter-Top-K", "0") // the model must load the skill itself
			for k, v := range tt.hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out := string(b)
			if resp.StatusCode != 200 || strings.Contains(out, "load_skill") || !strings.Contains(out, "regex-builder (") {
				t.Fatalf("status %d: the answer must not show load_skill and must report the loaded skill:\n%s", resp.StatusCode, out)
			}
			if rounds := resp.Header.Get("X-Skillrouter-Tool-Rounds") + resp.Trailer.Get("X-Skillrouter-Tool-Rounds"); rounds != "1" {
				t.Errorf("tool rounds %q, want 1", rounds)
			}
			if resp.Header.Get("X-Skillrouter-Strategy") == "" {
				t.Error("no decision headers")
			}
		})
	}
}

// The demo prints the auto-loaded ids as they are named, though the
// header carries a non-ASCII id percent-encoded.
func TestDemoNonASCIISkill(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "café"), 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: café\ndescription: Brew espresso and steam milk. Use when the user asks about coffee.\n---\n# Café\nGrind 18 g.\n"
	if err := os.WriteFile(filepath.Join(dir, "café", "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runDemo(context.Background(), &out, []string{dir}, "127.0.0.1:0", false, "", []demoPrompt{{text: "#café how do I steam milk"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "auto-loaded: café ") {
		t.Fatalf("demo output:\n%s", out.String())
	}
}

// demo --log-level: info logs each request's decision; a bad level is
// refused before anything starts.
func TestDemoLogLevel(t *testing.T) {
	if _, _, err := run(t, "demo", "--log-level", "loud"); err == nil || !strings.Contains(err.Error(), `log.level "loud"`) {
		t.Fatalf("bad level: %v", err)
	}
	d, err := startDemo(context.Background(), []string{"../../examples/skills"}, "127.0.0.1:0", "info")
	if err != nil {
		t.Fatal(err)
	}
	d.stop()
}

// TestDemoModelChains: each answer has an id of its own, and a Responses
// turn chained with previous_response_id goes on from its history; an id
// it never gave, or deleted, is refused as the API refuses it.
func TestDemoModelChains(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(serveDemoModel))
	defer srv.Close()
	post := func(body string) (int, string) {
		resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	_, first := post(`{"model":"m","input":"hi"}`)
	id := gjson.Get(first, "id").Str
	_, second := post(`{"model":"m","input":"and again","previous_response_id":"` + id + `"}`)
	if id2 := gjson.Get(second, "id").Str; id2 == id || id == "" {
		t.Errorf("ids %q and %q", id, id2)
	}
	if !strings.Contains(first, "I received 1 messages") || !strings.Contains(second, "I received 3 messages") {
		t.Errorf("the chained turn did not get its history:\n%s\n%s", first, second)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/responses/"+id, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("delete: %v %v", resp, err)
	}
	if status, b := post(`{"model":"m","input":"x","previous_response_id":"` + id + `"}`); status != 400 || !strings.Contains(b, "previous_response_not_found") {
		t.Errorf("a deleted id: %d %s", status, b)
	}
}
