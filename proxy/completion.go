package proxy

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// toolCall is one complete tool call of an assistant message.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// assistantMessage is the assistant turn handed to Session.FollowUp: its text
// and only the calls the proxy answers.
type assistantMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []toolCall      `json:"tool_calls"`
}

func newAssistantMessage(content json.RawMessage, calls []toolCall) json.RawMessage {
	if len(bytes.TrimSpace(content)) == 0 {
		content = json.RawMessage("null")
	}
	for i := range calls {
		if calls[i].Type == "" {
			calls[i].Type = "function"
		}
		if calls[i].Function.Arguments == "" {
			calls[i].Function.Arguments = "{}"
		}
	}
	return marshalJSON(assistantMessage{Role: "assistant", Content: content, ToolCalls: calls})
}

// usageSum adds up `usage` objects across tool rounds, field by field
// (nested details such as prompt_tokens_details.cached_tokens included).
// Non-numeric fields keep their first value.
type usageSum struct {
	v map[string]any
}

func (u *usageSum) add(raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return
	}
	if u.v == nil {
		u.v = m
		return
	}
	mergeUsage(u.v, m)
}

func (u *usageSum) empty() bool { return u.v == nil }

func (u *usageSum) json() json.RawMessage {
	b, _ := json.Marshal(u.v)
	return b
}

func mergeUsage(dst, src map[string]any) {
	for k, sv := range src {
		dv, ok := dst[k]
		if !ok || dv == nil {
			dst[k] = sv
			continue
		}
		switch s := sv.(type) {
		case json.Number:
			if d, ok := dv.(json.Number); ok {
				dst[k] = addNumbers(d, s)
			}
		case map[string]any:
			if d, ok := dv.(map[string]any); ok {
				mergeUsage(d, s)
			}
		}
	}
}

func addNumbers(a, b json.Number) json.Number {
	if x, err := a.Int64(); err == nil {
		if y, err := b.Int64(); err == nil {
			return json.Number(strconv.FormatInt(x+y, 10))
		}
	}
	x, _ := a.Float64()
	y, _ := b.Float64()
	return json.Number(strconv.FormatFloat(x+y, 'g', -1, 64))
}

// completion is what the tool loop reads of a non-streaming answer.
type completion struct {
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			ToolCalls []toolCall      `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// patchCompletion rewrites a final non-streaming answer: summed usage (when
// usage is non-nil) and, when strip is set, the proxy's own tool calls
// removed from choice 0 (finish_reason becomes "stop" if no call is left).
// Unknown fields are kept.
func patchCompletion(raw []byte, usage json.RawMessage, strip func(name string) bool) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	if usage != nil {
		top["usage"] = usage
	}
	if strip != nil {
		var choices []map[string]json.RawMessage
		if err := json.Unmarshal(top["choices"], &choices); err != nil {
			return nil, err
		}
		if len(choices) > 0 {
			var msg map[string]json.RawMessage
			if err := json.Unmarshal(choices[0]["message"], &msg); err != nil {
				return nil, err
			}
			var calls []json.RawMessage
			_ = json.Unmarshal(msg["tool_calls"], &calls)
			kept := calls[:0]
			for _, c := range calls {
				var tc toolCall
				if json.Unmarshal(c, &tc) == nil && strip(tc.Function.Name) {
					continue
				}
				kept = append(kept, c)
			}
			if len(kept) == 0 {
				delete(msg, "tool_calls")
				choices[0]["finish_reason"] = json.RawMessage(`"stop"`)
			} else {
				msg["tool_calls"] = marshalJSON(kept)
			}
			choices[0]["message"] = marshalJSON(msg)
			top["choices"] = marshalJSON(choices)
		}
	}
	return marshalJSON(top), nil
}
