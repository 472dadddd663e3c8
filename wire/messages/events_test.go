package messages

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

// accumulate reads a Messages stream as @anthropic-ai/sdk's MessageStream
// does: message_start's message, each content_block_start pushed, text,
// thinking and citations deltas added to the block at the event's index,
// input_json_delta parsed whole into input (for any *_tool_use block, as
// the newer SDKs do), message_delta's stop_reason, stop_sequence and
// non-null usage. It fails where the SDK throws (an event before
// message_start, a second one) and on what a client must never see: a
// block event for a block never started, a block started out of order, an
// event: name that is not the data's type, anything after message_stop,
// no message_stop.
func accumulate(t *testing.T, stream []byte) map[string]any {
	t.Helper()
	var snap map[string]any
	var partial map[int]string // input_json_delta text by block
	stopped := false
	rd := wire.NewEventReader(strings.NewReader(string(stream)))
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		if stopped {
			t.Fatalf("an event after message_stop: %s", ev.Data)
		}
		var e map[string]any
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("event data is not JSON: %s", ev.Data)
		}
		typ, _ := e["type"].(string)
		if typ != ev.Event {
			t.Fatalf("event: %s carries type %v", ev.Event, e["type"])
		}
		if typ == "message_start" {
			if snap != nil {
				t.Fatal(`Unexpected event order, got message_start before receiving "message_stop"`)
			}
			snap, partial = e["message"].(map[string]any), map[int]string{}
			continue
		}
		if snap == nil {
			t.Fatalf(`Unexpected event order, got %s before "message_start"`, typ)
		}
		content, _ := snap["content"].([]any)
		block := func() map[string]any {
			i := int(e["index"].(float64))
			if i >= len(content) {
				t.Fatalf("%s for block %d, never started", typ, i)
			}
			return content[i].(map[string]any)
		}
		switch typ {
		case "content_block_start":
			if int(e["index"].(float64)) != len(content) {
				t.Fatalf("content_block_start at %v after %d blocks", e["index"], len(content))
			}
			snap["content"] = append(content, e["content_block"])
		case "content_block_delta":
			b, d := block(), e["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + d["text"].(string)
			case "citations_delta":
				cs, _ := b["citations"].([]any)
				b["citations"] = append(cs, d["citation"])
			case "thinking_delta":
				b["thinking"] = b["thinking"].(string) + d["thinking"].(string)
			case "signature_delta":
				b["signature"] = d["signature"]
			case "input_json_delta":
				i := int(e["index"].(float64))
				partial[i] += d["partial_json"].(string)
				var input any
				if err := json.Unmarshal([]byte(partial[i]), &input); err != nil {
					t.Fatalf("input of block %d is not JSON: %q", i, partial[i])
				}
				b["input"] = input
			default:
				t.Fatalf("unknown delta %v", d["type"])
			}
		case "content_block_stop":
			block()
		case "message_delta":
			d := e["delta"].(map[string]any)
			snap["stop_reason"], snap["stop_sequence"] = d["stop_reason"], d["stop_sequence"]
			if c, ok := d["container"]; ok {
				snap["container"] = c
			}
			u, _ := snap["usage"].(map[string]any)
			if u == nil {
				u = map[string]any{}
				snap["usage"] = u
			}
			for k, v := range e["usage"].(map[string]any) {
				if v != nil {
					u[k] = v
				}
			}
		case "message_stop":
			stopped = true
		case "error":
			t.Fatalf("error event: %s", ev.Data)
		}
	}
	if !stopped {
		t.Fatalf("no message_stop:\n%s", stream)
	}
	return snap
}

// A JSON answer to a streamed request (an upstream that ignores
// stream:true) is streamed to the client as the events of its API: the
// client's SDK rebuilds the very message from them.
func TestEventsRebuildTheMessage(t *testing.T) {
	const head = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x"`
	const usage = `,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":3,"output_tokens":7,"service_tier":"standard"}`
	tests := []struct{ name, message string }{
		{"text", head + `,"content":[{"type":"text","text":"Hello there."}],"stop_reason":"end_turn","stop_sequence":null` + usage + `}`},
		{"thinking and tool calls", head + `,"content":[` +
			`{"type":"thinking","thinking":"Weather, then the skill.","signature":"SIG=="},` +
			`{"type":"redacted_thinking","data":"REDACTED"},` +
			`{"type":"text","text":"Let me check."},` +
			`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo","days":[1,2]}},` +
			`{"type":"tool_use","id":"toolu_2","name":"load_skill","input":{}}],"stop_reason":"tool_use","stop_sequence":null` + usage + `}`},
		{"server tools and citations", head + `,"content":[` +
			`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"oslo"}},` +
			`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.com","title":"Oslo","encrypted_content":"E","page_age":null}]},` +
			`{"type":"text","text":"Oslo is cold.","citations":[{"type":"web_search_result_location","url":"https://example.com","title":"Oslo","encrypted_index":"I","cited_text":"cold"}]}],` +
			`"stop_reason":"end_turn","stop_sequence":null,"container":{"id":"container_1","expires_at":"2030-01-01T00:00:00Z"}` +
			`,"usage":{"input_tokens":12,"output_tokens":7,"server_tool_use":{"web_search_requests":1}}}`},
		{"stop sequence", head + `,"content":[{"type":"text","text":"one two"}],"stop_reason":"stop_sequence","stop_sequence":"three"` + usage + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream, err := Events([]byte(tt.message))
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tt.message), &want); err != nil {
				t.Fatal(err)
			}
			if got := accumulate(t, stream); !reflect.DeepEqual(got, want) {
				t.Errorf("the client rebuilt\n%s\nwant\n%s\nfrom\n%s", wire.Marshal(got), tt.message, stream)
			}
		})
	}
}

func TestEventsNotAMessage(t *testing.T) {
	for _, b := range []string{``, `not json`, `[]`, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"type":"message","content":{}}`, `{"type":"message","content":[1]}`, `{"content":[]}`} {
		if out, err := Events([]byte(b)); err == nil {
			t.Errorf("%s: rendered as\n%s", b, out)
		}
	}
}

// The events go through the stream translator as the upstream's stream
// would: a JSON answer that calls load_skill loops, hidden from the
// client, and the next round's JSON answer ends the client's message.
func TestEventsThroughTheToolLoop(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	round1, err := Events([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` +
		`{"type":"thinking","thinking":"need pdf","signature":"SIG"},` +
		`{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{"skill_id":"pdf"}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":7}}`))
	if err != nil {
		t.Fatal(err)
	}
	out1, end1 := runRound(s, false, round1)
	if end1.Loop == nil || len(end1.Loop.Calls) != 1 || end1.Loop.Calls[0].ID != "toolu_1" || string(end1.Loop.Calls[0].Arguments) != `{"skill_id":"pdf"}` {
		t.Fatalf("round 1 does not loop on its load_skill call: %+v", end1)
	}
	if !strings.Contains(string(end1.Loop.Turn), `{"type":"thinking","thinking":"need pdf","signature":"SIG"}`) {
		t.Errorf("the follow-up must keep the signed thinking block: %s", end1.Loop.Turn)
	}
	round2, err := Events([]byte(`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Done."}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	out2, end2 := runRound(s, false, round2)
	if end2.Loop != nil || end2.Incomplete {
		t.Fatalf("round 2: %+v", end2)
	}
	client := out1 + out2
	if strings.Contains(client, "load_skill") {
		t.Errorf("the proxy's call reached the client:\n%s", client)
	}
	m := accumulate(t, []byte(client))
	if m["id"] != "msg_1" || m["stop_reason"] != "end_turn" || len(m["content"].([]any)) != 2 {
		t.Errorf("the client read %s", wire.Marshal(m))
	}
	// The last round's (wire.Usage), each round in iterations.
	u := m["usage"].(map[string]any)
	if u["input_tokens"] != 30.0 || u["output_tokens"] != 4.0 {
		t.Errorf("usage %v, want the last round's", u)
	}
	if it, _ := u["iterations"].([]any); len(it) != 2 || it[0].(map[string]any)["input_tokens"] != 10.0 || it[0].(map[string]any)["type"] != "message" ||
		it[1].(map[string]any)["output_tokens"] != 4.0 {
		t.Errorf("usage.iterations %v, want both rounds", u["iterations"])
	}
}

// A hidden round's streamed blocks go back in the follow-up as the API
// returned them: a compaction block with the content and encrypted_content
// its compaction_delta carries (the start is a shell with null content;
// sent back so, the round loses the summary the API replaced the
// conversation with), and a text block with the citations its
// citations_deltas carried.
func TestStreamedBlocksRebuiltForTheFollowUp(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	cite := `{"type":"web_search_result_location","url":"https://example.com","title":"Oslo","encrypted_index":"I","cited_text":"cold"}`
	round := ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`) +
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"compaction","content":null}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"compaction_delta","content":"Summary of the talk.","encrypted_content":"OPAQUE=="}}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"","citations":[]}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":`+cite+`}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Oslo is cold."}}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		ev("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{}}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"skill_id\":\"pdf\"}"}}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":2}`) +
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`) +
		ev("message_stop", `{"type":"message_stop"}`)
	_, end := runRound(s, false, []byte(round))
	if end.Loop == nil {
		t.Fatalf("the round does not loop: %+v", end)
	}
	turn := string(end.Loop.Turn)
	for _, want := range []string{
		`{"type":"compaction","content":"Summary of the talk.","encrypted_content":"OPAQUE=="}`,
		`{"type":"text","text":"Oslo is cold.","citations":[` + cite + `]}`,
	} {
		if !strings.Contains(turn, want) {
			t.Errorf("the follow-up's turn lacks\n%s\ngot\n%s", want, turn)
		}
	}
}
