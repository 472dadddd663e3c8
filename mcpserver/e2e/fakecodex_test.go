package e2e

// A stand-in for the OpenAI Responses API (POST /v1/responses, streamed) as
// Codex CLI calls it, written from the public API reference: function tools
// grouped in {"type":"namespace"} tools, function_call items that name their
// namespace, a stateless transcript (store: false) sent again every turn. It
// plays a model that uses an MCP server's skill tools, which Codex offers in
// the namespace mcp__<server>: search_skills, then load_skill with the best
// hit's id, then read_skill_resource with the first file the skill lists,
// then Codex's own read_mcp_resource with the hit's skill:// URI, then a
// final answer naming the skill.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// responsesRequest is the part of a Responses request the fake reads.
type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  []json.RawMessage `json:"input"`
	Tools  []responsesTool   `json:"tools"`
}

// responsesTool is a tool declaration; a namespace holds function tools.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Tools       []responsesTool `json:"tools"`
}

// responsesItem is an input or output item: a function_call, its
// function_call_output, or a message.
type responsesItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id,omitempty"`
	Status    string          `json:"status,omitempty"`
	Role      string          `json:"role,omitempty"`
	Content   []any           `json:"content,omitempty"`
	Name      string          `json:"name,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

type fakeCodex struct {
	server string // MCP server name in Codex's config
	query  string // what the model searches for

	mu       sync.Mutex
	requests []string          // method and path of every request
	first    *responsesRequest // the first model request, as sent
	calls    map[string]string // call_id → tool, for the calls the fake made
	results  []toolResult      // tool outputs seen, in order
	hit      searchHit         // the best search hit, once seen
	n        int
}

// searchHit is one entry of search_skills' results.
type searchHit struct {
	ID  string `json:"id"`
	URI string `json:"uri"`
}

func newFakeCodex(t *testing.T, server, query string) (*fakeCodex, *httptest.Server) {
	f := &fakeCodex{server: server, query: query, calls: map[string]string{}}
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	return f, ts
}

// namespace is where Codex puts the server's tools.
func (f *fakeCodex) namespace() string { return "mcp__" + f.server }

// answer is the final message the fake gives once every step is done.
func (f *fakeCodex) answer(id string) string { return "Done: followed skill " + id + "." }

func (f *fakeCodex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	var req responsesRequest
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": "not found: " + r.URL.Path}})
		return
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Input) == 0 || !req.Stream {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": "expected a streamed request with input"}})
		return
	}
	f.mu.Lock()
	if f.first == nil {
		f.first = &req
	}
	f.n++
	id := fmt.Sprintf("resp_fake%03d", f.n)
	f.mu.Unlock()
	f.stream(w, id, req.Model, f.reply(&req))
}

// reply decides the next output item from the transcript, as a model would.
func (f *fakeCodex) reply(req *responsesRequest) responsesItem {
	if !f.offers(req, f.namespace(), "search_skills") {
		return f.message("The skill tools are missing.")
	}
	var last *toolResult
	for _, raw := range req.Input {
		var it responsesItem
		if json.Unmarshal(raw, &it) != nil || it.Type != "function_call_output" {
			continue
		}
		f.mu.Lock()
		tool, ours := f.calls[it.CallID]
		if ours { // each output once: the transcript repeats earlier ones
			delete(f.calls, it.CallID)
			f.results = append(f.results, toolResult{Tool: tool, Text: outputText(it.Output)})
			last = &f.results[len(f.results)-1]
		}
		f.mu.Unlock()
	}
	ns := f.namespace()
	switch {
	case last == nil:
		return f.call(ns, "search_skills", map[string]any{"query": f.query})
	case last.Tool == ns+"__search_skills":
		var found struct{ Results []searchHit }
		// Codex hands the model the result's structured content as JSON.
		if json.Unmarshal([]byte(last.Text), &found) == nil && len(found.Results) > 0 {
			f.mu.Lock()
			f.hit = found.Results[0]
			f.mu.Unlock()
			return f.call(ns, "load_skill", map[string]any{"skill_id": found.Results[0].ID})
		}
	case last.Tool == ns+"__load_skill":
		if m := resourcePathRE.FindStringSubmatch(last.Text); m != nil {
			return f.call(ns, "read_skill_resource", map[string]any{"skill_id": f.top().ID, "path": m[1]})
		}
	case last.Tool == ns+"__read_skill_resource":
		return f.call("", "read_mcp_resource", map[string]any{"server": f.server, "uri": f.top().URI})
	case last.Tool == "read_mcp_resource":
		return f.message(f.answer(f.top().ID))
	}
	first, _, _ := strings.Cut(last.Text, "\n")
	return f.message("Stopped after " + last.Tool + ": " + first)
}

// resourcePathRE finds the files a load_skill envelope lists.
var resourcePathRE = regexp.MustCompile(`<resource path="([^"]+)"`)

func (f *fakeCodex) top() searchHit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hit
}

// offers reports whether the request declares the tool (in namespace ns,
// or at the top level when ns is "").
func (f *fakeCodex) offers(req *responsesRequest, ns, name string) bool {
	for _, t := range req.Tools {
		if ns == "" && t.Type == "function" && t.Name == name {
			return true
		}
		if ns != "" && t.Type == "namespace" && t.Name == ns {
			for _, sub := range t.Tools {
				if sub.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// call is a function_call item of a tool in namespace ns ("" for a
// top-level tool), recorded under Codex's qualified name ns__name.
func (f *fakeCodex) call(ns, name string, args map[string]any) responsesItem {
	b, _ := json.Marshal(args)
	tool := name
	if ns != "" {
		tool = ns + "__" + name
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("call_fake%03d", len(f.results)+len(f.calls)+1)
	f.calls[id] = tool
	return responsesItem{Type: "function_call", ID: "fc_" + id, Status: "completed", Name: name, Namespace: ns, CallID: id, Arguments: string(b)}
}

func (f *fakeCodex) message(text string) responsesItem {
	f.mu.Lock()
	id := fmt.Sprintf("msg_fake%03d", f.n)
	f.mu.Unlock()
	return responsesItem{Type: "message", ID: id, Status: "completed", Role: "assistant",
		Content: []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// outputText reads a function_call_output's output (a string, or
// input_text parts) without the "Wall time: … Output:" header Codex puts
// before an MCP tool's result.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(raw, &parts)
		texts := make([]string, len(parts))
		for i, p := range parts {
			texts[i] = p.Text
		}
		s = strings.Join(texts, "\n")
	}
	if strings.HasPrefix(s, "Wall time: ") {
		if _, after, ok := strings.Cut(s, "Output:\n"); ok {
			return after
		}
	}
	return s
}

// stream writes one output item as the Responses API's server-sent events.
func (f *fakeCodex) stream(w http.ResponseWriter, id, model string, item responsesItem) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	seq := 0
	event := func(data map[string]any) {
		data["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], b)
		if fl != nil {
			fl.Flush()
		}
	}
	response := func(status string, output []responsesItem) map[string]any {
		r := map[string]any{"id": id, "object": "response", "model": model, "status": status, "output": output}
		if status == "completed" {
			r["usage"] = map[string]any{"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
		}
		return r
	}
	event(map[string]any{"type": "response.created", "response": response("in_progress", []responsesItem{})})
	if item.Type == "message" {
		event(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{
			"type": "message", "id": item.ID, "status": "in_progress", "role": "assistant", "content": []any{}}})
		part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		at := func(typ string, kv ...any) map[string]any {
			m := map[string]any{"type": typ, "item_id": item.ID, "output_index": 0, "content_index": 0}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}
		text := item.Content[0].(map[string]any)["text"]
		event(at("response.content_part.added", "part", part))
		event(at("response.output_text.delta", "delta", text))
		event(at("response.output_text.done", "text", text))
		event(at("response.content_part.done", "part", item.Content[0]))
	} else {
		added := item
		added.Status = "in_progress"
		event(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": added})
	}
	event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	event(map[string]any{"type": "response.completed", "response": response("completed", []responsesItem{item})})
}

// seen returns the tool results received, the requests made and the first
// model request.
func (f *fakeCodex) seen() ([]toolResult, []string, *responsesRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]toolResult(nil), f.results...), append([]string(nil), f.requests...), f.first
}
