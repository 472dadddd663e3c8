package responses

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

// When the proxy drops its own calls from the client's answer (the round
// limit, an answer stopped short) and nothing else is left but reasoning,
// the response would end with no message at all: valid, but Codex CLI
// shows an empty turn and says nothing of why. The client gets an
// assistant message with wire.NoAnswerText instead, as Chat and Messages
// clients get that text.

// answered reports whether items (output items) hold something other than
// reasoning: a message, a call, a built-in tool's item.
func answered[T ~[]byte](items []T) bool {
	for _, it := range items {
		if t := gjson.GetBytes(it, "type").String(); t != "" && t != "reasoning" {
			return true
		}
	}
	return false
}

// noAnswerItem is the assistant message item that stands for no answer;
// respID names the response it goes into.
func noAnswerItem(respID string, truncated bool, status string) []byte {
	type part struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	content := []part{}
	if status == "completed" {
		content = append(content, part{"output_text", wire.NoAnswerText(truncated), []any{}})
	}
	return wire.Marshal(struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []part `json:"content"`
	}{noAnswerID(respID), "message", status, "assistant", content})
}

// noAnswerID is the id of the no-answer message of response respID.
func noAnswerID(respID string) string {
	return "msg_skillrouter_" + strings.TrimPrefix(respID, "resp_")
}

// emitNoAnswer streams the no-answer message as the events that build a
// message item, at the client's next output index, and adds it to the
// items the final response lists.
func (s *Stream) emitNoAnswer(respID string, truncated bool) {
	idx := s.nextIdx
	s.nextIdx++
	id := noAnswerID(respID)
	text := wire.NoAnswerText(truncated)
	part := func(text string) json.RawMessage {
		return wire.Marshal(map[string]any{"type": "output_text", "text": text, "annotations": []any{}})
	}
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = 0 // emit numbers it
		s.emit(typ, wire.Marshal(fields), idx)
	}
	ev("response.output_item.added", map[string]any{"output_index": idx, "item": json.RawMessage(noAnswerItem(respID, truncated, "in_progress"))})
	ev("response.content_part.added", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": part("")})
	ev("response.output_text.delta", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "delta": text, "logprobs": []any{}})
	ev("response.output_text.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "text": text, "logprobs": []any{}})
	ev("response.content_part.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": part(text)})
	done := noAnswerItem(respID, truncated, "completed")
	ev("response.output_item.done", map[string]any{"output_index": idx, "item": json.RawMessage(done)})
	s.visible = append(s.visible, done)
}
