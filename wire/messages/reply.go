package messages

import (
	"github.com/skillrouter/skillrouter/wire"
)

// EncodeReply renders a model's answer as a message, or with stream as its
// events (see Events: message_start, each content block started, delta'd
// (text_delta, input_json_delta) and stopped, message_delta with the
// stop_reason and usage, and message_stop).
func EncodeReply(r wire.Reply, stream bool) []byte {
	blocks := []map[string]any{}
	if r.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": r.Text})
	}
	stop := "end_turn"
	for _, c := range r.Calls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Arguments})
		stop = "tool_use"
	}
	out := wire.Marshal(map[string]any{"id": r.ID, "type": "message", "role": "assistant", "model": r.Model, "content": blocks,
		"stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 0, "output_tokens": 0}})
	if !stream {
		return out
	}
	events, _ := Events(out) // out is a message: it renders
	return events
}
