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

// FuzzReadAnswer checks that ReadAnswer's undecoded path (noCalls) reads
// every answer as decoding it does: same answer, usage and verdict.
func FuzzReadAnswer(f *testing.F) {
	for _, s := range []string{
		`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
		`{"id":"c","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"id":"c","choices":[{"message":{"role":"assistant","tool_calls":null}}]}`,
		`{"id":5,"choices":[{"message":{}}]}`,
		`{"ID":"x","choices":[{"message":{}}],"usage":null}`,
		`{"choices":[{"message":{}},{"finish_reason":7}]}`,
		`{"choices":[{"message":{}}],"choices":[]}`,
		`{"choices":[{"message":{"Tool_Calls":[{"function":{"name":"load_skill"}}]}}]}`,
		`{"choices":[null]}`, `{"choices":[{"message":null}]}`, `{"choices":[]}`, `[]`, `null`, `{`,
		`{"choices":[{"meſſage":{"tool_calls":[{"function":{"name":"load_skill"}}]}}]}`,
	} {
		f.Add([]byte(s))
	}
	r := &Request{}
	mine := func(name string) bool { return name == "load_skill" }
	f.Fuzz(func(t *testing.T, raw []byte) {
		ans, usage, ok := r.ReadAnswer(raw, 1, mine)
		wantAns, wantUsage, wantOK := r.decodeAnswer(raw, 1, mine)
		if ok != wantOK || string(usage) != string(wantUsage) || (ans == nil) != (wantAns == nil) {
			t.Fatalf("ReadAnswer(%q) = %v, %q, %v; decoded: %v, %q, %v", raw, ans, usage, ok, wantAns, wantUsage, wantOK)
		}
	})
}

// TestNoCalls: the answers without tool calls that upstreams send are read
// without decoding; any answer with tool_calls is decoded.
func TestNoCalls(t *testing.T) {
	for _, c := range []struct {
		raw, usage string
		ok         bool
	}{
		{`{"id":"chatcmpl-B9","object":"chat.completion","created":1741569952,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29},"service_tier":"default"}`,
			`{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29}`, true},
		{"{\n \"id\": \"x\",\n \"choices\": [ { \"message\": { \"content\": \"a\" } } ]\n}", "", true}, // no usage
		{`{"choices":[{"message":{"content":"a","tool_calls":[]}}]}`, "", false},
		{`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"bash","arguments":"{}"}}]}}]}`, "", false},
	} {
		usage, ok := noCalls([]byte(c.raw))
		if ok != c.ok || string(usage) != c.usage {
			t.Errorf("noCalls(%s) = %q, %v; want %q, %v", c.raw, usage, ok, c.usage, c.ok)
		}
	}
}
