package chat

import (
	"github.com/skillrouter/skillrouter/wire"
)

// EncodeReply renders a model's answer as a chat.completion, or with stream
// as its chat.completion.chunk events (see Events: role, content, one chunk
// per tool call, the finish, usage when includeUsage, and [DONE]).
func EncodeReply(r wire.Reply, stream, includeUsage bool) []byte {
	finish := "stop"
	var calls []toolCall
	for _, c := range r.Calls {
		var tc toolCall
		tc.ID, tc.Type = c.ID, "function"
		tc.Function.Name, tc.Function.Arguments = c.Name, string(c.Arguments)
		calls = append(calls, tc)
		finish = "tool_calls"
	}
	var content any
	if r.Text != "" {
		content = r.Text
	}
	usage := map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
	msg := map[string]any{"role": "assistant", "content": content}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	out := wire.Marshal(map[string]any{"id": r.ID, "object": "chat.completion", "created": 0, "model": r.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
	if !stream {
		return out
	}
	events, _ := Events(out, includeUsage) // out is a completion with a choice: it renders
	return events
}
