// Package fakeai is a protocol-faithful fake of the model APIs the proxy
// forwards to, for tests: it records every request it receives and answers
// from one script queue, in the shape of the API the request was sent to —
// OpenAI Chat Completions (/v1/chat/completions), OpenAI Responses
// (/v1/responses, see responses.go) and Anthropic Messages (/v1/messages and
// /v1/messages/count_tokens, see messages.go). Each API validates requests as
// its real server does and answers a malformed one with a 400 in its own
// error envelope: that is what catches a proxy that rewrites a body wrongly.
//
// Chat answers follow the Chat Completions wire format: a chat.completion
// object, or with "stream": true a text/event-stream of chat.completion.chunk
// events — a role chunk, content chunks, tool-call deltas split across
// chunks (index, id, type and function.name in the first, function.arguments
// in several fragments), a finish_reason chunk, a usage chunk with empty
// choices when stream_options.include_usage is set (other chunks then carry
// "usage": null), and data: [DONE].
package fakeai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// Request is one request the fake received.
type Request struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
}

// JSON decodes the body (nil if it is not a JSON object).
func (r Request) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Messages returns the chat messages of the body.
func (r Request) Messages() []map[string]any {
	var b struct {
		Messages []map[string]any `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Messages
}

// ToolNames returns the names of the body's tools, in order, in any of the
// three formats: function.name (chat), name (Responses' flat function tools,
// Anthropic tools), else the tool's type (built-in tools such as web_search).
func (r Request) ToolNames() []string {
	var b struct {
		Tools []struct {
			Type     string `json:"type"`
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(r.Body, &b)
	var out []string
	for _, t := range b.Tools {
		name := t.Function.Name
		if name == "" {
			name = t.Name
		}
		if name == "" && t.Type != "function" {
			name = t.Type
		}
		out = append(out, name)
	}
	return out
}

// Call is a tool call in a scripted answer.
type Call struct {
	ID        string
	Name      string
	Arguments string // JSON text; a custom tool's free-form input
	// Custom: a call of a custom (free-form) tool, Responses only
	// ("custom_tool_call", answered with a custom_tool_call_output).
	Custom bool
	// Namespace: a call of a function inside a namespace tool, Responses
	// only (the item's "namespace"; Codex CLI groups an MCP server's
	// tools in one).
	Namespace string
}

// Usage is the usage block of an answer. Chat writes it as it is; Responses
// and Messages map prompt tokens to input_tokens and completion tokens to
// output_tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`

	// Prompt caching, not part of the chat block: Responses'
	// input_tokens_details.cached_tokens and Anthropic's
	// cache_read_input_tokens / cache_creation_input_tokens.
	CachedTokens        int `json:"-"`
	CacheCreationTokens int `json:"-"`
}

// Thinking scripts the model's reasoning before its answer: an Anthropic
// thinking block (text streamed as thinking_delta, then a signature_delta)
// and/or redacted_thinking block, or a Responses reasoning item (Text as its
// summary, Signature as encrypted_content when the request includes
// "reasoning.encrypted_content"). An empty Signature gets one derived from
// Text, which the Messages fake checks when the block comes back: a proxy
// that alters a thinking block is caught as the real API would catch it.
type Thinking struct {
	Text         string
	Signature    string
	RedactedData string // Anthropic only: adds a redacted_thinking block with this data
}

// Failure makes a streamed turn fail mid-stream, as the API does: after
// After events, an Anthropic "error" event, or for Responses a
// "response.failed" event (Event "error": an "error" event instead); the
// stream then ends. A non-streamed request gets Status (default 500) with
// Message in the API's error envelope.
type Failure struct {
	After   int
	Event   string // Responses: "response.failed" (default) or "error"
	Status  int
	Type    string // error type; default server_error (OpenAI), api_error (Anthropic)
	Message string
}

// Turn scripts one assistant answer.
type Turn struct {
	Content      string
	ToolCalls    []Call
	FinishReason string // chat: default "tool_calls" with calls, else "stop"; Messages: stop_reason, default "tool_use" with calls, else "end_turn"
	Usage        *Usage // default: derived from the sizes of request and answer
	Model        string // default: the request's model
	Thinking     *Thinking
	Fail         *Failure // Responses and Messages only
	// IgnoreStream answers with the whole JSON object even when the request
	// asks for a stream, as some OpenAI-compatible servers do (with tools,
	// say): an upstream that ignores "stream": true.
	IgnoreStream bool
	// Truncated: the answer stops at the output-token limit, said as each
	// API says it: Chat finish_reason "length" (unless FinishReason is
	// set); Responses status "incomplete" with incomplete_details.reason
	// "max_output_tokens", the last output item "incomplete" too, and
	// streamed, response.incomplete instead of response.completed;
	// Messages stop_reason "max_tokens" (unless FinishReason is set). The
	// last call's Arguments are then what the model had written when it
	// was cut, usually not valid JSON: streams send it as it is, in
	// fragments; Chat and Responses answers carry it as their arguments
	// string; a Messages answer, whose tool_use input is always an
	// object, carries {} for input that does not parse.
	Truncated bool

	// Streaming shape.
	ContentChunks int             // pieces the content is split into (default: one per word)
	ArgChunks     int             // fragments each call's arguments are split into (default 3)
	Hold          <-chan struct{} // if set, wait on it after HoldAfter events
	HoldAfter     int
	Interval      time.Duration // pause between events

	// Stream faults (see faults.go).
	//
	// Inject is written into the stream as it is, before event InjectAfter
	// (0: first): a malformed event ("data: [1,2,\n\n"), lines that are not
	// SSE, anything.
	Inject      string
	InjectAfter int
	// EndAtInject ends the response cleanly right after Inject, as an
	// upstream ends its stream after its own error event.
	EndAtInject bool
	// CutAfter > 0 closes the connection after that many events, with no
	// end of stream: an upstream that dies mid-answer.
	CutAfter int
}

// Responder answers one request.
type Responder func(w http.ResponseWriter, r *http.Request, rec Request)

// Server is the fake. Chat completions, Responses and Messages requests are
// answered from one script queue, in order of arrival (then with a default
// "ok" turn in the API's shape); Handle overrides any path.
type Server struct {
	*httptest.Server

	mu          sync.Mutex
	reqs        []Request
	deletes     []Request // DELETEs of stored objects (Deletes), apart from reqs
	noRecord    bool
	script      []Responder
	handlers    map[string]Responder
	answers     int
	stored      map[string]storedResponse // Responses kept for previous_response_id
	storedOrder []string                  // their ids, oldest first
	convs       map[string]*conversation  // Conversations API
}

// New starts a fake on a loopback port. Close it when done.
func New() *Server {
	f := &Server{handlers: map[string]Responder{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// BaseURL is the API base including /v1, as a proxy's upstream and the
// OpenAI SDKs' baseURL. Anthropic clients take the bare f.URL (the
// Anthropic SDK and Claude Code add /v1/messages themselves).
func (f *Server) BaseURL() string { return f.URL + "/v1" }

// Script queues responders for the next model requests: chat completions,
// Responses and Messages (not count_tokens), whichever comes next.
func (f *Server) Script(rs ...Responder) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = append(f.script, rs...)
}

// Handle answers every request for path (e.g. /v1/models) with r.
func (f *Server) Handle(path string, r Responder) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[path] = r
}

// Requests returns a copy of the requests received so far, but the
// deletions of stored responses (Deletes): the proxy sends those in the
// background once a request is over, so counting them would race.
func (f *Server) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

// Deletes returns a copy of the DELETE /v1/responses/{id},
// /v1/chat/completions/{id} and /v1/conversations/{id}/items/{item_id}
// requests received so far.
func (f *Server) Deletes() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.deletes...)
}

// StopRecording stops keeping requests (Requests returns none from then
// on): benchmarks send thousands, and keeping them all adds GC work to
// both sides of what they compare.
func (f *Server) StopRecording() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noRecord, f.reqs, f.deletes = true, nil, nil
}

// Reset forgets recorded requests and the remaining script.
func (f *Server) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs, f.deletes, f.script, f.stored, f.storedOrder, f.convs = nil, nil, nil, nil, nil, nil
}

// modelPaths are the endpoints answered from the script queue.
var modelPaths = map[string]bool{"/v1/chat/completions": true, pathResponses: true, pathMessages: true}

const (
	pathResponses   = "/v1/responses"
	pathMessages    = "/v1/messages"
	pathCountTokens = "/v1/messages/count_tokens"
	pathInputTokens = "/v1/responses/input_tokens"
)

// answerKey carries the server and the answer's number to responders, which
// are plain functions: the Responses fake stores answers for
// previous_response_id and numbers ids with it.
type answerKey struct{}

type answerInfo struct {
	f *Server
	n int
}

func answerOf(r *http.Request) answerInfo {
	a, _ := r.Context().Value(answerKey{}).(answerInfo)
	return a
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	f.mu.Lock()
	switch {
	case f.noRecord:
	case r.Method == http.MethodDelete && (strings.HasPrefix(r.URL.Path, pathResponses+"/") || strings.HasPrefix(r.URL.Path, pathChat+"/") ||
		strings.HasPrefix(r.URL.Path, pathConversations+"/")):
		f.deletes = append(f.deletes, rec)
	default:
		f.reqs = append(f.reqs, rec)
	}
	h := f.handlers[r.URL.Path]
	if h == nil && modelPaths[r.URL.Path] && len(f.script) > 0 {
		h = f.script[0]
		f.script = f.script[1:]
	}
	f.answers++
	n := f.answers
	f.mu.Unlock()
	r = r.WithContext(context.WithValue(r.Context(), answerKey{}, answerInfo{f: f, n: n}))
	if h != nil {
		h(w, r, rec)
		return
	}
	switch r.URL.Path {
	case pathChat, pathResponses, pathMessages, pathCountTokens, pathInputTokens:
		Reply(Turn{Content: "ok"})(w, r, rec)
	case "/v1/models":
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "fake-model", "object": "model", "created": 1700000000, "owned_by": "fakeai"},
		}})
	case "/v1/embeddings":
		writeJSON(w, 200, map[string]any{"object": "list", "model": "fake-embed",
			"data":  []any{map[string]any{"object": "embedding", "index": 0, "embedding": []float64{0.6, 0.8}}},
			"usage": map[string]int{"prompt_tokens": 2, "total_tokens": 2}})
	case "/v1/completions":
		completions(w, rec, n)
	case pathConversations:
		f.createConversation(w, rec, n)
	default:
		if f.readState(w, r) || f.deleteResponse(w, r) || deleteCompletion(w, r) || f.deleteConversationItem(w, r) {
			return
		}
		Status(404, "unknown path "+r.URL.Path)(w, r, rec)
	}
}

// pathChat is Chat Completions.
const pathChat = "/v1/chat/completions"

// deleteCompletion answers DELETE /v1/chat/completions/{id} as the API
// does for a stored completion: {"object":"chat.completion.deleted","id",
// "deleted":true}. The fake keeps no completions, so every id is found.
func deleteCompletion(w http.ResponseWriter, r *http.Request) bool {
	id, ok := strings.CutPrefix(r.URL.Path, pathChat+"/")
	if r.Method != http.MethodDelete || !ok || id == "" || strings.Contains(id, "/") {
		return false
	}
	writeOrdered(w, 200, nil, ordered{"object", "chat.completion.deleted", "id", id, "deleted", true})
	return true
}

// Status answers with an error body and the given status: Anthropic's
// envelope on /v1/messages paths, else OpenAI's.
func Status(code int, message string) Responder {
	return func(w http.ResponseWriter, r *http.Request, rec Request) {
		if isMessagesPath(rec.Path) {
			anthropicError(w, r, code, anthropicErrorType(code), message)
			return
		}
		typ := "invalid_request_error"
		if code >= 500 {
			typ = "server_error"
		}
		writeJSON(w, code, map[string]any{"error": map[string]any{
			"message": message, "type": typ, "param": nil, "code": fmt.Sprintf("fake_%d", code)}})
	}
}

// Hang never answers: it returns when the request's context ends (client gone).
func Hang() Responder {
	return func(w http.ResponseWriter, r *http.Request, rec Request) { <-r.Context().Done() }
}

// Delay waits d (or until the client is gone) before answering with next.
func Delay(d time.Duration, next Responder) Responder {
	return func(w http.ResponseWriter, r *http.Request, rec Request) {
		wait(w, r, rec, d, next)
	}
}

// DelayHeader names a request header that sets DelayFromHeader's wait in
// microseconds. Benchmarks set it per request so that a request sent
// directly and its twin sent through the proxy wait exactly as long, and
// their difference is the proxy's alone.
const DelayHeader = "X-Fakeai-Delay-Us"

// DelayFromHeader waits as long as the request's DelayHeader says (no wait
// without one) before answering with next.
func DelayFromHeader(next Responder) Responder {
	return func(w http.ResponseWriter, r *http.Request, rec Request) {
		us, _ := strconv.Atoi(r.Header.Get(DelayHeader))
		wait(w, r, rec, time.Duration(us)*time.Microsecond, next)
	}
}

func wait(w http.ResponseWriter, r *http.Request, rec Request, d time.Duration, next Responder) {
	if d <= 0 {
		next(w, r, rec)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		next(w, r, rec)
	case <-r.Context().Done():
	}
}

// Raw answers with the given status, content type and body as they are.
func Raw(status int, contentType, body string) Responder {
	return func(w http.ResponseWriter, r *http.Request, rec Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Reply answers with t in the shape of the API the request was sent to
// (by its path: /v1/responses, /v1/responses/input_tokens, /v1/messages,
// /v1/messages/count_tokens, else chat completions): for chat a chat.completion object, or an SSE
// stream when the request has "stream": true; see replyResponses and
// replyMessages for the others.
func Reply(turn Turn) Responder {
	return func(w http.ResponseWriter, r *http.Request, rec Request) {
		switch rec.Path {
		case pathResponses:
			replyResponses(turn, w, r, rec)
			return
		case pathMessages:
			replyMessages(turn, w, r, rec)
			return
		case pathCountTokens:
			countTokens(w, r, rec)
			return
		case pathInputTokens:
			inputTokens(w, r, rec)
			return
		}
		// Defaults are filled in per request: the closure serves many.
		t := turn
		t.ToolCalls = slices.Clone(turn.ToolCalls)
		// gjson reads the three fields without decoding the prompt: the
		// benchmarks run this fake on the proxy's CPUs, where a full decode
		// of every rewritten prompt (~0.2 ms each with encoding/json) would
		// be charged to the proxy. A real upstream parses on its own hardware.
		root := gjson.ParseBytes(rec.Body)
		if !gjson.ValidBytes(rec.Body) || !root.IsObject() {
			Status(400, "fakeai: body is not a JSON object")(w, r, rec)
			return
		}
		// One pass over the top level (GetMany would scan the prompt once
		// per path); the last of duplicate keys wins, as in encoding/json.
		var f [4]gjson.Result // model, stream, stream_options, its include_usage
		root.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "model":
				f[0] = v
			case "stream":
				f[1] = v
			case "stream_options":
				f[2], f[3] = v, v.Get("include_usage")
			}
			return true
		})
		if !isType(f[0], gjson.String) || !isType(f[1], gjson.True, gjson.False) ||
			(f[2].Exists() && f[2].Type != gjson.Null && !f[2].IsObject()) || !isType(f[3], gjson.True, gjson.False) {
			Status(400, "fakeai: model must be a string, stream and stream_options.include_usage booleans")(w, r, rec)
			return
		}
		if t.Model == "" {
			t.Model = f[0].String()
		}
		if t.FinishReason == "" {
			t.FinishReason = "stop"
			switch {
			case t.Truncated:
				t.FinishReason = "length"
			case len(t.ToolCalls) > 0:
				t.FinishReason = "tool_calls"
			}
		}
		if t.Usage == nil {
			p := len(rec.Body)/4 + 1
			c := len(t.Content)/4 + 1
			for _, tc := range t.ToolCalls {
				c += len(tc.Arguments)/4 + 3
			}
			t.Usage = &Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
		}
		limit := root.Get("max_completion_tokens")
		if !limit.Exists() {
			limit = root.Get("max_tokens")
		}
		if u := *t.Usage; capUsage(&t, &u, limit) {
			t.Usage, t.FinishReason = &u, "length"
		}
		for i := range t.ToolCalls {
			if t.ToolCalls[i].ID == "" {
				t.ToolCalls[i].ID = fmt.Sprintf("call_fake_%d", i)
			}
		}
		id := fmt.Sprintf("chatcmpl-fake-%d", time.Now().UnixNano())
		if !f[1].Bool() || t.IgnoreStream {
			writeJSON(w, 200, completion(id, t))
			return
		}
		stream(w, r, id, t, f[3].Bool())
	}
}

// isType reports whether v is absent, null or of one of the types.
func isType(v gjson.Result, types ...gjson.Type) bool {
	return !v.Exists() || v.Type == gjson.Null || slices.Contains(types, v.Type)
}

func completion(id string, t Turn) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if t.Content != "" {
		msg["content"] = t.Content
	}
	if len(t.ToolCalls) > 0 {
		var calls []any
		for _, tc := range t.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": t.Model,
		"system_fingerprint": "fp_fake",
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": t.FinishReason}},
		"usage":              t.Usage,
	}
}

// Events renders t as the data payloads of a chat completion stream
// (without [DONE]); exported for benchmarks that replay streams.
func Events(id string, t Turn, includeUsage bool) [][]byte {
	created := time.Now().Unix()
	var out [][]byte
	chunk := func(delta map[string]any, finish any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": t.Model,
			"system_fingerprint": "fp_fake",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if includeUsage {
			c["usage"] = nil
		}
		b, _ := json.Marshal(c)
		out = append(out, b)
	}
	role := map[string]any{"role": "assistant", "content": "", "refusal": nil}
	if t.Content == "" && len(t.ToolCalls) > 0 {
		role["content"] = nil
	}
	chunk(role, nil)
	for _, piece := range split(t.Content, t.ContentChunks) {
		chunk(map[string]any{"content": piece}, nil)
	}
	for i, tc := range t.ToolCalls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil)
		n := t.ArgChunks
		if n <= 0 {
			n = 3
		}
		for _, frag := range splitN(tc.Arguments, n) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": frag}}}}, nil)
		}
	}
	chunk(map[string]any{}, t.FinishReason)
	if includeUsage {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": t.Model, "system_fingerprint": "fp_fake", "choices": []any{}, "usage": t.Usage})
		out = append(out, b)
	}
	return out
}

func stream(w http.ResponseWriter, r *http.Request, id string, t Turn, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	events := Events(id, t, includeUsage)
	events = append(events, []byte("[DONE]"))
	for i, ev := range events {
		if !t.beforeEvent(w, r, i) {
			return
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", ev); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// split cuts s into n pieces (n <= 0: one piece per word, spaces kept).
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n > 0 {
		return splitN(s, n)
	}
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s[1:], ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// splitN cuts s into at most n nearly equal pieces on rune boundaries.
func splitN(s string, n int) []string {
	rs := []rune(s)
	if len(rs) == 0 {
		return nil
	}
	if n > len(rs) {
		n = len(rs)
	}
	var out []string
	size := (len(rs) + n - 1) / n
	for i := 0; i < len(rs); i += size {
		j := min(i+size, len(rs))
		out = append(out, string(rs[i:j]))
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// completions answers the legacy /v1/completions, streamed when asked.
func completions(w http.ResponseWriter, rec Request, n int) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(rec.Body, &req)
	id := fmt.Sprintf("cmpl-fake-%d", n)
	if !req.Stream {
		writeJSON(w, 200, map[string]any{"id": id, "object": "text_completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "text": "hello world", "finish_reason": "stop"}}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, piece := range []string{"hello", " world"} {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "text_completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "text": piece, "finish_reason": nil}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		_ = http.NewResponseController(w).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
