package proxy

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// A tool_choice that only the proxy's tools can meet (one naming
// load_skill, as rewrite.md allows, or a required call with no client tool
// to make it) is relaxed on the follow-up once the proxy has answered:
// kept, it forced another load_skill every round until the round limit,
// and the client never got an answer.
func TestForcedProxyChoiceRelaxedOnFollowUp(t *testing.T) {
	anthropic := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	tests := []struct {
		name, path, body string
		hdr              map[string]string
		want             string // the follow-up's tool_choice
	}{
		{"chat forced", "/v1/chat/completions", `{"model":"m","tool_choice":{"type":"function","function":{"name":"load_skill"}},"messages":[{"role":"user","content":"make me a pdf"}]}`, nil, `"auto"`},
		{"chat required", "/v1/chat/completions", `{"model":"m","tool_choice":"required","messages":[{"role":"user","content":"make me a pdf"}]}`, nil, `"auto"`},
		{"chat allowed", "/v1/chat/completions", `{"model":"m","tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"load_skill"}}]}},"messages":[{"role":"user","content":"make me a pdf"}]}`, nil,
			`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"load_skill"}}]}}`},
		{"responses forced", "/v1/responses", `{"model":"m","tool_choice":{"type":"function","name":"load_skill"},"input":"make me a pdf"}`, nil, `"auto"`},
		{"responses allowed", "/v1/responses", `{"model":"m","tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"load_skill"}]},"input":"make me a pdf"}`, nil,
			`{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"load_skill"}]}`},
		{"messages forced", "/v1/messages", `{"model":"m","max_tokens":100,"tool_choice":{"type":"tool","name":"load_skill","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"make me a pdf"}]}`, anthropic,
			`{"type":"auto","disable_parallel_tool_use":true}`},
		{"messages any", "/v1/messages", `{"model":"m","max_tokens":100,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"make me a pdf"}]}`, anthropic, `{"type":"auto"}`},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			h := newHarness(t, nil)
			h.up.Script(
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
				fakeai.Reply(fakeai.Turn{Content: "the pdf is ready", ContentChunks: 1}),
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_m", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
			)
			body := tt.body
			if stream {
				body = strings.Replace(body, `{"model":"m",`, `{"model":"m","stream":true,`, 1)
			}
			resp, b := h.do("POST", tt.path, body, tt.hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("%s stream=%v: status %d: %s", tt.name, stream, resp.StatusCode, b)
			}
			reqs := h.up.Requests()
			if len(reqs) != 2 {
				t.Errorf("%s stream=%v: %d upstream requests, want 2", tt.name, stream, len(reqs))
				continue
			}
			if got := gjson.GetBytes(reqs[1].Body, "tool_choice").Raw; got != tt.want {
				t.Errorf("%s stream=%v: the follow-up's tool_choice is %s, want %s", tt.name, stream, got, tt.want)
			}
			if !strings.Contains(string(b), "the pdf is ready") {
				t.Errorf("%s stream=%v: the client did not get the answer:\n%s", tt.name, stream, b)
			}
		}
	}
}

// A choice that client tools can meet stays as it is on the follow-up.
func TestClientChoiceKeptOnFollowUp(t *testing.T) {
	for _, tc := range []string{`"required"`, `{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"load_skill"}},{"type":"function","function":{"name":"bash"}}]}}`} {
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_b", Name: "bash", Arguments: `{}`}}}),
		)
		resp, b := h.do("POST", "/v1/chat/completions", `{"model":"m","tool_choice":`+tc+`,"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"make me a pdf"}]}`, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if reqs := h.up.Requests(); len(reqs) != 2 || gjson.GetBytes(reqs[1].Body, "tool_choice").Raw != tc {
			t.Errorf("tool_choice %s: the follow-up changed it (%d requests)", tc, len(reqs))
		}
	}
}

// A server tool's max_uses bounds its calls over the whole message: a
// follow-up lowers it by the calls the rounds before made, and leaves the
// tool out when none are left, as
// Responses does with max_tool_calls. Sent again as it was, the client's
// cap (which also bounds its cost) could be passed once per round.
func TestMessagesMaxUsesCarried(t *testing.T) {
	search := `{"type":"server_tool_use","id":"srvtoolu_%d","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_%d","content":[]}`
	round := func(n int) string {
		var blocks []string
		for i := range n {
			blocks = append(blocks, strings.ReplaceAll(search, "%d", string(rune('a'+i))))
		}
		return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` + strings.Join(blocks, ",") +
			`,{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{"skill_id":"demo/pdf"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5,"server_tool_use":{"web_search_requests":` + string(rune('0'+n)) + `}}}`
	}
	final := `{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	tests := []struct {
		name     string
		uses     int
		wantTool string // the follow-up's web_search tool; "" when left out
	}{
		{"one of three used", 1, `{"type":"web_search_20250305","name":"web_search","max_uses":2}`},
		{"all used", 3, ``},
	}
	for _, tt := range tests {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Raw(200, "application/json", round(tt.uses)), fakeai.Raw(200, "application/json", final))
		resp, b := h.do("POST", "/v1/messages", `{"model":"m","max_tokens":100,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":3}],"messages":[{"role":"user","content":"search the web and make me a pdf"}]}`,
			map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", tt.name, resp.StatusCode, b)
		}
		reqs := h.up.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%s: %d upstream requests, want 2", tt.name, len(reqs))
		}
		if got := gjson.GetBytes(reqs[1].Body, `tools.#(name=="web_search")`).Raw; got != tt.wantTool {
			t.Errorf("%s: the follow-up's web_search is %s, want %s", tt.name, got, tt.wantTool)
		}
		if !gjson.GetBytes(reqs[1].Body, `tools.#(name=="load_skill")`).Exists() {
			t.Errorf("%s: the follow-up lost load_skill", tt.name)
		}
	}
}

// A JSON answer after a hidden round keeps the upstream's member order,
// its content's logprobs cover the text the earlier round adds before it,
// and under a JSON response_format the earlier round's text is not added
// (two JSON values run together parse as none).
func TestChatFinalAfterHiddenRound(t *testing.T) {
	round1 := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"summary\":\"loading\"}","tool_calls":[{"id":"k","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"demo/pdf\"}"}}]},"logprobs":{"content":[{"token":"A","logprob":-1,"bytes":null,"top_logprobs":[]}],"refusal":null},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`
	round2 := `{"id":"c2","object":"chat.completion","created":2,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"summary\":\"v1.2\"}","refusal":null},"logprobs":{"content":[{"token":"B","logprob":-2,"bytes":null,"top_logprobs":[]}],"refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13},"system_fingerprint":"fp"}`
	for _, format := range []string{``, `"response_format":{"type":"json_schema","json_schema":{"name":"o","schema":{"type":"object"}}},`} {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Raw(200, "application/json", round1), fakeai.Raw(200, "application/json", round2))
		resp, b := h.do("POST", "/v1/chat/completions", `{"model":"m","logprobs":true,`+format+`"messages":[{"role":"user","content":"make me a pdf"}]}`, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var keys []string
		gjson.ParseBytes(b).ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.Str); return true })
		if got := strings.Join(keys, ","); got != "id,object,created,model,choices,usage,system_fingerprint" {
			t.Errorf("members reordered: %s", got)
		}
		content := gjson.GetBytes(b, "choices.0.message.content").Str
		tokens := gjson.GetBytes(b, "choices.0.logprobs.content.#.token").Raw
		if format == "" {
			if content != `{"summary":"loading"}{"summary":"v1.2"}` || tokens != `["A","B"]` {
				t.Errorf("content %q with logprobs for %s, want both rounds' text and tokens", content, tokens)
			}
		} else if content != `{"summary":"v1.2"}` || tokens != `["B"]` {
			t.Errorf("json_schema: content %q (logprobs %s), want the last round's JSON alone", content, tokens)
		}
		if u := gjson.GetBytes(b, "usage.total_tokens").Int(); u != 13 {
			t.Errorf("usage.total_tokens %d, want the last round's 13", u)
		}
	}
	// A last round without logprobs still gets the earlier rounds'.
	h := newHarness(t, nil)
	h.up.Script(fakeai.Raw(200, "application/json", round1), fakeai.Raw(200, "application/json", strings.Replace(round2, `"logprobs":{"content":[{"token":"B","logprob":-2,"bytes":null,"top_logprobs":[]}],"refusal":null}`, `"logprobs":null`, 1)))
	_, b := h.do("POST", "/v1/chat/completions", `{"model":"m","logprobs":true,"messages":[{"role":"user","content":"make me a pdf"}]}`, nil)
	if tokens := gjson.GetBytes(b, "choices.0.logprobs.content.#.token").Raw; tokens != `["A"]` {
		t.Errorf("a last round without logprobs: %s, want the earlier round's", tokens)
	}
	h = newHarness(t, nil)
	h.up.Script(fakeai.Raw(200, "application/json", round1), fakeai.Raw(200, "application/json", strings.Replace(round2, `"logprobs":{"content":[{"token":"B","logprob":-2,"bytes":null,"top_logprobs":[]}],"refusal":null}`, `"logprobs":{"content":null,"refusal":[]}`, 1)))
	_, b = h.do("POST", "/v1/chat/completions", `{"model":"m","logprobs":true,"messages":[{"role":"user","content":"make me a pdf"}]}`, nil)
	if tokens := gjson.GetBytes(b, "choices.0.logprobs.content.#.token").Raw; tokens != `["A"]` || !gjson.GetBytes(b, "choices.0.logprobs.refusal").IsArray() {
		t.Errorf("a last round with content logprobs null: %s", gjson.GetBytes(b, "choices.0.logprobs").Raw)
	}
}

// Under a JSON text.format, a non-streamed response whose earlier round
// said something before calling load_skill holds the last round's message
// alone: the SDKs' parse helpers read the first message (output_parsed)
// and output_text joins them all. Without one, both rounds' messages stay.
func TestResponsesJSONFinalHoldsLastMessage(t *testing.T) {
	round1 := `{"id":"resp_a","object":"response","status":"completed","output":[` +
		`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"{\"summary\":\"loading\"}","annotations":[]}]},` +
		`{"type":"function_call","id":"fc_1","call_id":"call_l","name":"load_skill","arguments":"{\"skill_id\":\"demo/pdf\"}","status":"completed"}],` +
		`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`
	round2 := `{"id":"resp_b","object":"response","status":"completed","output":[` +
		`{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"{\"summary\":\"v1.2\"}","annotations":[]}]}],` +
		`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`
	for _, format := range []string{``, `"text":{"format":{"type":"json_schema","name":"o","schema":{"type":"object"}}},`} {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Raw(200, "application/json", round1), fakeai.Raw(200, "application/json", round2))
		resp, b := h.do("POST", "/v1/responses", `{"model":"m",`+format+`"input":"make me a pdf"}`, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		ids := gjson.GetBytes(b, `output.#(type=="message")#.id`).Raw
		want := `["msg_1","msg_2"]`
		if format != "" {
			want = `["msg_2"]`
		}
		if ids != want {
			t.Errorf("format %q: output messages %s, want %s", format, ids, want)
		}
	}
}

// Anthropic structured outputs: a non-streamed message whose earlier round
// wrote text before calling load_skill holds the last round's text alone
// under a JSON output format (the SDK's parse reads the first text block).
func TestMessagesJSONFinalHoldsLastText(t *testing.T) {
	round1 := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"{\"summary\":\"loading\"}"},{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{"skill_id":"demo/pdf"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	round2 := `{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"{\"summary\":\"v1.2\"}"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	for _, format := range []string{``, `"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},`, `"output_format":{"type":"json_schema","schema":{"type":"object"}},`} {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Raw(200, "application/json", round1), fakeai.Raw(200, "application/json", round2))
		resp, b := h.do("POST", "/v1/messages", `{"model":"m","max_tokens":100,`+format+`"messages":[{"role":"user","content":"make me a pdf"}]}`,
			map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		texts := gjson.GetBytes(b, `content.#(type=="text")#.text`).Raw
		want := `["{\"summary\":\"loading\"}","{\"summary\":\"v1.2\"}"]`
		if format != "" {
			want = `["{\"summary\":\"v1.2\"}"]`
		}
		if texts != want {
			t.Errorf("format %q: text blocks %s, want %s", format, texts, want)
		}
	}
}

// The same for a streamed response: its deltas went out as they came, but
// the final response.completed's output, which openai-node's and
// openai-python's stream helpers parse (output_parsed: the first message),
// holds the last round's message alone under a JSON text.format.
func TestResponsesStreamJSONFinalHoldsLastMessage(t *testing.T) {
	for _, format := range []string{``, `"text":{"format":{"type":"json_schema","name":"o","schema":{"type":"object"}}},`} {
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{Content: `{"summary":"loading"}`, ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
			fakeai.Reply(fakeai.Turn{Content: `{"summary":"v1.2"}`}))
		resp, b := h.do("POST", "/v1/responses", `{"model":"m","stream":true,`+format+`"input":"make me a pdf"}`, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var completed string
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && gjson.Get(d, "type").Str == "response.completed" {
				completed = d
			}
		}
		texts := gjson.Get(completed, `response.output.#(type=="message")#.content.0.text`).Raw
		want := `["{\"summary\":\"loading\"}","{\"summary\":\"v1.2\"}"]`
		if format != "" {
			want = `["{\"summary\":\"v1.2\"}"]`
		}
		if texts != want {
			t.Errorf("format %q: response.completed's messages %s, want %s\n%s", format, texts, want, b)
		}
	}
}
