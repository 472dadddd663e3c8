package chat

import (
	"bytes"

	"github.com/skillrouter/skillrouter/wire"
)

// EncodeReply renders a model's answer as a chat.completion, or with stream
// as its chat.completion.chunk events (role, content, one chunk per tool
// call, the finish, usage when includeUsage, and [DONE]).
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
	if !stream {
		msg := map[string]any{"role": "assistant", "content": content}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		return wire.Marshal(map[string]any{"id": r.ID, "object": "chat.completion", "created": 0, "model": r.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
	}
	var b bytes.Buffer
	chunk := func(delta map[string]any, finish any, u any) {
		c := map[string]any{"id": r.ID, "object": "chat.completion.chunk", "created": 0, "model": r.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if u != nil {
			c["choices"] = []any{}
			c["usage"] = u
		}
		b.WriteString("data: ")
		b.Write(wire.Marshal(c))
		b.WriteString("\n\n")
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if r.Text != "" {
		chunk(map[string]any{"content": r.Text}, nil, nil)
	}
	for i, c := range calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Function.Name, "arguments": c.Function.Arguments}}}}, nil, nil)
	}
	chunk(map[string]any{}, finish, nil)
	if includeUsage {
		chunk(nil, nil, usage)
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}
