package fakeai

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTruncated: an answer cut at the output-token limit ends as each API
// ends one, with the cut call's arguments as the model left them.
func TestTruncated(t *testing.T) {
	f := New()
	defer f.Close()
	cut := Turn{Truncated: true, ToolCalls: []Call{{Name: "load_skill", Arguments: `{"skill_id":"demo/p`}}}
	tools := map[string]string{
		"/v1/chat/completions": `"tools":[{"type":"function","function":{"name":"load_skill","parameters":{"type":"object"}}}]`,
		"/v1/responses":        `"tools":[{"type":"function","name":"load_skill","parameters":{"type":"object"}}]`,
		"/v1/messages":         `"tools":[{"name":"load_skill","input_schema":{"type":"object"}}]`,
	}
	for _, tc := range []struct {
		name, path, body string
		want             []string
	}{
		{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],`, []string{`"finish_reason":"length"`, `"arguments":"{\"skill_id\":\"demo/p"`}},
		{"chat stream", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],`, []string{`"finish_reason":"length"`, "data: [DONE]"}},
		{"responses", "/v1/responses", `{"model":"m","input":"hi","max_output_tokens":16,`, []string{`"status":"incomplete"`, `"incomplete_details":{"reason":"max_output_tokens"}`, `"type":"function_call","status":"incomplete","arguments":"{\"skill_id\":\"demo/p"`}},
		{"responses stream", "/v1/responses", `{"model":"m","input":"hi","stream":true,`, []string{"event: response.incomplete\n", `"status":"incomplete"`, `"incomplete_details":{"reason":"max_output_tokens"}`}},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}],`, []string{`"stop_reason":"max_tokens"`, `"name":"load_skill","input":{}`}},
		{"messages stream", "/v1/messages", `{"model":"m","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}],`, []string{`"stop_reason":"max_tokens"`, "event: message_stop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.Script(Reply(cut))
			status, _, b := post(t, f, tc.path, tc.body+tools[tc.path]+`}`, anthropicHeaders)
			if status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("answer lacks %s:\n%s", w, b)
				}
			}
			if strings.Contains(string(b), "response.completed") || strings.Contains(string(b), `"finish_reason":"tool_calls"`) ||
				strings.Contains(string(b), `"stop_reason":"tool_use"`) {
				t.Errorf("a cut answer ends as a whole one:\n%s", b)
			}
			if !strings.HasSuffix(tc.name, "stream") {
				if !json.Valid(b) {
					t.Fatalf("not JSON: %s", b)
				}
				return
			}
			// The cut arguments stream as they were cut.
			var args strings.Builder
			for _, line := range strings.Split(string(b), "\n") {
				d, ok := strings.CutPrefix(line, "data: ")
				if !ok || d == "[DONE]" {
					continue
				}
				var ev map[string]any
				if err := json.Unmarshal([]byte(d), &ev); err != nil {
					t.Fatalf("bad event %q", d)
				}
				switch ev["type"] {
				case "response.function_call_arguments.delta":
					args.WriteString(ev["delta"].(string))
				case "content_block_delta":
					if dl := ev["delta"].(map[string]any); dl["type"] == "input_json_delta" {
						args.WriteString(dl["partial_json"].(string))
					}
				}
				if chs, _ := ev["choices"].([]any); len(chs) > 0 {
					dl := chs[0].(map[string]any)["delta"].(map[string]any)
					for _, tc := range asSlice(dl["tool_calls"]) {
						args.WriteString(tc.(map[string]any)["function"].(map[string]any)["arguments"].(string))
					}
				}
			}
			if args.String() != `{"skill_id":"demo/p` {
				t.Errorf("streamed arguments %q", args.String())
			}
		})
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
