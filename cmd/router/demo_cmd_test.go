package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestDemo runs the README's first command in-process: the real proxy in
// front of the stand-in model, over HTTP, on the shipped example library.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	err := runDemo(context.Background(), &out, []string{"../../examples/skills"}, "127.0.0.1:0", false, demoPrompts)
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req demoRequest
			if err := jsonUnmarshal(tt.req, &req); err != nil {
				t.Fatal(err)
			}
			msg := demoReply(req)
			_, isTool := msg["tool_calls"]
			if isTool != tt.wantTool {
				t.Fatalf("tool call = %v, want %v (%v)", isTool, tt.wantTool, msg)
			}
			if tt.want != "" && !strings.Contains(msg["content"].(string), tt.want) {
				t.Errorf("content %q lacks %q", msg["content"], tt.want)
			}
		})
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
