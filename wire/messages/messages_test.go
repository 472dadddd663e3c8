package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/streamtest"
)

func plan() *wire.Plan {
	env := `<skill_context id="pdf">BODY</skill_context>`
	return &wire.Plan{Catalog: "CAT", CatalogJSON: wire.Quote("CAT"), EnvelopeRole: "developer", Changed: true,
		Envelopes: []wire.Envelope{{ID: "pdf", Text: env, JSON: wire.Quote(env)}},
		Tools: wire.ToolSet{Server: []wire.ToolSpec{{Name: "load_skill", Description: "Load a skill.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"skill_id":{"type":"string"}},"required":["skill_id"]}`)}}}}
}

const tool = `{"name":"load_skill","description":"Load a skill.","input_schema":{"type":"object","properties":{"skill_id":{"type":"string"}},"required":["skill_id"]}}`
const env = `{"role":"user","content":[{"type":"text","text":"<skill_context id=\"pdf\">BODY</skill_context>"}]}`

func TestParseView(t *testing.T) {
	body := `{"model":"claude","max_tokens":100,"metadata":{"user_id":"u1"},` +
		`"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Be brief."}],` +
		`"messages":[{"role":"user","content":"make a pdf"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}]},{"type":"text","text":"thanks"}]}],` +
		`"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"any"},"stream":true}`
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	v := r.View()
	want := []wire.Turn{{Role: "system", Text: "You are Claude Code.\nBe brief."}, {Role: "user", Text: "make a pdf"},
		{Role: "assistant"}, {Role: "tool", Text: "ok", Tool: "Bash"}, {Role: "user", Text: "thanks"}}
	if len(v.Turns) != len(want) {
		t.Fatalf("turns %+v", v.Turns)
	}
	for i := range want {
		if v.Turns[i] != want[i] {
			t.Errorf("turn %d %+v, want %+v", i, v.Turns[i], want[i])
		}
	}
	if v.User != "u1" || !v.Stream || !v.ToolChoice.Required || len(v.Called) != 1 || v.Called[0] != "Bash" ||
		len(v.Tools) != 2 || v.Tools[0].Name != "Bash" || v.Tools[1].Name != "" {
		t.Errorf("view %+v", v)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ body, param, msg string }{
		{`{"model":"m"}`, "messages", "missing required parameter"},
		{`{"system":"a","messages":[{"role":"user","content":"x"}],"system":"b"}`, "system", "'system' appears more than once"},
		{`{"messages":[]}`, "messages", "at least one message"},
		{`{"messages":[{"role":"","content":"x"}]}`, "messages[0].role", `must not be empty`},
		{`{"messages":[{"role":"user"}]}`, "messages[0].content", "missing required parameter"},
		{`{"messages":[{"Role":"user","content":"x"}]}`, "messages[0].role", "missing required parameter"},
		{`{"messages":[{"role":"user","Content":"x"}]}`, "messages[0].content", "missing required parameter"},
		{`{"messages":[{"role":"user","content":5}]}`, "messages[0].content", "must be a string or an array"},
		{`{"system":5,"messages":[{"role":"user","content":"x"}]}`, "system", "must be a string or an array of text blocks"},
		// An array that is not one of blocks names the element at fault.
		{`{"messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`, "messages[0].content[0].text", "must be a string, got a number"},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},"hi"]}]}`, "messages[0].content[1]", "must be a content block object, got a string"},
		{`{"system":[{"type":5}],"messages":[{"role":"user","content":"x"}]}`, "system[0].type", "must be a string, got a number"},
		{`{"system":["hi"],"messages":[{"role":"user","content":"x"}]}`, "system[0]", "must be a text block object, got a string"},
		{`{"tools":{},"messages":[{"role":"user","content":"x"}]}`, "tools", "must be an array"},
		{`{"max_tokens":-5,"messages":[{"role":"user","content":"x"}]}`, "max_tokens", "must be at least 1, got -5"},
		{`{"max_tokens":"100","messages":[{"role":"user","content":"x"}]}`, "max_tokens", "must be an integer, got a string"},
		{`{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].role", `must be one of user, assistant or system, got "tool"`},
		{`{"messages":[{"role":1,"content":"x"}]}`, "messages[0].role", "must be a string, got a number"},
		{`{"tools":[3],"messages":[{"role":"user","content":"x"}]}`, "tools[0]", "must be a tool object"},
		{"{\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}", "messages[0].content", "is not valid UTF-8"},
	} {
		_, err := Parse([]byte(tt.body))
		we, ok := err.(*wire.Error)
		if !ok || we.Status != 400 || we.Param != tt.param || !strings.Contains(we.Message, tt.msg) {
			t.Errorf("%s: %v, want %s %q", tt.body, err, tt.param, tt.msg)
		}
	}
	e := ErrorJSON(&wire.Error{Status: 400, Param: "messages", Message: "missing required parameter: 'messages'"})
	if string(e) != `{"type":"error","error":{"type":"invalid_request_error","message":"missing required parameter: 'messages'"}}` {
		t.Errorf("envelope %s", e)
	}
	if e := ErrorJSON(&wire.Error{Status: 502, Kind: wire.KindUpstream, Message: "upstream unreachable"}); !strings.Contains(string(e), `"api_error"`) {
		t.Errorf("502 envelope %s", e)
	}
}

func TestRender(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"system blocks kept byte for byte, catalog last",
			`{"model":"m","system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"x"}],"tools":[{"name":"Bash","input_schema":{}}]}`,
			`{"model":"m","system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}},{"type":"text","text":"CAT"}],"messages":[{"role":"user","content":"x"},` + env + `],"tools":[{"name":"Bash","input_schema":{}},` + tool + `]}`},
		{"string system",
			`{"system":"S","messages":[{"role":"user","content":"x"}]}`,
			`{"system":"S\n\nCAT","messages":[{"role":"user","content":"x"},` + env + `],"tools":[` + tool + `]}`},
		{"no system",
			`{"messages":[{"role":"user","content":"x"}],"max_tokens":5}`,
			`{"messages":[{"role":"user","content":"x"},` + env + `],"max_tokens":5,"system":"CAT","tools":[` + tool + `]}`},
		{"before a prefill",
			`{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"{"}]}`,
			`{"messages":[{"role":"user","content":"x"},` + env + `,{"role":"assistant","content":"{"}],"system":"CAT","tools":[` + tool + `]}`},
		// Automatic caching: the breakpoint stays on the client's last
		// block (the history), not on the envelopes.
		{"automatic caching, string content",
			`{"cache_control":{"type":"ephemeral"},"messages":[{"role":"user","content":"x"}]}`,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]},` + env + `],"system":"CAT","tools":[` + tool + `]}`},
		{"automatic caching, last cacheable block, before a prefill",
			`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"},{"type":"text","text":""}]},{"role":"assistant","content":"{"}],"cache_control":{"type":"ephemeral","ttl":"1h"}}`,
			`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r","cache_control":{"type":"ephemeral","ttl":"1h"}},{"type":"text","text":""}]},` + env + `,{"role":"assistant","content":"{"}],"system":"CAT","tools":[` + tool + `]}`},
		{"automatic caching, the last block already a breakpoint",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}],"cache_control":{"type":"ephemeral"},"max_tokens":5}`,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]},` + env + `],"max_tokens":5,"system":"CAT","tools":[` + tool + `]}`},
		{"automatic caching, nothing cacheable: kept",
			`{"cache_control":{"type":"ephemeral"},"messages":[{"role":"user","content":""}]}`,
			`{"cache_control":{"type":"ephemeral"},"messages":[{"role":"user","content":""},` + env + `],"system":"CAT","tools":[` + tool + `]}`},
		// "cache_control": null is no breakpoint: the automatic one takes
		// its place rather than being dropped with no breakpoint left.
		{"automatic caching, the last block's cache_control null",
			`{"cache_control":{"type":"ephemeral"},"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":null}]}]}`,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]},` + env + `],"system":"CAT","tools":[` + tool + `]}`},
		{"automatic caching, null on an uncacheable last block, breakpoint before it",
			`{"cache_control":{"type":"ephemeral"},"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"1h"}},{"type":"text","text":"","cache_control":null}]}]}`,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"1h"}},{"type":"text","text":"","cache_control":null}]},` + env + `],"system":"CAT","tools":[` + tool + `]}`},
		{"top-level cache_control null: no automatic caching, kept",
			`{"cache_control":null,"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":null}]}]}`,
			`{"cache_control":null,"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":null}]},` + env + `],"system":"CAT","tools":[` + tool + `]}`},
	}
	for _, tt := range tests {
		r, err := Parse([]byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Render(plan())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// Gating that withholds every client tool drops tools and tool_choice,
// also when they are the body's last members (the edits once overlapped
// on the comma between them and Render panicked).
func TestRenderWithholdsAll(t *testing.T) {
	r, err := Parse([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"bash","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := plan()
	p.Tools = wire.ToolSet{Withheld: []int{0}}
	got, err := r.Render(p)
	if want := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},` + env + `],"system":"CAT"}`; err != nil || string(got) != want {
		t.Fatalf("\n got %s\nwant %s (%v)", got, want, err)
	}
	// With automatic caching's cache_control beside them, also removed.
	r, err = Parse([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"bash","input_schema":{"type":"object"}}],"cache_control":{"type":"ephemeral"},"tool_choice":{"type":"auto"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err = r.Render(p)
	if want := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]},` + env + `],"system":"CAT"}`; err != nil || string(got) != want {
		t.Fatalf("\n got %s\nwant %s (%v)", got, want, err)
	}
}

const answerWithCall = `{"id":"msg_1","type":"message","role":"assistant","content":[` +
	`{"type":"thinking","thinking":"I need the pdf skill.","signature":"SIG"},` +
	`{"type":"text","text":"Loading."},` +
	`{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{"skill_id":"pdf"}},` +
	`{"type":"tool_use","id":"toolu_2","name":"Bash","input":{"command":"ls"}}],` +
	`"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}`

const finalAnswer = `{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":3}}`

func TestToolLoop(t *testing.T) {
	body := []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"make a pdf"}]}`)
	r, _ := Parse(body)
	mine := func(n string) bool { return n == "load_skill" }
	ans, usage, ok := r.ReadAnswer([]byte(answerWithCall), 0, mine)
	if !ok || ans == nil || len(ans.Calls) != 1 || ans.Calls[0].ID != "toolu_1" || string(ans.Calls[0].Arguments) != `{"skill_id":"pdf"}` ||
		string(usage) != `{"input_tokens":10,"output_tokens":5}` {
		t.Fatalf("answer %+v usage %s", ans, usage)
	}
	next, err := r.FollowUp(body, ans, []wire.ToolResult{{CallID: "toolu_1", Content: "ENV"}}, wire.ToolSet{})
	if err != nil {
		t.Fatal(err)
	}
	// max_tokens bounds the whole message: the follow-up carries what round 1's 5 output tokens left.
	want := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"make a pdf"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"I need the pdf skill.","signature":"SIG"},{"type":"text","text":"Loading."},{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{"skill_id":"pdf"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ENV"}]}]}`
	if string(next) != want {
		t.Fatalf("follow-up\n got %s\nwant %s", next, want)
	}
	// A result the tool failed with is the API's is_error tool_result.
	r2, _ := Parse(body)
	ans2, _, _ := r2.ReadAnswer([]byte(answerWithCall), 0, mine)
	failed, err := r2.FollowUp(body, ans2, []wire.ToolResult{{CallID: "toolu_1", Content: "<skill_error/>", Failed: true}}, wire.ToolSet{})
	if err != nil || !strings.Contains(string(failed), `{"type":"tool_result","tool_use_id":"toolu_1","content":"<skill_error/>","is_error":true}`) {
		t.Fatalf("failed result: %v %s", err, failed)
	}
	out, err := r.Final([]byte(finalAnswer), 1, json.RawMessage(`{"input_tokens":30,"output_tokens":8}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The looping round's thinking and text are the client's too: the
	// thinking block opens the client's assistant turn, as the API wants.
	if !strings.Contains(string(out), `"content":[{"type":"thinking","thinking":"I need the pdf skill.","signature":"SIG"},{"type":"text","text":"Loading."},{"type":"text","text":"Done."}]`) ||
		!strings.Contains(string(out), `"usage":{"input_tokens":30,"output_tokens":8}`) {
		t.Fatalf("final %s", out)
	}
}

func TestFinalStripsAtTheLimit(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}]}`))
	onlyProxy := `{"id":"m","type":"message","content":[{"type":"text","text":"hm"},{"type":"tool_use","id":"a","name":"load_skill","input":{}}],"stop_reason":"tool_use"}`
	out, err := r.Final([]byte(onlyProxy), 4, nil, func(n string) bool { return n == "load_skill" })
	if err != nil || strings.Contains(string(out), "load_skill") || !strings.Contains(string(out), `"stop_reason":"end_turn"`) {
		t.Fatalf("%s %v", out, err)
	}
}

func sse(events ...string) []byte {
	var b bytes.Buffer
	for _, e := range events {
		var typ struct{ Type string }
		_ = json.Unmarshal([]byte(e), &typ)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ.Type, e)
	}
	return b.Bytes()
}

// runRound runs one upstream round through s (see streamtest.RunRound).
func runRound(s *Stream, final bool, body []byte) (string, wire.RoundEnd) {
	return streamtest.RunRound(s, final, body)
}

func TestStream(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	out1, end1 := runRound(s, false, sse(
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"need pdf"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"ping"}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"skill_id\":"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"pdf\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}`,
		`{"type":"message_stop"}`,
	))
	if end1.Loop == nil || len(end1.Loop.Calls) != 1 || string(end1.Loop.Calls[0].Arguments) != `{"skill_id":"pdf"}` {
		t.Fatalf("round 1 %+v", end1)
	}
	if strings.Contains(out1, "load_skill") || strings.Contains(out1, "message_delta") || strings.Contains(out1, "message_stop") {
		t.Fatalf("round 1 leaked:\n%s", out1)
	}
	// Thinking before the proxy's call waits for the next block the client
	// is shown (a later round may bring its own thinking, which replaces
	// it: see TestThinkingAcrossRounds).
	if strings.Contains(out1, "need pdf") {
		t.Fatalf("round 1's thinking relayed before the next round decides its fate:\n%s", out1)
	}
	if !strings.Contains(string(end1.Loop.Turn), `{"type":"thinking","thinking":"need pdf","signature":"SIG"}`) {
		t.Fatalf("the follow-up must keep the thinking block: %s", end1.Loop.Turn)
	}
	out2, end2 := runRound(s, false, sse(
		`{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","content":[],"usage":{"input_tokens":30,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Done."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`,
		`{"type":"message_stop"}`,
	))
	if end2.Loop != nil {
		t.Fatal("round 2 is the answer")
	}
	all := out1 + out2
	// Round 2 opens with text: round 1's thinking is the client's, shown
	// first (the turn it opens may end in the client's tool_use).
	if !strings.Contains(out2, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"need pdf"}}`) ||
		!strings.Contains(out2, `"signature":"SIG"`) {
		t.Fatalf("round 1's thinking not relayed before round 2's text:\n%s", out2)
	}
	if strings.Count(all, "event: message_start") != 1 || !strings.Contains(out2, `{"type":"content_block_start","index":1,"content_block":{"type":"text"`) ||
		!strings.Contains(out2, `"usage":{"input_tokens":30,"output_tokens":4,"iterations":[{"input_tokens":10,"output_tokens":7,"type":"message","cache_creation_input_tokens":0,"cache_read_input_tokens":0},{"input_tokens":30,"output_tokens":4,"type":"message","cache_creation_input_tokens":0,"cache_read_input_tokens":0}]}`) || !strings.Contains(all, "event: ping") {
		t.Fatalf("stream:\n%s", all)
	}
}

// The proxy's tool_use reads its input as the SDKs do: the input_json_deltas
// when there are any (they replace the start's), else the input the block
// started with, which a server that sends the call whole puts there.
func TestStreamToolInputFromStart(t *testing.T) {
	start := func(input string) string {
		return `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"load_skill","input":` + input + `}}`
	}
	delta := func(js string) string {
		b, _ := json.Marshal(js)
		return `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":` + string(b) + `}}`
	}
	for _, c := range []struct {
		name   string
		blocks []string
		want   string
	}{
		{"deltas", []string{start(`{}`), delta(`{"skill_id":`), delta(`"pdf"}`)}, `{"skill_id":"pdf"}`},
		{"whole in the start", []string{start(`{"skill_id":"pdf"}`)}, `{"skill_id":"pdf"}`},
		{"deltas replace the start", []string{start(`{"skill_id":"x"}`), delta(`{"skill_id":"pdf"}`)}, `{"skill_id":"pdf"}`},
		{"neither", []string{start(`{}`)}, `{}`},
		{"no input at all", []string{`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"load_skill"}}`}, `{}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
			s := r.NewStream(func(n string) bool { return n == "load_skill" })
			events := []string{`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`}
			events = append(events, c.blocks...)
			events = append(events, `{"type":"content_block_stop","index":0}`,
				`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}`,
				`{"type":"message_stop"}`)
			_, end := runRound(s, false, sse(events...))
			if end.Loop == nil || len(end.Loop.Calls) != 1 {
				t.Fatalf("no loop: %+v", end)
			}
			if got := string(end.Loop.Calls[0].Arguments); got != c.want {
				t.Errorf("arguments %s, want %s", got, c.want)
			}
			if !strings.Contains(string(end.Loop.Turn), `"input":`+c.want) {
				t.Errorf("the follow-up's tool_use: %s", end.Loop.Turn)
			}
		})
	}
}

// FuzzParse: validation never panics, answers 400 in API terms, and what it
// accepts renders into a body it accepts again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":"{"}]}`,
		`{"system":null,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`,
		`{"messages":[]}`, `[]`, ``} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"messages":[{"role":"Go ","content":"x"}]}`)) // a role quoted back in the error
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Parse(in)
		if err != nil {
			if we, ok := err.(*wire.Error); !ok || we.Status != 400 || streamtest.DecoderLeak(we.Message, in) {
				t.Fatalf("error %v", err)
			}
			return
		}
		out, err := r.Render(plan())
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("rendered invalid JSON from %s:\n%s", in, out)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("rendered body does not parse: %v\n%s", err, out)
		}
	})
}

func TestStreamIncomplete(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(string) bool { return false })
	_, end := runRound(s, false, sse(
		`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	))
	if !end.Incomplete {
		t.Fatal("a stream without message_stop must be incomplete")
	}
}

// TestThinkingAcrossRounds: thinking before the proxy's call is the
// client's unless the next round opens with thinking of its own; the client
// never gets one run of thinking blocks from two responses (the API refuses
// it as modified).
func TestThinkingAcrossRounds(t *testing.T) {
	const (
		a    = `{"type":"thinking","thinking":"A","signature":"SA"}`
		b    = `{"type":"thinking","thinking":"B","signature":"SB"}`
		load = `{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{}}`
		bash = `{"type":"tool_use","id":"toolu_2","name":"Bash","input":{}}`
		text = `{"type":"text","text":"Done."}`
	)
	msg := func(stop string, blocks ...string) []byte {
		return []byte(`{"id":"m","type":"message","role":"assistant","content":[` + strings.Join(blocks, ",") + `],"stop_reason":"` + stop + `"}`)
	}
	tests := []struct {
		name         string
		first, final []byte
		want         string // the final message's content
	}{
		{"next round thinks again: its run only", msg("tool_use", a, load), msg("tool_use", b, bash), `[` + b + `,` + bash + `]`},
		{"next round does not think: the hidden round's thinking opens the turn", msg("tool_use", a, load), msg("tool_use", bash), `[` + a + `,` + bash + `]`},
		{"text between: both runs kept", msg("tool_use", a, text, load), msg("end_turn", b, text), `[` + a + `,` + text + `,` + b + `,` + text + `]`},
	}
	mine := func(n string) bool { return n == "load_skill" }
	for _, tt := range tests {
		body := []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`)
		r, _ := Parse(body)
		ans, _, _ := r.ReadAnswer(tt.first, 0, mine)
		if ans == nil || !strings.Contains(string(ans.Turn), a) {
			t.Fatalf("%s: the hidden turn must keep its thinking: %+v", tt.name, ans)
		}
		if _, err := r.FollowUp(body, ans, []wire.ToolResult{{CallID: "toolu_1", Content: "ENV"}}, wire.ToolSet{}); err != nil {
			t.Fatal(err)
		}
		if ans, _, _ := r.ReadAnswer(tt.final, 1, mine); ans != nil {
			t.Fatalf("%s: the last round loops", tt.name)
		}
		out, err := r.Final(tt.final, 1, nil, nil)
		if got := gjsonContent(out); err != nil || got != tt.want {
			t.Errorf("%s: content\n got %s\nwant %s (%v)", tt.name, got, tt.want, err)
		}
	}
}

func gjsonContent(msg []byte) string {
	var m struct{ Content json.RawMessage }
	_ = json.Unmarshal(msg, &m)
	return string(m.Content)
}

// TestRoundLimitNoticeWithThinking: an answer left with thinking only once
// the proxy's calls are stripped gets the notice, streamed or not.
func TestRoundLimitNoticeWithThinking(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}]}`))
	mine := func(n string) bool { return n == "load_skill" }
	raw := `{"id":"m","type":"message","content":[{"type":"thinking","thinking":"hm","signature":"S"},{"type":"tool_use","id":"a","name":"load_skill","input":{}}],"stop_reason":"tool_use"}`
	out, err := r.Final([]byte(raw), 1, nil, mine)
	if err != nil || !strings.Contains(string(out), `{"type":"thinking","thinking":"hm","signature":"S"},{"type":"text","text":"[skillrouter:`) {
		t.Fatalf("%s %v", out, err)
	}
	s := r.NewStream(mine)
	got, _ := runRound(s, true, sse(
		`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"a","name":"load_skill","input":{}}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":4}}`,
		`{"type":"message_stop"}`,
	))
	if !strings.Contains(got, `"thinking":"hm"`) || !strings.Contains(got, `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`) {
		t.Fatalf("stream:\n%s", got)
	}
}

// TestFollowUpContainer: the follow-up runs in the container the answer's
// code ran in (JSON: container.id; streams: message_delta's delta.container).
func TestFollowUpContainer(t *testing.T) {
	mine := func(n string) bool { return n == "load_skill" }
	answer := []byte(`{"id":"m","type":"message","content":[{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{}}],` +
		`"stop_reason":"tool_use","container":{"id":"container_1","expires_at":"2026-11-25T02:00:00Z"}}`)
	streamed := sse(
		`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"container":null,"usage":{"input_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{}}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null,"container":{"id":"container_1","expires_at":"2026-11-25T02:00:00Z"}},"usage":{"output_tokens":4}}`,
		`{"type":"message_stop"}`,
	)
	tests := []struct{ name, body, want string }{
		{"no container sent", `{"messages":[{"role":"user","content":"x"}]}`, `"container":"container_1"`},
		{"an id sent", `{"container":"container_0","messages":[{"role":"user","content":"x"}]}`, `{"container":"container_1",`},
		{"a container with skills", `{"container":{"skills":[{"type":"anthropic","skill_id":"pdf"}]},"messages":[{"role":"user","content":"x"}]}`,
			`{"container":{"skills":[{"type":"anthropic","skill_id":"pdf"}],"id":"container_1"},`},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			r, _ := Parse([]byte(tt.body))
			var ans *wire.Answer
			if stream {
				_, end := runRound(r.NewStream(mine), false, streamed)
				ans = end.Loop
			} else {
				ans, _, _ = r.ReadAnswer(answer, 0, mine)
			}
			if ans == nil {
				t.Fatalf("%s: no loop", tt.name)
			}
			next, err := r.FollowUp([]byte(tt.body), ans, []wire.ToolResult{{CallID: "toolu_1", Content: "ENV"}}, wire.ToolSet{})
			if err != nil || !strings.Contains(string(next), tt.want) {
				t.Errorf("%s (stream %v): follow-up %s, want %s (%v)", tt.name, stream, next, tt.want, err)
			}
		}
	}
}

// TestStreamErrorEndsIt: thinking still waiting when an error event ends
// the round is not relayed after it.
func TestStreamErrorEndsIt(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	got, end := runRound(s, false, sse(
		`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"a","name":"load_skill","input":{}}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	))
	if end.Loop != nil || !strings.HasSuffix(strings.TrimSpace(got), `"message":"Overloaded"}}`) {
		t.Fatalf("loop %v, stream:\n%s", end.Loop, got)
	}
}

// The thinking budget is read as the API reads it, the last repeat of a key
// winning, so the follow-up's lowered budget_tokens is the one the upstream
// checks against max_tokens.
func TestThinkingBudgetLastRepeat(t *testing.T) {
	r, err := Parse([]byte(`{"model":"m","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":2000,"budget_tokens":3999},"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.thinking(); got != 3999 {
		t.Fatalf("thinking() = %d, want the last repeat's 3999", got)
	}
	out, err := r.thinkingBudget(r.Body(), 2500)
	if err != nil {
		t.Fatal(err)
	}
	follow, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := follow.thinking(); got != 2499 {
		t.Fatalf("follow-up budget_tokens = %d, want 2499: %s", got, out)
	}
	for _, body := range []string{
		`{"max_tokens":4000,"thinking":{"type":"disabled","Type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"x"}]}`,
		`{"max_tokens":4000,"thinking":{"type":"enabled","type":"disabled","budget_tokens":2000},"messages":[{"role":"user","content":"x"}]}`,
	} {
		r, err := Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.thinking(); got != 0 {
			t.Errorf("%s: thinking() = %d, want 0 (disabled)", body, got)
		}
	}
}

// Claude Code's notes beside tool results are no new ask ("Tool loaded."
// after ToolSearch, the mark of an interrupted call): read as the user's,
// the note started a new turn in the middle of a task. The user's own text
// beside them is the user's. The MCP connector's mcp_tool_use and
// mcp_tool_result (in the assistant's content) name their tool as tool_use
// and tool_result do.
func TestParseToolResultNotes(t *testing.T) {
	body := `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"profile sales.csv"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ToolSearch","input":{}},{"type":"mcp_tool_use","id":"m1","name":"load_skill","server_name":"skills","input":{}},{"type":"mcp_tool_result","tool_use_id":"m1","content":[{"type":"text","text":"<skill_context id=\"x\">B</skill_context>"}]}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"found"},{"type":"text","text":"Tool loaded."}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"stopped","is_error":true},{"type":"text","text":"[Request interrupted by user for tool use]"},{"type":"text","text":"make a pdf instead"}]}]}`
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.Turn{{Role: "user", Text: "profile sales.csv"},
		{Role: "tool", Text: `<skill_context id="x">B</skill_context>`, Tool: "load_skill"}, {Role: "assistant"},
		{Role: "tool", Text: "found", Tool: "ToolSearch"},
		{Role: "assistant"},
		{Role: "tool", Text: "stopped", Tool: "Bash"}, {Role: "user", Text: "make a pdf instead"}}
	if got := r.View().Turns; !slices.Equal(got, want) {
		t.Errorf("turns\n%+v\nwant\n%+v", got, want)
	}
}

// ReportedUsage: the last round's usage, every round in iterations (a round
// the API itself made of several passes, compacting, gives its own).
func TestReportedUsage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rounds []string
		want   string
	}{
		{"none", nil, ""},
		{"two rounds", []string{`{"input_tokens":10,"output_tokens":7}`, `{"input_tokens":30,"output_tokens":4}`},
			`{"input_tokens":30,"output_tokens":4,"iterations":[{"input_tokens":10,"output_tokens":7,"type":"message","cache_creation_input_tokens":0,"cache_read_input_tokens":0},{"input_tokens":30,"output_tokens":4,"type":"message","cache_creation_input_tokens":0,"cache_read_input_tokens":0}]}`},
		{"cache written by round 1, read by round 2", []string{`{"input_tokens":10,"cache_creation_input_tokens":1000,"cache_read_input_tokens":5000,"output_tokens":7}`, `{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":6000,"output_tokens":4}`},
			// input + creation + read = 6030, the last round's context; creation above 0.
			`{"input_tokens":30,"cache_creation_input_tokens":1000,"cache_read_input_tokens":5000,"output_tokens":4,"iterations":[{"input_tokens":10,"cache_creation_input_tokens":1000,"cache_read_input_tokens":5000,"output_tokens":7,"type":"message"},{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":6000,"output_tokens":4,"type":"message"}]}`},
		{"the cache writes' breakdown adds up as their total", []string{`{"input_tokens":10,"cache_creation_input_tokens":5000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":5000,"ephemeral_1h_input_tokens":0},"output_tokens":7}`,
			`{"input_tokens":30,"cache_creation_input_tokens":100,"cache_read_input_tokens":5000,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":0},"output_tokens":4}`},
			`{"input_tokens":30,"cache_creation_input_tokens":5100,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":5100,"ephemeral_1h_input_tokens":0},"output_tokens":4,"iterations":[{"input_tokens":10,"cache_creation_input_tokens":5000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":5000,"ephemeral_1h_input_tokens":0},"output_tokens":7,"type":"message"},{"input_tokens":30,"cache_creation_input_tokens":100,"cache_read_input_tokens":5000,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":0},"output_tokens":4,"type":"message"}]}`},
		{"a compacted round", []string{`{"input_tokens":10,"output_tokens":7}`, `{"input_tokens":3,"output_tokens":4,"iterations":[{"type":"compaction","input_tokens":90,"output_tokens":9},{"type":"message","input_tokens":3,"output_tokens":4}]}`},
			`{"input_tokens":3,"output_tokens":4,"iterations":[{"input_tokens":10,"output_tokens":7,"type":"message","cache_creation_input_tokens":0,"cache_read_input_tokens":0},{"type":"compaction","input_tokens":90,"output_tokens":9},{"type":"message","input_tokens":3,"output_tokens":4}]}`},
	} {
		var u wire.Usage
		for _, r := range tc.rounds {
			u.Add(json.RawMessage(r))
		}
		if got := string(ReportedUsage(&u)); got != tc.want {
			t.Errorf("%s: %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// An upstream's Anthropic error body met after the client's stream began
// becomes its error event as it came (request_id included, which
// Anthropic's support asks for), on one line.
func TestUpstreamErrorEventKeepsTheBody(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(string) bool { return false })
	raw := "{\n  \"type\": \"error\",\n  \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"},\n  \"request_id\": \"req_011\"\n}\n"
	ev, msg := s.UpstreamErrorEvent(529, []byte(raw), 1)
	want := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"},\"request_id\":\"req_011\"}\n\n"
	if string(ev) != want || msg != "Overloaded" {
		t.Errorf("event %q (%q), want %q", ev, msg, want)
	}
}
