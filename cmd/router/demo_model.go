package main

// demoModel is a deterministic stand-in for an LLM behind the OpenAI chat
// completions API, used only by `router demo` so the whole pipeline runs with
// no model server. It does not generate text: it reports what the proxy put
// in front of it, and it exercises the server-side tool loop by calling
// load_skill when asked to ("load <skill-id>").

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

var (
	envelopeRe = regexp.MustCompile(`<skill_context id="([^"]+)">`)
	catalogRe  = regexp.MustCompile(`<skill>`)
	loadAskRe  = regexp.MustCompile(`(?i)\bload (?:the )?(?:skill )?([a-z0-9][a-z0-9/_.-]*)`)
)

type demoMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type demoRequest struct {
	Model    string        `json:"model"`
	Messages []demoMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (m demoMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func serveDemoModel(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		if r.URL.Path == "/v1/models" {
			writeDemoJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "demo", "object": "model", "owned_by": "skillrouter"}}})
			return
		}
		w.WriteHeader(http.StatusNotFound)
		writeDemoJSON(w, map[string]any{"error": map[string]any{"message": "the demo model serves only chat completions", "type": "invalid_request_error"}})
		return
	}
	var req demoRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeDemoJSON(w, map[string]any{"error": map[string]any{"message": err.Error(), "type": "invalid_request_error"}})
		return
	}
	msg := demoReply(req)
	finish := "stop"
	if _, ok := msg["tool_calls"]; ok {
		finish = "tool_calls"
	}
	writeDemoJSON(w, map[string]any{
		"id": "chatcmpl-demo", "object": "chat.completion", "created": 0, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
	})
}

// demoReply decides the stand-in's answer from the request it received.
func demoReply(req demoRequest) map[string]any {
	var catalog int
	var loaded []string
	var lastUser string
	for _, m := range req.Messages {
		t := m.text()
		if m.Role == "system" || m.Role == "developer" {
			catalog += len(catalogRe.FindAllStringIndex(t, -1))
		}
		for _, g := range envelopeRe.FindAllStringSubmatch(t, -1) {
			loaded = append(loaded, fmt.Sprintf("%s (%s)", g[1], m.Role))
		}
		if m.Role == "user" && !strings.Contains(t, "<skill_context") {
			lastUser = t
		}
	}
	last := req.Messages[len(req.Messages)-1]
	hasLoadTool := false
	for _, t := range req.Tools {
		hasLoadTool = hasLoadTool || t.Function.Name == "load_skill"
	}
	// Asked to load a skill and not answered by a tool result yet: call load_skill.
	if g := loadAskRe.FindStringSubmatch(lastUser); g != nil && hasLoadTool && last.Role != "tool" {
		args, _ := json.Marshal(map[string]string{"skill_id": g[1]})
		return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_demo_1", "type": "function",
			"function": map[string]any{"name": "load_skill", "arguments": string(args)},
		}}}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[demo model] I received %d messages; the system prompt lists %d skills in its catalog", len(req.Messages), catalog)
	if len(loaded) > 0 {
		fmt.Fprintf(&b, "; skill instructions in my context: %s", strings.Join(loaded, ", "))
	} else {
		b.WriteString("; no skill instructions were loaded")
	}
	b.WriteString(".")
	return map[string]any{"role": "assistant", "content": b.String()}
}

func writeDemoJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
