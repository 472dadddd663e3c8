package messages

import (
	"bytes"
	"encoding/json"

	"github.com/skillrouter/skillrouter/wire"
)

// EncodeReply renders a model's answer as a message, or with stream as its
// events: message_start, each content block started, delta'd (text_delta,
// input_json_delta) and stopped, message_delta with the stop_reason and
// usage, and message_stop.
func EncodeReply(r wire.Reply, stream bool) []byte {
	var blocks []map[string]any
	if r.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": r.Text})
	}
	stop := "end_turn"
	for _, c := range r.Calls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Arguments})
		stop = "tool_use"
	}
	msg := func(content []map[string]any, stop any) map[string]any {
		if content == nil {
			content = []map[string]any{}
		}
		return map[string]any{"id": r.ID, "type": "message", "role": "assistant", "model": r.Model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 0, "output_tokens": 0}}
	}
	if !stream {
		return wire.Marshal(msg(blocks, stop))
	}
	var b bytes.Buffer
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		b.Write(wire.AppendEvent(nil, typ, wire.Marshal(fields)))
	}
	event("message_start", map[string]any{"message": msg(nil, nil)})
	for i, bl := range blocks {
		if bl["type"] == "text" {
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": r.Text}})
		} else {
			start := map[string]any{"type": "tool_use", "id": bl["id"], "name": bl["name"], "input": map[string]any{}}
			event("content_block_start", map[string]any{"index": i, "content_block": start})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(bl["input"].(json.RawMessage))}})
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 0}})
	event("message_stop", map[string]any{})
	return b.Bytes()
}
