package docs

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// fakeAnswer is what the fake model says to every chat request.
const fakeAnswer = "This is the docs test's stand-in model answering."

// fakeUpstream is a small OpenAI-compatible model server, written from the
// public API reference: GET /v1/models, and POST /v1/chat/completions
// answered as one chat.completion object or, with "stream": true, as
// chat.completion.chunk server-sent events ending in "data: [DONE]" (with
// a usage chunk when stream_options.include_usage is set). Errors use the
// OpenAI envelope.
func fakeUpstream() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "llama3.2", "object": "model", "created": 0, "owned_by": "docs-test"},
		}})
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model         string            `json:"model"`
			Messages      []json.RawMessage `json:"messages"`
			Stream        bool              `json:"stream"`
			StreamOptions *struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Messages) == 0 {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "want a JSON body with model and messages",
				"type": "invalid_request_error", "param": nil, "code": nil}})
			return
		}
		usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 9, "total_tokens": 19}
		if !req.Stream {
			writeJSON(w, 200, map[string]any{
				"id": "chatcmpl-docs", "object": "chat.completion", "created": 0, "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
					"message": map[string]any{"role": "assistant", "content": fakeAnswer}}},
				"usage": usage,
			})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		chunk := func(choices []any, extra map[string]any) {
			c := map[string]any{"id": "chatcmpl-docs", "object": "chat.completion.chunk", "created": 0, "model": req.Model, "choices": choices}
			for k, v := range extra {
				c[k] = v
			}
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		delta := func(d map[string]any, finish any) []any {
			return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
		}
		chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
		for _, part := range []string{"This is the docs test's ", "stand-in model answering."} {
			chunk(delta(map[string]any{"content": part}, nil), nil)
		}
		chunk(delta(map[string]any{}, "stop"), nil)
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			chunk([]any{}, map[string]any{"usage": usage})
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, map[string]any{"error": map[string]any{"message": "Unknown request URL: " + r.Method + " " + r.URL.Path,
			"type": "invalid_request_error", "param": nil, "code": "unknown_url"}})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
