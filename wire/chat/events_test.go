package chat

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

// accumulate rebuilds a chat.completion from its chunks as openai-node's
// ChatCompletionStream does: top-level members and each choice's other
// members assigned, content, refusal and tool-call arguments concatenated,
// a delta's other members assigned to the message, tool calls by index.
// It fails where the SDK's finalChatCompletion throws: a choice without a
// role or a finish_reason, a tool call without id, type or name; and on
// anything after data: [DONE] or no [DONE] at all.
func accumulate(t *testing.T, stream []byte) map[string]any {
	t.Helper()
	snap := map[string]any{}
	var choices []map[string]any
	done := false
	rd := wire.NewEventReader(strings.NewReader(string(stream)))
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		if done {
			t.Fatalf("an event after [DONE]: %q", ev.Raw)
		}
		if isDone(ev.Data) {
			done = true
			continue
		}
		var ch map[string]any
		if err := json.Unmarshal(ev.Data, &ch); err != nil {
			t.Fatalf("chunk is not JSON: %s", ev.Data)
		}
		if ch["object"] != "chat.completion.chunk" {
			t.Fatalf("chunk object %v", ch["object"])
		}
		for k, v := range ch {
			if k != "choices" {
				snap[k] = v
			}
		}
		for _, c := range ch["choices"].([]any) {
			c := c.(map[string]any)
			i := int(c["index"].(float64))
			for len(choices) <= i {
				choices = append(choices, map[string]any{"index": float64(len(choices)), "message": map[string]any{}})
			}
			choice := choices[i]
			if r, _ := c["finish_reason"].(string); r != "" {
				choice["finish_reason"] = r
			}
			if lp := c["logprobs"]; lp != nil {
				choice["logprobs"] = lp
			}
			for k, v := range c {
				if k != "delta" && k != "finish_reason" && k != "index" && k != "logprobs" {
					choice[k] = v
				}
			}
			msg := choice["message"].(map[string]any)
			for k, v := range c["delta"].(map[string]any) {
				switch k {
				case "content", "refusal":
					if s, _ := v.(string); s != "" {
						prev, _ := msg[k].(string)
						msg[k] = prev + s
					}
				case "role":
					if v != nil {
						msg[k] = v
					}
				case "tool_calls":
					calls, _ := msg["tool_calls"].([]any)
					for _, d := range v.([]any) {
						d := d.(map[string]any)
						j := int(d["index"].(float64))
						for len(calls) <= j {
							calls = append(calls, map[string]any{})
						}
						tc := calls[j].(map[string]any)
						for k, v := range d {
							switch k {
							case "index":
							case "function":
								fn, _ := tc["function"].(map[string]any)
								if fn == nil {
									fn = map[string]any{"arguments": ""}
									tc["function"] = fn
								}
								f := v.(map[string]any)
								if n, _ := f["name"].(string); n != "" {
									fn["name"] = n
								}
								a, _ := f["arguments"].(string)
								fn["arguments"] = fn["arguments"].(string) + a
							default:
								tc[k] = v
							}
						}
					}
					msg["tool_calls"] = calls
				default:
					msg[k] = v
				}
			}
		}
	}
	if !done {
		t.Fatal("no data: [DONE]")
	}
	var out []any
	for _, c := range choices {
		msg := c["message"].(map[string]any)
		if msg["role"] == nil || c["finish_reason"] == nil {
			t.Fatalf("choice %v lacks a role or a finish_reason", c["index"])
		}
		for _, tc := range asList(msg["tool_calls"]) {
			tc := tc.(map[string]any)
			if tc["id"] == nil || tc["type"] == nil || tc["function"].(map[string]any)["name"] == nil {
				t.Fatalf("tool call without id, type or name: %v", tc)
			}
		}
		out = append(out, c)
	}
	snap["choices"] = out
	snap["object"] = "chat.completion"
	return snap
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// withoutNulls drops null members, at any depth: an SDK's snapshot and the
// JSON answer differ in which absent members they spell null.
func withoutNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e != nil {
				out[k] = withoutNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutNulls(e)
		}
		return out
	}
	return v
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// A JSON answer to a streamed request (an upstream that ignores
// stream:true) is streamed to the client as the chunks of its API: the
// client's SDK rebuilds the very completion from them.
func TestEventsRebuildTheCompletion(t *testing.T) {
	tests := []struct {
		name, completion string
	}{
		{"text", `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-x","system_fingerprint":"fp_1","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0}}}`},
		{"tool calls with reasoning and extra members", `{"id":"c2","object":"chat.completion","created":1,"model":"deepseek","choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"The user wants the weather.","tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},{"id":"call_b","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"},"extra_content":{"google":{"thought_signature":"sig=="}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":8,"total_tokens":28}}`},
		{"refusal", `{"id":"c3","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`},
		{"annotations, logprobs and a vLLM stop_reason", `{"id":"c4","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"See the docs.","annotations":[{"type":"url_citation","url_citation":{"url":"https://example.com","title":"Docs","start_index":0,"end_index":12}}]},"logprobs":{"content":[{"token":"See","logprob":-0.1,"bytes":[83,101,101],"top_logprobs":[]}]},"finish_reason":"stop","stop_reason":null}]}`},
		{"two choices", `{"id":"c5","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"one"},"finish_reason":"stop"},{"index":1,"message":{"role":"assistant","content":"two"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`},
		{"large numbers kept", `{"id":"c6","object":"chat.completion","created":17000000000000000001,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream, err := Events([]byte(tt.completion), true)
			if err != nil {
				t.Fatal(err)
			}
			got := withoutNulls(accumulate(t, stream))
			want := withoutNulls(decode(t, []byte(tt.completion)))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the client rebuilt\n%s\nwant\n%s\nfrom\n%s", wire.Marshal(got), wire.Marshal(want), stream)
			}
			if tt.name == "large numbers kept" && strings.Count(string(stream), `"created":17000000000000000001`) != 3 {
				t.Errorf("created not kept as it came in every chunk:\n%s", stream)
			}
		})
	}
}

func TestEventsUsageAndFinish(t *testing.T) {
	const noFinish = `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	with, err := Events([]byte(noFinish), true)
	if err != nil {
		t.Fatal(err)
	}
	without, err := Events([]byte(noFinish), false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(with), `"choices":[],"usage":{"prompt_tokens":1`) || strings.Contains(string(without), `"usage"`) {
		t.Errorf("the usage chunk goes out with stream_options.include_usage only:\n%s\n%s", with, without)
	}
	// Delivered whole, an answer without a finish_reason is finished.
	if c := accumulate(t, without)["choices"].([]any)[0].(map[string]any); c["finish_reason"] != "stop" {
		t.Errorf("finish_reason %v, want stop", c["finish_reason"])
	}
}

func TestEventsNotACompletion(t *testing.T) {
	for _, b := range []string{``, `not json`, `[]`, `{"error":{"message":"overloaded"}}`, `{"choices":[]}`, `{"choices":{}}`, `{"choices":[1]}`,
		`{"choices":[{"message":{"tool_calls":[1]}}]}`} {
		if out, err := Events([]byte(b), true); err == nil {
			t.Errorf("%s: rendered as\n%s", b, out)
		}
	}
}

// The events go through the stream translator as the upstream's stream
// would: a JSON answer that calls load_skill loops, hidden from the
// client, and the next round's JSON answer ends the client's stream.
func TestEventsThroughTheToolLoop(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	round1, err := Events([]byte(`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Loading. ","tool_calls":[{"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}`), true)
	if err != nil {
		t.Fatal(err)
	}
	out1, end1 := runRound(s, false, round1)
	if end1.Loop == nil || len(end1.Loop.Calls) != 1 || end1.Loop.Calls[0].ID != "call_1" || string(end1.Loop.Calls[0].Arguments) != `{"skill_id":"x"}` {
		t.Fatalf("round 1 does not loop on its load_skill call: %+v", end1)
	}
	if !strings.Contains(string(end1.Loop.Turn), `"content":"Loading. "`) {
		t.Errorf("the follow-up's assistant turn lost the text: %s", end1.Loop.Turn)
	}
	round2, err := Events([]byte(`{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":2,"total_tokens":32}}`), true)
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
	c := accumulate(t, []byte(client))
	msg := c["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != "Loading. Done." || c["id"] != "c1" {
		t.Errorf("the client read %v", c)
	}
	// The last round's (wire.Usage): the size of the context it read.
	if u := c["usage"].(map[string]any); u["prompt_tokens"] != 30.0 || u["completion_tokens"] != 2.0 {
		t.Errorf("usage %v, want the last round's", u)
	}
}
