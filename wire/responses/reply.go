package responses

import (
	"bytes"

	"github.com/skillrouter/skillrouter/wire"
)

// EncodeReply renders a model's answer as a response object, or with
// stream as its events: response.created, response.in_progress, each
// output item (message with its output_text part and deltas, function calls
// with their arguments) added, delta'd and done, and response.completed.
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
	usage := map[string]any{"input_tokens": 0, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": 0, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": 0}
	resp := func(status string, output []map[string]any, u any) map[string]any {
		if output == nil {
			output = []map[string]any{}
		}
		return map[string]any{"id": r.ID, "object": "response", "created_at": 0, "status": status, "model": r.Model,
			"output": output, "usage": u, "error": nil, "incomplete_details": nil}
	}
	if !stream {
		return wire.Marshal(resp("completed", items, usage))
	}
	var b bytes.Buffer
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		b.Write(wire.AppendEvent(nil, typ, wire.Marshal(fields)))
	}
	event("response.created", map[string]any{"response": resp("in_progress", nil, nil)})
	event("response.in_progress", map[string]any{"response": resp("in_progress", nil, nil)})
	for i, it := range items {
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		if it["type"] == "message" {
			added["content"] = []any{}
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			event("response.content_part.added", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "part": part})
			event("response.output_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "delta": r.Text})
			event("response.output_text.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "text": r.Text})
			part["text"] = r.Text
			event("response.content_part.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "part": part})
		} else {
			added["arguments"] = ""
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			event("response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": it["arguments"]})
			event("response.function_call_arguments.done", map[string]any{"item_id": it["id"], "output_index": i, "arguments": it["arguments"]})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	event("response.completed", map[string]any{"response": resp("completed", items, usage)})
	return b.Bytes()
}
