package fakeai

import (
	"encoding/json"
	"strings"
	"testing"
)

var anthropicHeaders = map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01"}

func TestMessagesValidation(t *testing.T) {
	f := New()
	defer f.Close()
	use := `{"role":"assistant","content":[{"type":"text","text":"let me check"},{"type":"tool_use","id":"tu_1","name":"get_weather","input":{"city":"Oslo"}}]}`
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"sunny"}]}`
	user := `{"role":"user","content":"weather?"}`
	tools := `"tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object"}}]`
	tests := []struct {
		name, body string
		header     map[string]string
		status     int
		want       string
	}{
		{"plain", `{"model":"m","max_tokens":10,"messages":[` + user + `]}`, nil, 200, `"type":"message"`},
		{"system blocks and tool round", `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],` + tools + `,"messages":[` + user + `,` + use + `,` + result + `]}`, nil, 200, `"stop_reason":"end_turn"`},
		{"claude code system-role message", `{"model":"m","max_tokens":10,"messages":[` + user + `,{"role":"system","content":[{"type":"text","text":"env"}]},` + use + `,` + result + `]}`, nil, 200, `"message"`},
		{"server tool", `{"model":"m","max_tokens":10,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[` + user + `]}`, nil, 200, `"message"`},
		{"final assistant prefill may be empty", `{"model":"m","max_tokens":10,"messages":[` + user + `,{"role":"assistant","content":""}]}`, nil, 200, `"message"`},
		{"no key", `{"model":"m","max_tokens":10,"messages":[]}`, map[string]string{"X-Api-Key": "", "Anthropic-Version": "2023-06-01"}, 401, `"type":"authentication_error"`},
		{"no version", `{"model":"m","max_tokens":10,"messages":[]}`, map[string]string{"X-Api-Key": "k", "Anthropic-Version": ""}, 400, `anthropic-version: header is required`},
		{"bearer key", `{"model":"m","max_tokens":10,"messages":[` + user + `]}`, map[string]string{"X-Api-Key": "", "Authorization": "Bearer k", "Anthropic-Version": "2023-06-01"}, 200, `"message"`},
		{"not JSON", `{"model"`, nil, 400, `"type":"invalid_request_error"`},
		{"no model", `{"max_tokens":10,"messages":[]}`, nil, 400, `model: Field required`},
		{"no max_tokens", `{"model":"m","messages":[]}`, nil, 400, `max_tokens: Field required`},
		{"max_tokens zero", `{"model":"m","max_tokens":0,"messages":[]}`, nil, 400, `greater than or equal to 1`},
		{"no messages", `{"model":"m","max_tokens":10}`, nil, 400, `messages: Field required`},
		{"system image", `{"model":"m","max_tokens":10,"system":[{"type":"image"}],"messages":[` + user + `]}`, nil, 400, `system.0.type`},
		{"empty user content", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[]}]}`, nil, 400, `non-empty content`},
		{"bad role", `{"model":"m","max_tokens":10,"messages":[{"role":"tool","content":"x"}]}`, nil, 400, `messages.0.role`},
		{"orphan tool_result", `{"model":"m","max_tokens":10,"messages":[` + user + `,{"role":"assistant","content":"hm"},` + result + `]}`, nil, 400, "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: tu_1"},
		{"unanswered tool_use", `{"model":"m","max_tokens":10,"messages":[` + user + `,` + use + `,` + user + `]}`, nil, 400, "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: tu_1"},
		{"tool_use input not an object", `{"model":"m","max_tokens":10,"messages":[` + user + `,{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"n","input":"{}"}]}]}`, nil, 400, `tool_use.input`},
		{"tool without schema", `{"model":"m","max_tokens":10,"tools":[{"name":"f"}],"messages":[` + user + `]}`, nil, 400, `tools.0.custom.input_schema: Field required`},
		{"duplicate tools", `{"model":"m","max_tokens":10,"tools":[{"name":"f","input_schema":{}},{"name":"f","input_schema":{}}],"messages":[` + user + `]}`, nil, 400, `Tool names must be unique`},
		{"chat-format tool", `{"model":"m","max_tokens":10,"tools":[{"type":"function","function":{"name":"f"}}],"messages":[` + user + `]}`, nil, 400, `tools.0.name: Field required`},
		{"bad tool_choice", `{"model":"m","max_tokens":10,"tool_choice":{"type":"required"},"messages":[` + user + `]}`, nil, 400, `tool_choice`},
		{"tampered thinking", `{"model":"m","max_tokens":10,"messages":[` + user + `,{"role":"assistant","content":[{"type":"thinking","thinking":"edited","signature":"` + signature("original") + `"},{"type":"text","text":"x"}]},` + user + `]}`, nil, 400, "Invalid `signature` in `thinking` block"},
		{"thinking enabled, tool round without thinking", `{"model":"m","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + user + `,` + use + `,` + result + `]}`, nil, 400, "Expected `thinking` or `redacted_thinking`, but found `text`"},
		{"thinking run spliced from two responses", `{"model":"m","max_tokens":10,"messages":[` + user + `,{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"` + thinkingSignature("a", 1) + `"},{"type":"thinking","thinking":"b","signature":"` + thinkingSignature("b", 2) + `"},{"type":"tool_use","id":"tu_1","name":"get_weather","input":{}}]},` + result + `]}`, nil, 400, "messages.1.content.1: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified"},
		{"thinking runs of two responses apart", `{"model":"m","max_tokens":10,"messages":[` + user + `,{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"` + thinkingSignature("a", 1) + `"},{"type":"text","text":"x"},{"type":"thinking","thinking":"b","signature":"` + thinkingSignature("b", 2) + `"},{"type":"tool_use","id":"tu_1","name":"get_weather","input":{}}]},` + result + `]}`, nil, 200, `"message"`},
		{"thinking enabled, tool round with thinking", `{"model":"m","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + user + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"` + signature("hmm") + `"},{"type":"tool_use","id":"tu_1","name":"get_weather","input":{}}]},` + result + `]}`, nil, 200, `"message"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			for k, v := range anthropicHeaders {
				h[k] = v
			}
			for k, v := range tc.header {
				h[k] = v
			}
			status, hdr, b := post(t, f, "/v1/messages?beta=true", tc.body, h)
			if status != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("status %d, want %d with %q:\n%s", status, tc.status, tc.want, b)
			}
			if hdr.Get("Request-Id") == "" {
				t.Fatal("no request-id header")
			}
			if status != 200 {
				var e struct {
					Type  string
					Error struct{ Type, Message string }
				}
				if json.Unmarshal(b, &e) != nil || e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" {
					t.Fatalf("not an Anthropic error envelope: %s", b)
				}
			}
		})
	}
}

func TestMessagesAnswer(t *testing.T) {
	f := New()
	defer f.Close()
	f.Script(Reply(Turn{Content: "Checking.", Thinking: &Thinking{Text: "plan"},
		ToolCalls: []Call{{Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		Usage:     &Usage{PromptTokens: 12, CompletionTokens: 7, CachedTokens: 5, CacheCreationTokens: 3}}))
	status, _, b := post(t, f, "/v1/messages", `{"model":"claude-x","max_tokens":100,"messages":[{"role":"user","content":"w?"}]}`, anthropicHeaders)
	if status != 200 {
		t.Fatalf("%d %s", status, b)
	}
	var m struct {
		Type, Model string
		StopReason  string `json:"stop_reason"`
		Content     []map[string]any
		Usage       map[string]float64
	}
	_ = json.Unmarshal(b, &m)
	if m.Type != "message" || m.Model != "claude-x" || m.StopReason != "tool_use" || len(m.Content) != 3 {
		t.Fatalf("%s", b)
	}
	if m.Content[0]["type"] != "thinking" || m.Content[0]["signature"] != thinkingSignature("plan", 1) ||
		m.Content[1]["text"] != "Checking." || m.Content[2]["type"] != "tool_use" || m.Content[2]["input"].(map[string]any)["city"] != "Oslo" {
		t.Fatalf("content %v", m.Content)
	}
	if m.Usage["input_tokens"] != 12 || m.Usage["output_tokens"] != 7 || m.Usage["cache_read_input_tokens"] != 5 || m.Usage["cache_creation_input_tokens"] != 3 {
		t.Fatalf("usage %v", m.Usage)
	}
	// The answer goes back as the next request's assistant turn, intact.
	var back []any
	_ = json.Unmarshal(b, &struct{ Content *[]any }{&back})
	turn, _ := json.Marshal(map[string]any{"role": "assistant", "content": back})
	next := `{"model":"m","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"w?"},` + string(turn) +
		`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + m.Content[2]["id"].(string) + `","content":"sunny"}]}]}`
	if status, _, b := post(t, f, "/v1/messages", next, anthropicHeaders); status != 200 || !strings.Contains(string(b), `"text":"ok"`) {
		t.Fatalf("follow-up %d %s", status, b)
	}
}

func TestMessagesStream(t *testing.T) {
	f := New()
	defer f.Close()
	f.Script(Reply(Turn{Content: "It is sunny", Thinking: &Thinking{Text: "hmm ok", RedactedData: "opaque"},
		ToolCalls: []Call{{ID: "tu_9", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}))
	status, h, b := post(t, f, "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"w?"}]}`, anthropicHeaders)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v", status, h)
	}
	evs := parseSSE(t, b)
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_delta content_block_delta content_block_stop " +
		"message_delta message_stop"
	if got := names(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	var thinking, sig, text, args string
	for _, e := range evs {
		if e.name != "content_block_delta" {
			continue
		}
		d := e.data["delta"].(map[string]any)
		switch d["type"] {
		case "thinking_delta":
			thinking += d["thinking"].(string)
		case "signature_delta":
			sig = d["signature"].(string)
		case "text_delta":
			text += d["text"].(string)
			if e.data["index"] != 2.0 {
				t.Fatalf("text at index %v", e.data["index"])
			}
		case "input_json_delta":
			args += d["partial_json"].(string)
		}
	}
	if thinking != "hmm ok" || sig != thinkingSignature("hmm ok", 1) || text != "It is sunny" || args != `{"city":"Oslo"}` {
		t.Fatalf("thinking %q sig %q text %q args %q", thinking, sig, text, args)
	}
	md := evs[len(evs)-2].data
	if md["delta"].(map[string]any)["stop_reason"] != "tool_use" || md["usage"].(map[string]any)["output_tokens"] == nil {
		t.Fatalf("message_delta %v", md)
	}
	start := evs[0].data["message"].(map[string]any)
	if start["stop_reason"] != nil || len(start["content"].([]any)) != 0 {
		t.Fatalf("message_start %v", start)
	}
}

func TestMessagesFailures(t *testing.T) {
	f := New()
	defer f.Close()
	f.Script(Reply(Turn{Content: "a b c", Fail: &Failure{After: 3, Type: "overloaded_error", Message: "Overloaded"}}))
	_, _, b := post(t, f, "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"w?"}]}`, anthropicHeaders)
	evs := parseSSE(t, b)
	if len(evs) != 4 || evs[3].name != "error" || evs[3].data["error"].(map[string]any)["type"] != "overloaded_error" {
		t.Fatalf("%s", b)
	}
	// Status speaks the envelope of the path it answers.
	f.Script(Status(529, "Overloaded"))
	status, _, b := post(t, f, "/v1/messages", `{}`, anthropicHeaders)
	if status != 529 || !strings.Contains(string(b), `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}`) {
		t.Fatalf("%d %s", status, b)
	}
	f.Script(Status(503, "down"))
	status, _, b = post(t, f, "/v1/responses", `{}`, nil)
	if status != 503 || !strings.Contains(string(b), `"message":"down"`) {
		t.Fatalf("%d %s", status, b)
	}
}

func TestCountTokens(t *testing.T) {
	f := New()
	defer f.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	status, _, b := post(t, f, "/v1/messages/count_tokens?beta=true", body, anthropicHeaders)
	if status != 200 || string(b) != `{"input_tokens":`+itoa(len(body)/4+1)+`}` {
		t.Fatalf("%d %s", status, b)
	}
	if status, _, _ := post(t, f, "/v1/messages/count_tokens", `{"messages":[]}`, anthropicHeaders); status != 400 {
		t.Fatalf("no model: %d", status)
	}
	// count_tokens does not take a scripted turn.
	f.Script(Reply(Turn{Content: "scripted"}))
	post(t, f, "/v1/messages/count_tokens", body, anthropicHeaders)
	_, _, b = post(t, f, "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, anthropicHeaders)
	if !strings.Contains(string(b), "scripted") {
		t.Fatalf("%s", b)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRequestMessagesHelpers(t *testing.T) {
	r := Request{Body: []byte(`{"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b"}],"messages":[{"role":"user","content":"x"}],"tools":[{"name":"Skill","input_schema":{}}]}`)}
	if r.System() != "a\nb" || len(r.SystemBlocks()) != 2 || r.SystemBlocks()[0]["cache_control"] == nil {
		t.Fatalf("%q %v", r.System(), r.SystemBlocks())
	}
	if len(r.Messages()) != 1 || strings.Join(r.ToolNames(), ",") != "Skill" {
		t.Fatalf("%v %v", r.Messages(), r.ToolNames())
	}
	s := Request{Body: []byte(`{"system":"plain"}`)}
	if s.System() != "plain" || s.SystemBlocks()[0]["text"] != "plain" {
		t.Fatal(s.SystemBlocks())
	}
}
