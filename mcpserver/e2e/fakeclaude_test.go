package e2e

// A stand-in for the Anthropic Messages API (POST /v1/messages, streaming
// and not, and /v1/messages/count_tokens), as Claude Code calls it, written
// from the public API reference. It plays a model that uses an MCP server's
// skill tools: search_skills first, then load_skill with the best hit's id,
// then a final answer quoting the skill it loaded. Requests without those
// tools (Claude Code's side calls: titles, summaries) get a short text.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// messagesRequest is the part of a Messages request the fake reads.
type messagesRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// block is a content block of a request or response message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // tool_result: a string or text blocks
	IsError   bool            `json:"is_error,omitempty"`
}

// toolResult is one tool_result the fake received, with its text.
type toolResult struct {
	Tool    string // the tool_use's name, from the fake's own earlier reply
	Text    string
	IsError bool
}

type fakeClaude struct {
	t      *testing.T
	server string // MCP server name in the host's config
	query  string // what the model searches for

	mu       sync.Mutex
	requests []string     // method and path of every request
	results  []toolResult // tool results seen, in order
	calls    map[string]string
	n        int
}

func newFakeClaude(t *testing.T, server, query string) (*fakeClaude, *httptest.Server) {
	f := &fakeClaude{t: t, server: server, query: query, calls: map[string]string{}}
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	return f, ts
}

func (f *fakeClaude) tool(name string) string { return "mcp__" + f.server + "__" + name }

func (f *fakeClaude) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, map[string]any{"input_tokens": 100 + len(body)/4})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		var req messagesRequest
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "messages: invalid JSON body"}})
			return
		}
		if d := os.Getenv("FAKECLAUDE_DUMP"); d != "" { // debugging aid: what the host sent

			_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("req%02d.json", f.n)), body, 0o644)
		}
		content, stop := f.reply(&req)
		f.mu.Lock()
		f.n++
		id := fmt.Sprintf("msg_fake%03d", f.n)
		f.mu.Unlock()
		if req.Stream {
			f.stream(w, id, req.Model, content, stop)
			return
		}
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 20}})
	default:
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": "not found: " + r.URL.Path}})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeClaude) hasTool(req *messagesRequest, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// reply decides the next assistant turn from the conversation so far, as a
// model would: when the host defers MCP tools behind its ToolSearch tool
// (Claude Code does), load their schemas first.
func (f *fakeClaude) reply(req *messagesRequest) ([]block, string) {
	deferred := f.hasTool(req, toolSearch)
	if !deferred && !f.hasTool(req, f.tool("search_skills")) {
		return []block{{Type: "text", Text: "OK."}}, "end_turn" // a side request (title, summary)
	}
	last := req.Messages[len(req.Messages)-1]
	var blocks []block
	if len(last.Content) > 0 && last.Content[0] == '[' {
		_ = json.Unmarshal(last.Content, &blocks)
	}
	var res *toolResult
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		f.mu.Lock()
		tr := toolResult{Tool: f.calls[b.ToolUseID], Text: resultText(b.Content), IsError: b.IsError}
		f.results = append(f.results, tr)
		f.mu.Unlock()
		res = &tr
	}
	switch {
	case res == nil && deferred && !f.hasTool(req, f.tool("search_skills")):
		return f.call(toolSearch, map[string]any{"query": "select:" + f.tool("search_skills") + "," + f.tool("load_skill"), "max_results": 5})
	case res == nil, res.Tool == toolSearch:
		return f.call(f.tool("search_skills"), map[string]any{"query": f.query})
	case res.Tool == f.tool("search_skills") && !res.IsError:
		var found struct {
			Results []struct {
				ID string `json:"id"`
			} `json:"results"`
		}
		// The host may append its own notes after the tool's JSON.
		if json.NewDecoder(strings.NewReader(res.Text)).Decode(&found) == nil && len(found.Results) > 0 {
			return f.call(f.tool("load_skill"), map[string]any{"skill_id": found.Results[0].ID})
		}
	}
	first, _, _ := strings.Cut(res.Text, "\n")
	return []block{{Type: "text", Text: "Done. Last tool result began with: " + first}}, "end_turn"
}

// toolSearch is Claude Code's tool that loads deferred tools' schemas.
const toolSearch = "ToolSearch"

// call answers with one tool_use block.
func (f *fakeClaude) call(tool string, input map[string]any) ([]block, string) {
	in, _ := json.Marshal(input)
	f.mu.Lock()
	id := fmt.Sprintf("toolu_fake%03d", len(f.calls)+1)
	f.calls[id] = tool
	f.mu.Unlock()
	return []block{{Type: "text", Text: "Let me check the skill library."}, {Type: "tool_use", ID: id, Name: tool, Input: in}}, "tool_use"
}

// resultText reads a tool_result's content: a string or text blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []block
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// stream writes the reply as the Messages API's server-sent events.
func (f *fakeClaude) stream(w http.ResponseWriter, id, model string, content []block, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
	event("ping", map[string]any{"type": "ping"})
	for i, b := range content {
		switch b.Type {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text}})
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(b.Input)}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// seen returns the tool results received and the requests made.
func (f *fakeClaude) seen() ([]toolResult, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]toolResult(nil), f.results...), append([]string(nil), f.requests...)
}
