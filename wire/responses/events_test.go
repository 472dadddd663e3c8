package responses

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

// accumulated is what a client builds from a Responses stream.
type accumulated struct {
	types    []string
	snapshot map[string]any // openai-node's ResponseStream snapshot, extended to every delta Events writes
	done     []any          // the items of output_item.done
	final    map[string]any // the response of the final event
}

// accumulate reads a Responses stream as openai-node's ResponseStream
// does, failing where it throws (an event before response.created, an
// event about an output or a content part never added, a text delta on a
// part that is not output_text) and on what a client must never see:
// sequence numbers out of order, an event: name that is not the data's
// type, anything after the final event, no final event.
func accumulate(t *testing.T, stream []byte) accumulated {
	t.Helper()
	var a accumulated
	rd := wire.NewEventReader(strings.NewReader(string(stream)))
	for i := 0; ; i++ {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		if a.final != nil {
			t.Fatalf("an event after the final one: %s", ev.Data)
		}
		var e map[string]any
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("event data is not JSON: %s", ev.Data)
		}
		typ, _ := e["type"].(string)
		if typ != ev.Event || e["sequence_number"] != float64(i) {
			t.Fatalf("event %d: event: %s, type %v, sequence_number %v", i, ev.Event, e["type"], e["sequence_number"])
		}
		a.types = append(a.types, typ)
		if a.snapshot == nil {
			if typ != "response.created" {
				t.Fatalf("When snapshot hasn't been set yet, expected 'response.created' event, got %s", typ)
			}
			a.snapshot = e["response"].(map[string]any)
			continue
		}
		out, _ := a.snapshot["output"].([]any)
		item := func() map[string]any {
			k := int(e["output_index"].(float64))
			if k >= len(out) {
				t.Fatalf("missing output at index %d (%s)", k, typ)
			}
			return out[k].(map[string]any)
		}
		part := func(key, index string) map[string]any {
			list, _ := item()[key].([]any)
			k := int(e[index].(float64))
			if k >= len(list) {
				t.Fatalf("missing %s at index %d (%s)", key, k, typ)
			}
			return list[k].(map[string]any)
		}
		appendTo := func(m map[string]any, key string) {
			s, _ := m[key].(string)
			m[key] = s + e["delta"].(string)
		}
		switch typ {
		case "response.output_item.added":
			if int(e["output_index"].(float64)) != len(out) {
				t.Fatalf("output_item.added at %v after %d items", e["output_index"], len(out))
			}
			a.snapshot["output"] = append(out, e["item"])
		case "response.content_part.added":
			it := item()
			it["content"] = append(it["content"].([]any), e["part"])
		case "response.output_text.delta":
			p := part("content", "content_index")
			if p["type"] != "output_text" {
				t.Fatalf("expected content to be 'output_text', got %v", p["type"])
			}
			appendTo(p, "text")
		case "response.output_text.annotation.added":
			p := part("content", "content_index")
			p["annotations"] = append(p["annotations"].([]any), e["annotation"])
		case "response.refusal.delta":
			appendTo(part("content", "content_index"), "refusal")
		case "response.function_call_arguments.delta":
			appendTo(item(), "arguments")
		case "response.custom_tool_call_input.delta":
			appendTo(item(), "input")
		case "response.reasoning_summary_part.added":
			it := item()
			it["summary"] = append(it["summary"].([]any), e["part"])
		case "response.reasoning_summary_text.delta":
			appendTo(part("summary", "summary_index"), "text")
		case "response.reasoning_text.delta":
			it := item()
			it["content"] = append(it["content"].([]any), map[string]any{"type": "reasoning_text", "text": e["delta"]})
		case "response.output_item.done":
			a.done = append(a.done, e["item"])
		case "response.completed", "response.incomplete", "response.failed":
			a.final = e["response"].(map[string]any)
		}
	}
	if a.final == nil {
		t.Fatalf("no final event:\n%s", stream)
	}
	return a
}

// withoutStatus drops the status of each output item: the snapshot keeps
// the one output_item.added gave (in progress), as with the real API.
func withoutStatus(items []any) []any {
	var out []any
	for _, it := range items {
		m := map[string]any{}
		for k, v := range it.(map[string]any) {
			if k != "status" {
				m[k] = v
			}
		}
		out = append(out, m)
	}
	return out
}

func decode(t *testing.T, b string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(b), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A JSON answer to a streamed request (an upstream that ignores
// stream:true) is streamed to the client as the events of its API: what
// the client accumulates from the deltas, the items of output_item.done
// and the final response are the response as it came.
func TestEventsRebuildTheResponse(t *testing.T) {
	const head = `{"id":"resp_1","object":"response","created_at":1700000000,"model":"gpt-x","instructions":"Be brief.","tools":[]`
	usage := `,"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":12}`
	tests := []struct {
		name, response, final string
	}{
		{"text", head + `,"status":"completed","completed_at":1700000001,"error":null,"incomplete_details":null,"output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello there.","annotations":[],"logprobs":[]}]}]` + usage + `}`, "response.completed"},
		{"reasoning and calls", head + `,"status":"completed","output":[` +
			`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Weather first."},{"type":"summary_text","text":"Then the skill."}],"encrypted_content":"gAAA"},` +
			`{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_a","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},` +
			`{"id":"ctc_1","type":"custom_tool_call","status":"completed","call_id":"call_b","name":"apply_patch","input":"*** Begin Patch"},` +
			`{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"oslo weather"}}]` + usage + `}`, "response.completed"},
		{"open model reasoning text", head + `,"status":"completed","output":[{"id":"rs_1","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"Think."}]},{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}]}`, "response.completed"},
		{"refusal and annotations", head + `,"status":"completed","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I can't."},{"type":"output_text","text":"See docs.","annotations":[{"type":"url_citation","url":"https://example.com","title":"Docs","start_index":4,"end_index":8}]}]}]}`, "response.completed"},
		{"incomplete", head + `,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"id":"msg_1","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"Cut"}]}]` + usage + `}`, "response.incomplete"},
		{"failed", head + `,"status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`, "response.failed"},
		{"no status", `{"id":"r","object":"response","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}]}`, "response.completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream, err := Events([]byte(tt.response))
			if err != nil {
				t.Fatal(err)
			}
			a := accumulate(t, stream)
			want := decode(t, tt.response)
			if a.types[1] != "response.in_progress" || a.types[len(a.types)-1] != tt.final {
				t.Errorf("events %v, want response.created, response.in_progress, ..., %s", a.types, tt.final)
			}
			if a.snapshot["status"] != "in_progress" || a.snapshot["usage"] != nil {
				t.Errorf("response.created announces status %v, usage %v", a.snapshot["status"], a.snapshot["usage"])
			}
			if !reflect.DeepEqual(a.final, want) {
				t.Errorf("final response\n%s\nwant\n%s", wire.Marshal(a.final), tt.response)
			}
			wantItems, _ := want["output"].([]any)
			if (len(a.done) > 0 || len(wantItems) > 0) && !reflect.DeepEqual(a.done, wantItems) {
				t.Errorf("output_item.done items\n%s\nwant\n%s", wire.Marshal(a.done), wire.Marshal(wantItems))
			}
			got, _ := a.snapshot["output"].([]any)
			if !reflect.DeepEqual(withoutStatus(got), withoutStatus(wantItems)) {
				t.Errorf("the deltas built\n%s\nwant\n%s\nfrom\n%s", wire.Marshal(got), wire.Marshal(wantItems), stream)
			}
		})
	}
}

func TestEventsNotAResponse(t *testing.T) {
	for _, b := range []string{``, `not json`, `[]`, `{"error":{"message":"overloaded"}}`, `{"id":"r","output":{}}`,
		`{"id":"r","status":"in_progress","output":[]}`, `{"id":"r","status":"queued","output":[]}`, `{"id":"r","status":1,"output":[]}`,
		`{"output":[1]}`, `{"output":[{"type":"message","content":[1]}]}`, `{"output":[{"type":"reasoning","summary":[{"text":1}]}]}`} {
		if out, err := Events([]byte(b)); err == nil {
			t.Errorf("%s: rendered as\n%s", b, out)
		}
	}
}

// The events go through the stream translator as the upstream's stream
// would: a JSON answer that calls load_skill loops, hidden from the
// client, and the next round's JSON answer ends the client's response.
func TestEventsThroughTheToolLoop(t *testing.T) {
	r, _ := Parse([]byte(`{"input":"make a pdf","stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	round1, err := Events([]byte(`{"id":"resp_1","object":"response","status":"completed","output":[` +
		`{"id":"msg_0","type":"message","role":"assistant","content":[{"type":"output_text","text":"Loading. "}]},` +
		`{"id":"fc_1","type":"function_call","call_id":"call_1","name":"load_skill","arguments":"{\"skill_id\":\"pdf\"}"}],` +
		`"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}`))
	if err != nil {
		t.Fatal(err)
	}
	out1, end1 := runRound(s, false, round1)
	if end1.Loop == nil || len(end1.Loop.Calls) != 1 || end1.Loop.Calls[0].ID != "call_1" || string(end1.Loop.Calls[0].Arguments) != `{"skill_id":"pdf"}` || end1.Loop.ID != "resp_1" {
		t.Fatalf("round 1 does not loop on its load_skill call: %+v", end1)
	}
	round2, err := Events([]byte(`{"id":"resp_2","object":"response","status":"completed","output":[` +
		`{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}],` +
		`"usage":{"input_tokens":9,"output_tokens":2,"total_tokens":11}}`))
	if err != nil {
		t.Fatal(err)
	}
	out2, end2 := runRound(s, false, round2)
	if end2.Loop != nil || end2.Incomplete || end2.ID != "resp_2" {
		t.Fatalf("round 2: %+v", end2)
	}
	client := out1 + out2
	if strings.Contains(client, "load_skill") {
		t.Errorf("the proxy's call reached the client:\n%s", client)
	}
	a := accumulate(t, []byte(client))
	// The last round's id: the one a client continues the stored conversation from.
	if a.final["id"] != "resp_2" || len(a.final["output"].([]any)) != 2 || len(a.snapshot["output"].([]any)) != 2 {
		t.Errorf("the client read %s", wire.Marshal(a.final))
	}
	// The last round's (wire.Usage): the size of the context it read.
	if u := a.final["usage"].(map[string]any); u["input_tokens"] != 9.0 || u["output_tokens"] != 2.0 {
		t.Errorf("usage %v, want the last round's", u)
	}
}
