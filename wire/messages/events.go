package messages

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

var errNotMessage = errors.New("messages: not a message with content")

// event is one Messages stream event as Events writes it: its members in
// the order the API writes them, those an event type lacks left out.
type event struct {
	Type         string          `json:"type"`
	Message      json.RawMessage `json:"message,omitempty"`
	Index        *int            `json:"index,omitempty"`
	ContentBlock json.RawMessage `json:"content_block,omitempty"`
	Delta        json.RawMessage `json:"delta,omitempty"`
	Usage        json.RawMessage `json:"usage,omitempty"`
}

// delta is the delta of a content_block_delta.
type delta struct {
	Type        string          `json:"type"`
	Text        json.RawMessage `json:"text,omitempty"`
	Thinking    json.RawMessage `json:"thinking,omitempty"`
	Signature   json.RawMessage `json:"signature,omitempty"`
	PartialJSON string          `json:"partial_json,omitempty"`
	Citation    json.RawMessage `json:"citation,omitempty"`
}

// Events renders a message, a whole answer, as the events of the stream
// that carries it: message_start (the message without content, stop_reason
// or stop_sequence), each content block started, streamed and stopped,
// message_delta (stop_reason, stop_sequence, container, usage) and
// message_stop. A text block streams its citations and text (it starts
// empty), thinking its text and signature, a tool_use (and a server or MCP
// tool call) its input as input_json_delta (it starts with input {}); other
// blocks (redacted_thinking, tool results) start whole. An SDK that
// accumulates the events gets the message back.
//
// The proxy streams with it an upstream's JSON answer to a streamed
// request (an upstream that ignores stream:true), through the same
// translator as a stream.
func Events(message []byte) ([]byte, error) {
	if !json.Valid(message) || gjson.GetBytes(message, "type").String() != "message" {
		return nil, errNotMessage
	}
	ms, err := jsonspan.Members(message)
	if err != nil {
		return nil, errNotMessage
	}
	raw := func(key string) []byte {
		if s, ok := jsonspan.Value(ms, key); ok && !jsonspan.IsNull(message[s.Start:s.End]) {
			return message[s.Start:s.End]
		}
		return nil
	}
	var blocks []jsonspan.Span
	content := raw("content")
	if content != nil {
		if blocks, err = jsonspan.Elements(content); err != nil {
			return nil, errNotMessage
		}
	}
	start := message
	for _, m := range [][2]string{{"content", "[]"}, {"stop_reason", "null"}, {"stop_sequence", "null"}} {
		if start, err = jsonspan.Set(start, m[0], []byte(m[1])); err != nil {
			return nil, errNotMessage
		}
	}
	var out []byte
	add := func(ev event) { out = wire.AppendEvent(out, ev.Type, wire.Marshal(ev)) }
	add(event{Type: "message_start", Message: start})
	for i, s := range blocks {
		if err := blockEvents(i, content[s.Start:s.End], add); err != nil {
			return nil, err
		}
	}
	d := []byte(`{"stop_reason":null,"stop_sequence":null}`)
	for _, k := range []string{"stop_reason", "stop_sequence", "container"} {
		if v := raw(k); v != nil {
			d, _ = jsonspan.Set(d, k, v)
		}
	}
	usage := raw("usage")
	if usage == nil {
		usage = []byte(`{"output_tokens":0}`) // the SDKs read message_delta's output_tokens
	}
	add(event{Type: "message_delta", Delta: d, Usage: usage})
	add(event{Type: "message_stop"})
	return out, nil
}

// blockEvents writes the events of content block i (see Events).
func blockEvents(i int, b []byte, add func(event)) error {
	ms, err := jsonspan.Members(b)
	if err != nil {
		return errNotMessage
	}
	raw := func(key string) []byte {
		if s, ok := jsonspan.Value(ms, key); ok && !jsonspan.IsNull(b[s.Start:s.End]) {
			return b[s.Start:s.End]
		}
		return nil
	}
	started := b
	set := func(key, value string) {
		if _, ok := jsonspan.Value(ms, key); ok {
			started, _ = jsonspan.Set(started, key, []byte(value))
		}
	}
	var deltas []delta
	typ := gjson.GetBytes(b, "type").String()
	switch {
	case typ == "text":
		if cs := raw("citations"); cs != nil {
			els, err := jsonspan.Elements(cs)
			if err != nil {
				return errNotMessage
			}
			for _, c := range els {
				deltas = append(deltas, delta{Type: "citations_delta", Citation: cs[c.Start:c.End]})
			}
			started, _ = jsonspan.Remove(started, "citations")
		}
		set("text", `""`)
		if t := raw("text"); t != nil && string(t) != `""` {
			deltas = append(deltas, delta{Type: "text_delta", Text: t})
		}
	case typ == "thinking":
		set("thinking", `""`)
		set("signature", `""`)
		if t := raw("thinking"); t != nil && string(t) != `""` {
			deltas = append(deltas, delta{Type: "thinking_delta", Thinking: t})
		}
		if sig := raw("signature"); sig != nil && string(sig) != `""` {
			deltas = append(deltas, delta{Type: "signature_delta", Signature: sig})
		}
	case strings.HasSuffix(typ, "tool_use") && raw("input") != nil:
		// tool_use, server_tool_use, mcp_tool_use: the input streams as JSON text.
		set("input", "{}")
		deltas = append(deltas, delta{Type: "input_json_delta", PartialJSON: string(raw("input"))})
	}
	add(event{Type: "content_block_start", Index: &i, ContentBlock: started})
	for _, d := range deltas {
		add(event{Type: "content_block_delta", Index: &i, Delta: wire.Marshal(d)})
	}
	add(event{Type: "content_block_stop", Index: &i})
	return nil
}
