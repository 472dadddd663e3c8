package chat

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/streamtest"
)

func chunks(events ...string) []byte {
	var b bytes.Buffer
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.Bytes()
}

// runRound runs one upstream round through s (see streamtest.RunRound).
func runRound(s *Stream, final bool, body []byte) (string, wire.RoundEnd) {
	return streamtest.RunRound(s, final, body)
}

func TestStreamTwoRounds(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	out1, end1 := runRound(s, false, chunks(
		`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":""}}]},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"skill_id\":\"x\"}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`))
	if end1.Loop == nil || len(end1.Loop.Calls) != 1 || strings.Contains(out1, "load_skill") || strings.Contains(out1, "[DONE]") {
		t.Fatalf("round 1: %+v\n%s", end1, out1)
	}
	out2, end2 := runRound(s, false, chunks(
		`{"id":"c2","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"c2","choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":null}]}`,
		`{"id":"c2","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`[DONE]`))
	if end2.Loop != nil || end2.Incomplete {
		t.Fatalf("round 2: %+v", end2)
	}
	if n := strings.Count(out1+out2, `"role"`); n != 1 {
		t.Errorf("the client got %d role deltas, want 1:\n%s%s", n, out1, out2)
	}
	if strings.Contains(out2, `"c2"`) || !strings.Contains(out2, "Done.") || !strings.HasSuffix(out2, "data: [DONE]\n\n") {
		t.Errorf("round 2 relayed as:\n%s", out2)
	}
}

func TestStreamIncomplete(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(string) bool { return false })
	_, end := runRound(s, false, chunks(`{"id":"c1","choices":[{"index":0,"delta":{"content":"Hal"},"finish_reason":null}]}`))
	if !end.Incomplete {
		t.Fatal("a stream without finish_reason or [DONE] must be incomplete")
	}
}

// clientCalls assembles the tool calls a client reads from out, by index as
// the SDKs do; a delta without an index is reported as index -1.
func clientCalls(t *testing.T, out string) map[int][2]string {
	t.Helper()
	calls := map[int][2]string{}
	rd := wire.NewEventReader(strings.NewReader(out))
	for {
		ev, err := rd.Next()
		if err != nil {
			return calls
		}
		var ch chunk
		if !ev.HasData || isDone(ev.Data) || json.Unmarshal(ev.Data, &ch) != nil || len(ch.Choices) == 0 {
			continue
		}
		for _, d := range ch.Choices[0].Delta.ToolCalls {
			i := -1
			if d.Index != nil {
				i = *d.Index
			}
			c := calls[i]
			if d.Function.Name != "" {
				c[0] = d.Function.Name
			}
			c[1] += d.Function.Arguments
			calls[i] = c
		}
	}
}

func TestStreamToolCallIndex(t *testing.T) {
	const role = `{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	tc := func(calls string) string {
		return `{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[` + calls + `]},"finish_reason":null}]}`
	}
	fin := `{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`
	paris := `"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`
	rome := `"function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}`
	load := `"function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"}`
	for _, c := range []struct {
		name   string
		events []string
		client map[int][2]string // what the client assembles
		loop   []string          // the arguments of the proxy's calls answered
	}{
		{"indexed fragments", []string{role, tc(`{"index":0,"id":"a","type":"function","function":{"name":"get_weather","arguments":""}}`),
			tc(`{"index":0,"function":{"arguments":"{\"city\":"}}`), tc(`{"index":0,"function":{"arguments":"\"Paris\"}"}}`),
			tc(`{"index":1,"id":"b",` + rome + `}`), fin},
			map[int][2]string{0: {"get_weather", `{"city":"Paris"}`}, 1: {"get_weather", `{"city":"Rome"}`}}, nil},
		{"no index, whole calls", []string{role, tc(`{"id":"a","type":"function",` + paris + `}`), tc(`{"id":"b","type":"function",` + rome + `}`), fin},
			map[int][2]string{0: {"get_weather", `{"city":"Paris"}`}, 1: {"get_weather", `{"city":"Rome"}`}}, nil},
		{"no index, two calls in one delta", []string{role, tc(`{"id":"a",` + paris + `},{"id":"b",` + rome + `}`), fin},
			map[int][2]string{0: {"get_weather", `{"city":"Paris"}`}, 1: {"get_weather", `{"city":"Rome"}`}}, nil},
		{"no index, argument pieces continue the last call", []string{role, tc(`{"id":"a","function":{"name":"get_weather","arguments":"{\"city\":"}}`),
			tc(`{"function":{"arguments":"\"Paris\"}"}}`), tc(`{"id":"a","function":{"arguments":""}}`), tc(`{"id":"b",` + rome + `}`), fin},
			map[int][2]string{0: {"get_weather", `{"city":"Paris"}`}, 1: {"get_weather", `{"city":"Rome"}`}}, nil},
		{"no index, names without ids", []string{role, tc(`{` + paris + `}`), tc(`{` + rome + `}`), fin},
			map[int][2]string{0: {"get_weather", `{"city":"Paris"}`}, 1: {"get_weather", `{"city":"Rome"}`}}, nil},
		{"no index, load_skill then a client call", []string{role, tc(`{"id":"a",` + load + `}`), tc(`{"id":"b",` + paris + `}`), fin},
			map[int][2]string{}, []string{`{"skill_id":"x"}`}},
		{"no index, a client call then load_skill", []string{role, tc(`{"id":"a",` + paris + `}`), tc(`{"id":"b",` + load + `}`), fin},
			map[int][2]string{0: {"get_weather", `{"city":"Paris"}`}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
			s := r.NewStream(func(n string) bool { return n == "load_skill" })
			out, end := runRound(s, false, chunks(append(c.events, `[DONE]`)...))
			if got := clientCalls(t, out); !maps.Equal(got, c.client) {
				t.Errorf("client calls %v, want %v\n%s", got, c.client, out)
			}
			var loop []string
			if end.Loop != nil {
				for _, tc := range end.Loop.Calls {
					if tc.Name != "load_skill" {
						t.Errorf("looped on %s", tc.Name)
					}
					loop = append(loop, string(tc.Arguments))
				}
			}
			if !slices.Equal(loop, c.loop) {
				t.Errorf("proxy calls %q, want %q", loop, c.loop)
			}
		})
	}
}

func TestStreamRoleOnce(t *testing.T) {
	ch := func(delta, finish string) string {
		return `{"id":"c1","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	load := `"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"}}]`
	answer := []string{ch(`{"role":"assistant","content":""}`, "null"), ch(`{"content":"Done."}`, "null"), ch(`{}`, `"stop"`)}
	ollamaAnswer := []string{ch(`{"role":"assistant","content":"Done."}`, "null"), ch(`{"role":"assistant","content":" "}`, "null"),
		ch(`{"role":"assistant","content":""}`, `"stop"`)}
	for _, c := range []struct {
		name   string
		rounds [][]string
	}{
		{"openai", [][]string{{ch(`{"role":"assistant","content":""}`, "null"), ch(`{`+load+`}`, "null"), ch(`{}`, `"tool_calls"`)}, answer}},
		// Ollama: the role in every chunk, a tool-call answer in one chunk.
		{"ollama", [][]string{{ch(`{"role":"assistant","content":"",`+load+`}`, "null"), ch(`{"role":"assistant","content":""}`, `"tool_calls"`)}, ollamaAnswer}},
		{"call and finish in one chunk", [][]string{{ch(`{"role":"assistant","content":null,`+load+`}`, `"tool_calls"`)}, ollamaAnswer}},
		{"no role before the last round", [][]string{{ch(`{`+load+`}`, "null"), ch(`{}`, `"tool_calls"`)}, answer}},
		{"no role at all", [][]string{{ch(`{`+load+`}`, `"tool_calls"`)}, {ch(`{"content":"Done."}`, `"stop"`)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
			s := r.NewStream(func(n string) bool { return n == "load_skill" })
			var out string
			for i, evs := range c.rounds {
				o, end := runRound(s, false, chunks(append(evs, `[DONE]`)...))
				if (end.Loop != nil) != (i < len(c.rounds)-1) {
					t.Fatalf("round %d: %+v", i, end)
				}
				out += o
			}
			want := 1
			if c.name == "no role at all" {
				want = 0
			}
			first, _, _ := strings.Cut(strings.TrimPrefix(out, "data: "), "\n")
			if n := strings.Count(out, `"role"`); n != want || want > 0 && !hasRole([]byte(first)) {
				t.Errorf("the client got %d role deltas, want %d on its first chunk:\n%s", n, want, out)
			}
			if !strings.Contains(out, "Done.") || strings.Contains(out, "load_skill") {
				t.Errorf("the client got:\n%s", out)
			}
		})
	}
}

func TestStreamTurnKeepsReasoning(t *testing.T) {
	ch := func(delta, finish string) string {
		return `{"id":"c1","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	load := ch(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{}"}}]}`, "null")
	fin := ch(`{}`, `"tool_calls"`)
	calls := `"tool_calls":[{"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{}"}}]`
	opening := []string{ch(`{"role":"assistant","content":""}`, "null"), load, fin}
	for _, c := range []struct {
		name   string
		rounds [][]string // the last one loops
		turn   string
	}{
		{"none", [][]string{opening}, `{"role":"assistant","content":null,` + calls + `}`},
		{"deepseek reasoning_content", [][]string{{ch(`{"role":"assistant","content":null,"reasoning_content":""}`, "null"),
			ch(`{"reasoning_content":"The user "}`, "null"), ch(`{"reasoning_content":"wants x."}`, "null"), load, fin}},
			`{"role":"assistant","content":null,"reasoning_content":"The user wants x.",` + calls + `}`},
		{"vllm reasoning and text", [][]string{{ch(`{"role":"assistant","reasoning":"hm"}`, "null"), ch(`{"reasoning":", x"}`, "null"),
			ch(`{"content":"Loading."}`, "null"), load, fin}},
			`{"role":"assistant","content":"Loading.","reasoning":"hm, x",` + calls + `}`},
		// Ollama: a role in every chunk; a later round's chunks lose it.
		{"later round", [][]string{opening, {ch(`{"role":"assistant","content":"","reasoning":"again"}`, "null"),
			ch(`{"role":"assistant","content":"","reasoning":"?"}`, "null"), load, fin}},
			`{"role":"assistant","content":null,"reasoning":"again?",` + calls + `}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
			s := r.NewStream(func(n string) bool { return n == "load_skill" })
			var end wire.RoundEnd
			for _, evs := range c.rounds {
				_, end = runRound(s, false, chunks(append(evs, `[DONE]`)...))
				if end.Loop == nil {
					t.Fatalf("no loop: %+v", end)
				}
			}
			// A call id repeated from an earlier round is renamed (see wire.CallID).
			want := strings.Replace(c.turn, `"call_1"`, `"`+end.Loop.Calls[0].ID+`"`, 1)
			if got := string(end.Loop.Turn); got != want {
				t.Errorf("turn\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// Gemini's OpenAI endpoint streams each call whole, with its thought
// signature in extra_content, and refuses a later request whose call lost
// it: the client's calls are relayed with it, the proxy's sent back with it.
func TestStreamKeepsToolCallExtras(t *testing.T) {
	const sig = `"extra_content":{"google":{"thought_signature":"c2ln"}}`
	ch := func(delta, finish string) string {
		return `{"id":"c1","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	call := func(id, name string) string {
		return ch(`{"role":"assistant","tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"`+name+`","arguments":"{}"},`+sig+`}]}`, "null")
	}
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	_, end := runRound(s, false, chunks(call("call_1", "load_skill"), ch(`{}`, `"tool_calls"`), `[DONE]`))
	if end.Loop == nil || !strings.Contains(string(end.Loop.Turn), sig) {
		t.Fatalf("the proxy's call goes back without its signature: %+v %s", end, end.Loop.Turn)
	}
	out, _ := runRound(s, false, chunks(call("call_2", "get_weather"), ch(`{}`, `"tool_calls"`), `[DONE]`))
	if !strings.Contains(out, `"name":"get_weather"`) || !strings.Contains(out, sig) {
		t.Errorf("the client's call is relayed without its signature:\n%s", out)
	}
}

// OpenRouter streams the model's reasoning as delta.reasoning_details, an
// array of objects per chunk: each fragment names its detail by index, and
// a detail's text, summary or data comes in pieces across chunks (its
// signature, id and format once, a first fragment may carry them empty).
// The follow-up's assistant message must carry the details merged, as a
// JSON answer has them in message.reasoning_details: OpenRouter needs them
// back to continue the model's reasoning after its tool calls. The shapes
// are those of OpenRouter streams recorded from Claude (reasoning.text,
// signed) and GPT-5 (reasoning.summary pieces, then reasoning.encrypted).
func TestStreamTurnKeepsReasoningDetails(t *testing.T) {
	ch := func(delta, finish string) string {
		return `{"id":"gen-1","provider":"Anthropic","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `,"native_finish_reason":null}]}`
	}
	rd := func(reasoning string, details ...string) string {
		return ch(`{"role":"assistant","content":"","reasoning":`+reasoning+`,"reasoning_details":[`+strings.Join(details, ",")+`]}`, "null")
	}
	load := ch(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{}"}}]}`, "null")
	fin := ch(`{"role":"assistant","content":"","reasoning":null,"reasoning_details":[]}`, `"tool_calls"`)
	calls := `"tool_calls":[{"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{}"}}]`
	const anth = `"format":"anthropic-claude-v1"`
	const oai = `"format":"openai-responses-v1"`
	for _, c := range []struct {
		name    string
		events  []string
		details string // the turn's reasoning_details
		reason  string // the turn's reasoning ("" for none)
	}{
		{"signed text in pieces", []string{
			rd("null"),
			rd("null", `{"type":"reasoning.text","text":"","signature":"",`+anth+`,"index":0}`),
			rd(`"The user "`, `{"type":"reasoning.text","text":"The user ",`+anth+`,"index":0}`),
			rd(`"wants \"x\"."`, `{"type":"reasoning.text","text":"wants \"x\".",`+anth+`,"index":0}`),
			rd("null", `{"type":"reasoning.text","signature":"c2ln",`+anth+`,"index":0}`),
			rd("null"),
			load, fin},
			`[{"type":"reasoning.text","text":"The user wants \"x\".","signature":"c2ln",` + anth + `,"index":0}]`,
			`The user wants \"x\".`},
		{"summary pieces then encrypted", []string{
			rd(`"**Loading"`, `{"type":"reasoning.summary","summary":"**Loading",`+oai+`,"index":0}`),
			rd(`" x**"`, `{"type":"reasoning.summary","summary":" x**",`+oai+`,"index":0}`),
			rd("null", `{"type":"reasoning.encrypted","data":"gAAA","id":"rs_1",`+oai+`,"index":1}`),
			load, fin},
			`[{"type":"reasoning.summary","summary":"**Loading x**",` + oai + `,"index":0},{"type":"reasoning.encrypted","data":"gAAA","id":"rs_1",` + oai + `,"index":1}]`,
			`**Loading x**`},
		{"two details in one chunk, then pieces of each", []string{
			rd("null", `{"type":"reasoning.text","text":"a",`+anth+`,"index":0}`, `{"type":"reasoning.encrypted","data":"ZZ",`+anth+`,"index":1}`),
			rd("null", `{"type":"reasoning.text","text":"b","signature":"s0",`+anth+`,"index":0}`),
			rd("null", `{"type":"reasoning.encrypted","data":"YY",`+anth+`,"index":1}`),
			load, fin},
			`[{"type":"reasoning.text","text":"ab",` + anth + `,"index":0,"signature":"s0"},{"type":"reasoning.encrypted","data":"ZZYY",` + anth + `,"index":1}]`,
			``},
		// Without an index a text piece continues the text before it.
		{"no index", []string{
			rd("null", `{"type":"reasoning.text","text":"one ",`+anth+`}`),
			rd("null", `{"type":"reasoning.text","text":"two",`+anth+`}`),
			load, fin},
			`[{"type":"reasoning.text","text":"one two",` + anth + `}]`,
			``},
		// Two details in one array are two details, index or not: an
		// upstream's JSON answer streamed by the proxy (Events) has the
		// whole array in one chunk, and joining two signed texts into one
		// breaks both signatures.
		{"no index, two details in one chunk", []string{
			rd("null", `{"type":"reasoning.text","text":"one","signature":"s1",`+anth+`}`, `{"type":"reasoning.text","text":"two","signature":"s2",`+anth+`}`),
			load, fin},
			`[{"type":"reasoning.text","text":"one","signature":"s1",` + anth + `},{"type":"reasoning.text","text":"two","signature":"s2",` + anth + `}]`,
			``},
		{"no index, a piece then a new detail in one chunk", []string{
			rd("null", `{"type":"reasoning.text","text":"on",`+anth+`}`),
			rd("null", `{"type":"reasoning.text","text":"e","signature":"s1",`+anth+`}`, `{"type":"reasoning.text","text":"two","signature":"s2",`+anth+`}`),
			load, fin},
			`[{"type":"reasoning.text","text":"one",` + anth + `,"signature":"s1"},{"type":"reasoning.text","text":"two","signature":"s2",` + anth + `}]`,
			``},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
			s := r.NewStream(func(n string) bool { return n == "load_skill" })
			out, end := runRound(s, false, chunks(append(c.events, `[DONE]`)...))
			if end.Loop == nil {
				t.Fatalf("no loop: %+v", end)
			}
			want := `{"role":"assistant","content":null,`
			if c.reason != "" {
				want += `"reasoning":"` + c.reason + `",`
			}
			want += `"reasoning_details":` + c.details + `,` + calls + `}`
			if got := string(end.Loop.Turn); got != want {
				t.Errorf("turn\n%s\nwant\n%s", got, want)
			}
			if !strings.Contains(out, `"reasoning_details":[{`) {
				t.Errorf("the client did not get the reasoning details as they came:\n%s", out)
			}
		})
	}
}

// Chunks that say nothing yet keep a stream's start held; anything else
// (text, a call, a finish reason, usage) ends it.
func TestPreamble(t *testing.T) {
	s := &Stream{}
	for _, tt := range []struct {
		out   string
		quiet bool
	}{
		{`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n", true},
		{`data: {"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[]}}]}` + "\n\n", true},
		{`data: {"choices":[{"delta":{"content":"\n\n"},"finish_reason":""}]}` + "\n\n", true},
		{`data: {"choices":[{"delta":{}}]}` + "\n\n: keep-alive\n\n", true},
		{`data: {"choices":[{"delta":{"content":"Hi"}}]}` + "\n\n", false},
		{`data: {"choices":[{"delta":{"reasoning_content":"hm"}}]}` + "\n\n", false},
		{`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"bash"}}]}}]}` + "\n\n", false},
		{`data: {"choices":[{"delta":{},"finish_reason":"stop"}]}` + "\n\n", false},
		{`data: {"choices":[],"usage":{"total_tokens":3}}` + "\n\n", false},
		{"data: [DONE]\n\n", false},
	} {
		if got := s.Preamble([]byte(tt.out)); got != tt.quiet {
			t.Errorf("%q: quiet %v, want %v", tt.out, got, tt.quiet)
		}
	}
}

// TestStreamLaterRoundsAddNothing: what a hidden round's upstream answer
// opens with (Azure's prompt_filter_results chunk), or what its JSON answer
// carries empty (annotations: []), does not reach the client a second time.
func TestStreamLaterRoundsAddNothing(t *testing.T) {
	const prelude = `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	out1, end1 := runRound(s, false, chunks(prelude,
		`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me check. "},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`))
	if end1.Loop == nil {
		t.Fatalf("round 1 does not loop: %+v", end1)
	}
	round2, err := Events([]byte(`{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Done.","annotations":[]},"finish_reason":"stop"}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	out2, _ := runRound(s, false, append(chunks(prelude), round2...))
	client := out1 + out2
	if n := strings.Count(client, "prompt_filter_results"); n != 1 {
		t.Errorf("the client got %d prompt_filter_results chunks, want the first round's:\n%s", n, client)
	}
	if strings.Contains(client, "annotations") || !strings.Contains(out2, "Done.") {
		t.Errorf("the client got:\n%s", client)
	}
}

// A custom (freeform) tool's call streams under "custom" (name, then input
// pieces), with no "function" member; the client gets it as it came, and it
// is never taken for the proxy's, whose tools are functions.
func TestStreamCustomToolCall(t *testing.T) {
	const role = `{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`
	tc := func(calls string) string {
		return `{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[` + calls + `]},"finish_reason":null}]}`
	}
	fin := `{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`
	load := `{"index":0,"id":"a","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"}}`
	type call struct{ typ, name, input string }
	for _, c := range []struct {
		name   string
		events []string
		client map[int]call
		loop   int
	}{
		{"custom call in pieces", []string{role, tc(`{"index":0,"id":"b","type":"custom","custom":{"name":"apply_patch","input":""}}`),
			tc(`{"index":0,"custom":{"input":"*** Begin"}}`), tc(`{"index":0,"custom":{"input":" Patch"}}`), fin},
			map[int]call{0: {"custom", "apply_patch", "*** Begin Patch"}}, 0},
		{"custom call whole", []string{role, tc(`{"index":0,"id":"b","type":"custom","custom":{"name":"apply_patch","input":"x"}}`), fin},
			map[int]call{0: {"custom", "apply_patch", "x"}}, 0},
		{"custom call named as the proxy's tool", []string{role, tc(`{"index":0,"id":"b","type":"custom","custom":{"name":"load_skill","input":"x"}}`), fin},
			map[int]call{0: {"custom", "load_skill", "x"}}, 0},
		{"function and custom calls", []string{role,
			tc(`{"index":0,"id":"a","type":"function","function":{"name":"get_weather","arguments":"{}"}}`),
			tc(`{"index":1,"id":"b","type":"custom","custom":{"name":"apply_patch","input":"p"}}`), fin},
			map[int]call{0: {"function", "get_weather", "{}"}, 1: {"custom", "apply_patch", "p"}}, 0},
		{"load_skill then a custom call: held and dropped", []string{role, tc(load),
			tc(`{"index":1,"id":"b","type":"custom","custom":{"name":"apply_patch","input":"p"}}`), fin},
			map[int]call{}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
			s := r.NewStream(func(n string) bool { return n == "load_skill" })
			out, end := runRound(s, false, chunks(append(c.events, `[DONE]`)...))
			got := map[int]call{}
			rd := wire.NewEventReader(strings.NewReader(out))
			for {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				var ch struct {
					Choices []struct {
						Delta struct {
							ToolCalls []map[string]json.RawMessage `json:"tool_calls"`
						} `json:"delta"`
					} `json:"choices"`
				}
				if !ev.HasData || isDone(ev.Data) || json.Unmarshal(ev.Data, &ch) != nil || len(ch.Choices) == 0 {
					continue
				}
				for _, d := range ch.Choices[0].Delta.ToolCalls {
					var i int
					var typ string
					var fn struct{ Name, Arguments string }
					var cu struct{ Name, Input string }
					json.Unmarshal(d["index"], &i)
					json.Unmarshal(d["type"], &typ)
					json.Unmarshal(d["function"], &fn)
					json.Unmarshal(d["custom"], &cu)
					if _, ok := d["function"]; ok && typ == "custom" {
						t.Errorf("a custom call's delta has a function member: %s", ev.Data)
					}
					g := got[i]
					if typ != "" {
						g.typ = typ
					}
					if n := fn.Name + cu.Name; n != "" {
						g.name = n
					}
					g.input += fn.Arguments + cu.Input
					got[i] = g
				}
			}
			if !maps.Equal(got, c.client) {
				t.Errorf("client calls %v, want %v\n%s", got, c.client, out)
			}
			loop := 0
			if end.Loop != nil {
				loop = len(end.Loop.Calls)
			}
			if loop != c.loop {
				t.Errorf("the proxy answered %d calls, want %d", loop, c.loop)
			}
		})
	}
}
