package chat

import (
	"testing"
)

func TestReadAnswerTurn(t *testing.T) {
	const load = `{"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"}}`
	const loadTurn = `[{"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"}}]`
	const bash = `{"id":"call_2","type":"function","function":{"name":"bash","arguments":"{}"}}`
	for _, c := range []struct {
		name, msg, turn string
	}{
		{"plain", `{"role":"assistant","content":null,"tool_calls":[` + load + `]}`,
			`{"role":"assistant","content":null,"tool_calls":` + loadTurn + `}`},
		// DeepSeek's thinking mode wants reasoning_content back; unknown fields stay as sent.
		{"reasoning kept", `{"role":"assistant","content":"","reasoning_content":"think","x_vendor":{"a":1},"tool_calls":[` + load + `]}`,
			`{"role":"assistant","content":"","reasoning_content":"think","x_vendor":{"a":1},"tool_calls":` + loadTurn + `}`},
		// OpenRouter wants reasoning_details back, unchanged, to continue reasoning.
		{"reasoning_details (OpenRouter)", `{"role":"assistant","content":null,"reasoning":"think","reasoning_details":[{"type":"reasoning.text","text":"think","signature":"c2ln","format":"anthropic-claude-v1","index":0}],"tool_calls":[` + load + `]}`,
			`{"role":"assistant","content":null,"reasoning":"think","reasoning_details":[{"type":"reasoning.text","text":"think","signature":"c2ln","format":"anthropic-claude-v1","index":0}],"tool_calls":` + loadTurn + `}`},
		{"reasoning (vLLM)", `{"role":"assistant","reasoning":"think","tool_calls":[` + load + `]}`,
			`{"role":"assistant","reasoning":"think","tool_calls":` + loadTurn + `,"content":null}`},
		{"the client's call and annotations left out", `{"role":"assistant","content":"Let me look.","annotations":[],"tool_calls":[` + load + `,` + bash + `]}`,
			`{"role":"assistant","content":"Let me look.","tool_calls":` + loadTurn + `}`},
		{"audio as the request takes it", `{"role":"assistant","content":null,"audio":{"id":"audio_1","data":"AAAA","expires_at":1,"transcript":"hi"},"tool_calls":[` + load + `]}`,
			`{"role":"assistant","content":null,"audio":{"id":"audio_1"},"tool_calls":` + loadTurn + `}`},
		// Gemini's OpenAI endpoint refuses a follow-up whose call lost its thought signature.
		{"a call's own members kept", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"},"extra_content":{"google":{"thought_signature":"sig=="}}}]}`,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"},"extra_content":{"google":{"thought_signature":"sig=="}}}]}`},
		{"no role", `{"tool_calls":[` + load + `]}`,
			`{"tool_calls":` + loadTurn + `,"role":"assistant","content":null}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}]}`))
			ans, _, ok := r.ReadAnswer([]byte(`{"choices":[{"index":0,"finish_reason":"tool_calls","message":`+c.msg+`}]}`), 0,
				func(n string) bool { return n == "load_skill" })
			if !ok || ans == nil || len(ans.Calls) != 1 {
				t.Fatalf("ReadAnswer: %+v, %v", ans, ok)
			}
			if string(ans.Turn) != c.turn {
				t.Errorf("turn\n%s\nwant\n%s", ans.Turn, c.turn)
			}
		})
	}
}
