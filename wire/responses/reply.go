package responses

import (
	"github.com/skillrouter/skillrouter/wire"
)

// EncodeReply renders a model's answer as a response object, or with
// stream as its events (see Events: response.created, response.in_progress,
// each output item, message with its output_text part or function call
// with its arguments, added, delta'd and done, and response.completed).
func EncodeReply(r wire.Reply, stream bool) []byte {
	var items []map[string]any
	if r.Text != "" {
		items = append(items, map[string]any{"type": "message", "id": r.ID + "_msg", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}}})
	}
	for i, c := range r.Calls {
		items = append(items, map[string]any{"type": "function_call", "id": r.ID + "_fc" + string(rune('0'+i)), "call_id": c.ID,
			"name": c.Name, "arguments": string(c.Arguments), "status": "completed"})
	}
	if items == nil {
		items = []map[string]any{}
	}
	usage := map[string]any{"input_tokens": 0, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": 0, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": 0}
	out := wire.Marshal(map[string]any{"id": r.ID, "object": "response", "created_at": 0, "status": "completed", "model": r.Model,
		"output": items, "usage": usage, "error": nil, "incomplete_details": nil})
	if !stream {
		return out
	}
	events, _ := Events(out) // out is a completed response: it renders
	return events
}
