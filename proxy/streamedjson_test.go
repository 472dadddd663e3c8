package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/wire"
)

// Some OpenAI-compatible servers ignore "stream": true (with tools, say) and
// answer with the whole JSON object. A client that asked for a stream must
// still get a stream of its API carrying the whole answer, in the first
// round and in the hidden rounds of the tool loop, and the loop must still
// run on a JSON answer that calls load_skill.
func TestStreamedRequestAnsweredWithJSON(t *testing.T) {
	anthropic := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	apis := []struct {
		name, path, body string
		hdr              map[string]string
		api              wire.API
		stop             string // how the API says the answer ended normally
	}{
		{"chat", "/v1/chat/completions", streamChat(`,"stream_options":{"include_usage":true}`), nil, wire.APIChat, "stop"},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`, nil, wire.APIResponses, "completed"},
		{"messages", "/v1/messages", msgStream, anthropic, wire.APIMessages, "end_turn"},
	}
	load := []fakeai.Call{{ID: "call_ls", Name: "load_skill", Arguments: `{"skill_id":"demo/xlsx"}`}}
	u1 := &fakeai.Usage{PromptTokens: 100, CompletionTokens: 7, TotalTokens: 107}
	u2 := &fakeai.Usage{PromptTokens: 400, CompletionTokens: 5, TotalTokens: 405}
	rounds := []struct {
		name      string
		script    []fakeai.Turn
		text      string
		in, out   float64
		toolRound string // X-Skillrouter-Tool-Rounds
	}{
		{"first round JSON", []fakeai.Turn{{Content: "Hello there.", Usage: u1, IgnoreStream: true}}, "Hello there.", 100, 7, "0"},
		{"first round JSON calls load_skill", []fakeai.Turn{
			{Content: "Let me load it. ", ToolCalls: load, Usage: u1, IgnoreStream: true},
			{Content: "Here you go.", Usage: u2},
		}, "Let me load it. Here you go.", 400, 5, "1"}, // the last round's usage (wire.Usage)
		{"hidden round JSON", []fakeai.Turn{
			{Content: "Let me load it. ", ToolCalls: load, Usage: u1},
			{Content: "Here you go.", Usage: u2, IgnoreStream: true},
		}, "Let me load it. Here you go.", 400, 5, "1"}, // the last round's usage (wire.Usage)
		{"every round JSON", []fakeai.Turn{
			{Content: "Let me load it. ", ToolCalls: load, Usage: u1, IgnoreStream: true},
			{Content: "Here you go.", Usage: u2, IgnoreStream: true},
		}, "Let me load it. Here you go.", 400, 5, "1"}, // the last round's usage (wire.Usage)
	}
	for _, a := range apis {
		for _, rc := range rounds {
			t.Run(a.name+"/"+rc.name, func(t *testing.T) {
				h := newHarness(t, nil)
				for _, turn := range rc.script {
					h.up.Script(fakeai.Reply(turn))
				}
				resp, b := h.do("POST", a.path, a.body, a.hdr)
				if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					t.Fatalf("status %d, Content-Type %q, want a 200 event stream:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
				}
				v := clientStream(t, a.api, b)
				if v.text != rc.text || len(v.calls) != 0 || v.stop != a.stop {
					t.Errorf("client read text %q, calls %v, stop %q; want %q, none, %q\n%s", v.text, v.calls, v.stop, rc.text, a.stop, b)
				}
				if v.in != rc.in || v.out != rc.out {
					t.Errorf("usage in %v out %v, want %v and %v\n%s", v.in, v.out, rc.in, rc.out, b)
				}
				if n, _ := roundHeader(resp); n != rc.toolRound {
					t.Errorf("tool rounds %q, want %s", n, rc.toolRound)
				}
				if got, want := len(h.up.Requests()), len(rc.script); got != want {
					t.Errorf("upstream got %d requests, want %d", got, want)
				}
				if calls := sessionCalls(h); rc.toolRound == "1" && !slices.Equal(calls, []string{`load_skill{"skill_id":"demo/xlsx"}`}) {
					t.Errorf("the proxy ran %v, want the load_skill call", calls)
				}
				n := 0
				for _, turn := range rc.script {
					if turn.IgnoreStream {
						n++
					}
				}
				if want := fmt.Sprintf(`"upstream_json_rounds":%d`, n); !strings.Contains(h.logText(), want) {
					t.Errorf("the access log lacks %s:\n%s", want, h.logText())
				}
			})
		}
	}
}

// What the proxy does with other JSON answers to a streamed request.
func TestStreamedRequestAnsweredWithJSONEdges(t *testing.T) {
	load := []fakeai.Call{{ID: "call_ls", Name: "load_skill", Arguments: `{"skill_id":"demo/xlsx"}`}}
	const notAnswer = `{"error":{"message":"model overloaded","type":"server_error","param":null,"code":"overloaded"}}`
	t.Run("labelled text/plain, streamed all the same", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Raw(200, "text/plain; charset=utf-8",
			`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
		_, b := h.chat(streamChat(""), nil)
		if v := clientStream(t, wire.APIChat, b); v.text != "hi" || v.stop != "stop" {
			t.Errorf("client read %+v\n%s", v, b)
		}
	})
	t.Run("the round limit drops the proxy's call of a JSON answer", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MaxToolRounds = 1 })
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "a ", ToolCalls: load, IgnoreStream: true}),
			fakeai.Reply(fakeai.Turn{Content: "b", ToolCalls: load, IgnoreStream: true}))
		resp, b := h.chat(streamChat(""), nil)
		v := clientStream(t, wire.APIChat, b)
		if v.text != "a b" || len(v.calls) != 0 || v.stop != "stop" {
			t.Errorf("client read %+v\n%s", v, b)
		}
		if n, exhausted := roundHeader(resp); n != "1" || !exhausted {
			t.Errorf("tool rounds %q, exhausted %v; want 1, true", n, exhausted)
		}
	})
	// JSON cut short is not an answer, streamed or not.
	t.Run("first round, JSON cut short: 502", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Raw(200, "application/json", `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis`))
		resp, b := h.chat(streamChat(""), nil)
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		checkAPIError(t, b, "upstream_bad_response")
	})
	t.Run("hidden round, JSON cut short: the error event", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "a", ToolCalls: load}),
			fakeai.Raw(200, "application/json", `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis`))
		_, b := h.chat(streamChat(""), nil)
		if a := assemble(t, b); a.Content != "a" || len(a.Errors) != 1 || !strings.Contains(a.Errors[0], "upstream_bad_response") || a.Done != 0 {
			t.Errorf("want the text, then one error event upstream_bad_response:\n%s", b)
		}
	})
	// A 200 whose JSON is not an answer of the API goes on as before: the
	// first round's as it came, a hidden round's as the stream's error event.
	t.Run("first round, not an answer: relayed as it came", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Raw(200, "application/json", notAnswer))
		resp, b := h.chat(streamChat(""), nil)
		if resp.StatusCode != 200 || string(b) != notAnswer {
			t.Errorf("status %d: %s", resp.StatusCode, b)
		}
	})
	t.Run("hidden round, not an answer: the error event", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "a", ToolCalls: load}), fakeai.Raw(200, "application/json", notAnswer))
		_, b := h.chat(streamChat(""), nil)
		if a := assemble(t, b); a.Content != "a" || len(a.Errors) != 1 || !strings.Contains(a.Errors[0], "model overloaded") || a.Done != 0 {
			t.Errorf("want the text, then one error event:\n%s", b)
		}
	})
	// Without the proxy's tools (routing disabled or failed, n > 1) the
	// stream is relayed untouched: so is the JSON.
	t.Run("relayed without the proxy's tools: as it came", func(t *testing.T) {
		h := newHarness(t, nil)
		h.rw.noTools = true
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "hi", IgnoreStream: true}))
		resp, b := h.chat(streamChat(""), nil)
		if resp.Header.Get("Content-Type") != "application/json" || decodeJSON(t, b)["object"] != "chat.completion" {
			t.Errorf("%s: %s", resp.Header.Get("Content-Type"), b)
		}
	})
}

// clientStream reads a stream as the API's SDK does (openai-node's
// ChatCompletionStream and ResponseStream, @anthropic-ai/sdk's
// MessageStream), failing where the SDK throws: events out of order, an
// event about an item or block never started, no final event, anything
// after it.
func clientStream(t *testing.T, api wire.API, b []byte) answerView {
	t.Helper()
	var v answerView
	switch api {
	case wire.APIChat:
		type call struct{ id, typ, name, args string }
		var role string
		var finish []string
		var calls []*call
		done := false
		for _, d := range sseData(t, b) {
			if done {
				t.Fatalf("data after [DONE]: %s", d)
			}
			if d == "[DONE]" {
				done = true
				continue
			}
			var ch struct {
				Object  string `json:"object"`
				Choices []struct {
					Index int `json:"index"`
					Delta struct {
						Role      string  `json:"role"`
						Content   *string `json:"content"`
						ToolCalls []struct {
							Index    int    `json:"index"`
							ID       string `json:"id"`
							Type     string `json:"type"`
							Function struct {
								Name      string `json:"name"`
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
				Usage map[string]any `json:"usage"`
				Error any            `json:"error"`
			}
			if err := json.Unmarshal([]byte(d), &ch); err != nil {
				t.Fatalf("chunk is not JSON: %s", d)
			}
			if ch.Error != nil {
				t.Fatalf("error chunk: %s", d)
			}
			if ch.Object != "chat.completion.chunk" {
				t.Fatalf("chunk object %q: %s", ch.Object, d)
			}
			if ch.Usage != nil {
				v.in, v.out = num(ch.Usage["prompt_tokens"]), num(ch.Usage["completion_tokens"])
			}
			for _, c := range ch.Choices {
				if c.Index != 0 {
					t.Fatalf("choice %d in a one-answer stream", c.Index)
				}
				if len(finish) > 0 {
					t.Fatalf("a delta after the finish: %s", d)
				}
				if c.Delta.Role != "" {
					role = c.Delta.Role
				}
				if c.Delta.Content != nil {
					v.text += *c.Delta.Content
				}
				for _, tc := range c.Delta.ToolCalls {
					for len(calls) <= tc.Index {
						calls = append(calls, &call{})
					}
					k := calls[tc.Index]
					k.id, k.typ = firstSet(k.id, tc.ID), firstSet(k.typ, tc.Type)
					k.name = firstSet(k.name, tc.Function.Name)
					k.args += tc.Function.Arguments
				}
				if c.FinishReason != nil && *c.FinishReason != "" {
					finish = append(finish, *c.FinishReason)
				}
			}
		}
		// As finalChatCompletion: a role, a finish_reason, whole calls.
		if !done || role == "" || len(finish) != 1 {
			t.Fatalf("[DONE] %v, role %q, finish %v: not a whole completion\n%s", done, role, finish, b)
		}
		for _, c := range calls {
			if c.id == "" || c.typ == "" || c.name == "" {
				t.Fatalf("tool call without id, type or name: %+v", *c)
			}
			v.calls = append(v.calls, c.name)
		}
		v.stop = finish[0]
		v.ended = true
	case wire.APIResponses:
		var snapshot map[string]any
		var final map[string]any
		for i, ev := range namedEvents(t, b) {
			if final != nil {
				t.Fatalf("event %s after the final event", ev.name)
			}
			if ev.data["type"] != ev.name {
				t.Fatalf("event: %s carries type %v", ev.name, ev.data["type"])
			}
			if num(ev.data["sequence_number"]) != float64(i) {
				t.Fatalf("event %d (%s) has sequence_number %v", i, ev.name, ev.data["sequence_number"])
			}
			if snapshot == nil {
				if ev.name != "response.created" {
					t.Fatalf("first event %s, want response.created", ev.name)
				}
				snapshot = ev.data["response"].(map[string]any)
				if len(asList(snapshot["output"])) != 0 {
					t.Fatalf("response.created with output: %v", snapshot["output"])
				}
				continue
			}
			output := func() map[string]any {
				out := asList(snapshot["output"])
				i := int(num(ev.data["output_index"]))
				if i >= len(out) {
					t.Fatalf("%s for output %d, which was never added", ev.name, i)
				}
				return out[i].(map[string]any)
			}
			switch ev.name {
			case "response.output_item.added":
				if int(num(ev.data["output_index"])) != len(asList(snapshot["output"])) {
					t.Fatalf("output_item.added at output_index %v, after %d items", ev.data["output_index"], len(asList(snapshot["output"])))
				}
				snapshot["output"] = append(asList(snapshot["output"]), ev.data["item"])
			case "response.content_part.added":
				if it := output(); it["type"] == "message" {
					it["content"] = append(asList(it["content"]), ev.data["part"])
				}
			case "response.output_text.delta":
				if it := output(); it["type"] == "message" {
					parts := asList(it["content"])
					j := int(num(ev.data["content_index"]))
					if j >= len(parts) || parts[j].(map[string]any)["type"] != "output_text" {
						t.Fatalf("output_text.delta for content %d, never added as output_text", j)
					}
					parts[j].(map[string]any)["text"] = parts[j].(map[string]any)["text"].(string) + ev.data["delta"].(string)
				}
			case "response.function_call_arguments.delta":
				if it := output(); it["type"] == "function_call" {
					it["arguments"] = it["arguments"].(string) + ev.data["delta"].(string)
				}
			case "response.completed", "response.incomplete", "response.failed":
				final = ev.data["response"].(map[string]any)
			}
		}
		if final == nil {
			t.Fatalf("no final event\n%s", b)
		}
		text, calls, stop := responseView(final)
		if seen, _, _ := responseView(snapshot); seen != text {
			t.Fatalf("the events built text %q, the final response has %q", seen, text)
		}
		v.text, v.calls, v.stop = text, calls, stop
		u, _ := final["usage"].(map[string]any)
		v.in, v.out = num(u["input_tokens"]), num(u["output_tokens"])
		v.ended = true
	case wire.APIMessages:
		var snapshot map[string]any
		stopped := false
		for _, ev := range namedEvents(t, b) {
			if stopped {
				t.Fatalf("event %s after message_stop", ev.name)
			}
			if ev.data["type"] != ev.name {
				t.Fatalf("event: %s carries type %v", ev.name, ev.data["type"])
			}
			if ev.name == "ping" {
				continue
			}
			if ev.name == "error" {
				t.Fatalf("error event: %v", ev.data)
			}
			if snapshot == nil {
				if ev.name != "message_start" {
					t.Fatalf("Unexpected event order, got %s before \"message_start\"", ev.name)
				}
				snapshot = ev.data["message"].(map[string]any)
				if len(asList(snapshot["content"])) != 0 {
					t.Fatalf("message_start with content: %v", snapshot["content"])
				}
				continue
			}
			content := asList(snapshot["content"])
			block := func() map[string]any {
				i := int(num(ev.data["index"]))
				if i >= len(content) {
					t.Fatalf("%s for block %d, never started", ev.name, i)
				}
				return content[i].(map[string]any)
			}
			switch ev.name {
			case "message_start":
				t.Fatal("a second message_start")
			case "content_block_start":
				if int(num(ev.data["index"])) != len(content) {
					t.Fatalf("content_block_start at index %v after %d blocks", ev.data["index"], len(content))
				}
				snapshot["content"] = append(content, ev.data["content_block"])
			case "content_block_delta":
				blk, d := block(), ev.data["delta"].(map[string]any)
				switch d["type"] {
				case "text_delta":
					blk["text"] = blk["text"].(string) + d["text"].(string)
				case "input_json_delta":
					blk["json"] = fmt.Sprint(blk["json"]) + d["partial_json"].(string)
				}
			case "content_block_stop":
				block()
			case "message_delta":
				snapshot["stop_reason"] = ev.data["delta"].(map[string]any)["stop_reason"]
				u := snapshot["usage"].(map[string]any)
				for k, n := range ev.data["usage"].(map[string]any) {
					if n != nil {
						u[k] = n
					}
				}
			case "message_stop":
				stopped = true
			}
		}
		if !stopped {
			t.Fatalf("no message_stop\n%s", b)
		}
		for _, c := range asList(snapshot["content"]) {
			blk := c.(map[string]any)
			switch blk["type"] {
			case "text":
				v.text += blk["text"].(string)
			case "tool_use":
				v.calls = append(v.calls, blk["name"].(string))
			}
		}
		v.stop, _ = snapshot["stop_reason"].(string)
		u := snapshot["usage"].(map[string]any)
		v.in, v.out = num(u["input_tokens"]), num(u["output_tokens"])
		v.ended = true
	}
	return v
}

// firstSet is s, else t: the first non-empty value of a field a delta repeats.
func firstSet(s, t string) string {
	if s != "" {
		return s
	}
	return t
}
