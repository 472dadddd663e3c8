package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/streamtest"
)

func plan() *wire.Plan {
	env := `<skill_context id="pdf">BODY</skill_context>`
	return &wire.Plan{Catalog: "CAT", CatalogJSON: wire.Quote("CAT"), EnvelopeRole: "user", Changed: true,
		Envelopes: []wire.Envelope{{ID: "pdf", Text: env, JSON: wire.Quote(env)}},
		Tools: wire.ToolSet{Server: []wire.ToolSpec{{Name: "load_skill", Description: "Load a skill.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"skill_id":{"type":"string"}},"required":["skill_id"]}`)}}}}
}

func TestParseView(t *testing.T) {
	body := `{"model":"gpt-5","instructions":"Be brief.","previous_response_id":"resp_1","input":[` +
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"env"}]},` +
		`{"role":"user","content":"make a pdf"},` +
		`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"xyz"},` +
		`{"type":"function_call","call_id":"c1","name":"shell","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"done"},` +
		`{"type":"item_reference","id":"msg_0"},{"id":"msg_1"},` + // the type of an item reference is optional
		`{"type":"some_future_item","x":1}],` +
		`"tools":[{"type":"function","name":"shell","parameters":{}},{"type":"web_search"}],"tool_choice":"required","stream":true}`
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	v := r.View()
	want := []wire.Turn{{Role: "system", Text: "Be brief."}, {Role: "developer", Text: "env"}, {Role: "user", Text: "make a pdf"},
		{Role: "assistant"}, {Role: "tool", Text: "done", Tool: "shell"}}
	if len(v.Turns) != len(want) {
		t.Fatalf("turns %+v", v.Turns)
	}
	for i := range want {
		if v.Turns[i] != want[i] {
			t.Errorf("turn %d %+v, want %+v", i, v.Turns[i], want[i])
		}
	}
	if !v.Stateful || !v.Stream || v.Model != "gpt-5" || !v.ToolChoice.Required || len(v.Called) != 1 ||
		len(v.Tools) != 2 || v.Tools[0].Name != "shell" || v.Tools[1].Name != "" {
		t.Errorf("view %+v", v)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ body, param, msg string }{
		{`[]`, "", "must be a JSON object"},
		{`{"input":"a","instructions":"x","input":"b"}`, "input", "'input' appears more than once"},
		{`{"input":5}`, "input", "'input' must be a string or an array of input items, got a number"},
		{`{"input":"x","max_output_tokens":"100"}`, "max_output_tokens", "must be an integer, got a string"},
		{`{"input":"x","max_output_tokens":0}`, "max_output_tokens", "must be at least 1, got 0"},
		{`{"input":[7]}`, "input[0]", "must be an input item object"},
		{`{"input":[{"type":"message","content":"x"}]}`, "input[0].role", "missing required parameter"},
		{`{"input":[{"type":"message","id":"msg_1","content":"x"}]}`, "input[0].role", "missing required parameter"},
		{`{"input":[{"content":"x"}]}`, "input[0].role", "missing required parameter"},
		{`{"input":[{"role":3,"content":"x"}]}`, "input[0].role", "must be a string"},
		{`{"input":[{"Role":"user","content":"x"}]}`, "input[0].role", "missing required parameter"},
		{`{"input":[{"type":"function_call","name":5}]}`, "input[0]", "has a field of the wrong type"},
		{`{"input":[{"role":"user","content":5}]}`, "input[0].content", "'input[0].content' must be a string or an array of content parts, got a number"},
		{`{"input":[{"type":"message","role":"user","content":{"type":"input_text"}}]}`, "input[0].content", "got an object"},
		{`{"input":[{"role":"tool","content":"x"}]}`, "input[0].role", `must be one of user, assistant, system or developer, got "tool"`},
		{`{"input":"x","tools":"web_search"}`, "tools", "must be an array of tool objects, got a string"},
		{`{"input":"x","tools":[[]]}`, "tools[0]", "must be a tool object"},
		{"{\"input\":\"caf\xe9\"}", "input", "'input' is not valid UTF-8"},
		{`{"input":"x","instructions":1}`, "instructions", "must be a string"},
		{`{"input":"x","tools":{}}`, "tools", "must be an array"},
		{`{"input":"x","stream":"yes"}`, "stream", "must be a boolean"},
		{`{"input":"x","conversation":5}`, "conversation", "must be a string or an object with an id, got a number"},
		{`{"input":"x","conversation":{"id":5}}`, "conversation", "must be a string or an object with an id"},
	} {
		_, err := Parse([]byte(tt.body))
		we, ok := err.(*wire.Error)
		if !ok || we.Status != 400 || we.Param != tt.param || !strings.Contains(we.Message, tt.msg) {
			t.Errorf("%s: %v, want %s %q", tt.body, err, tt.param, tt.msg)
		}
	}
}

func TestRender(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"string input, no instructions",
			`{"model":"m","input":"make a pdf","store":false}`,
			`{"model":"m","input":[{"role":"user","content":"make a pdf"},{"type":"message","role":"user","content":[{"type":"input_text","text":"<skill_context id=\"pdf\">BODY</skill_context>"}]}],"store":false,"instructions":"CAT","tools":[{"type":"function","name":"load_skill","description":"Load a skill.","parameters":{"type":"object","properties":{"skill_id":{"type":"string"}},"required":["skill_id"]},"strict":false}]}`},
		{"instructions and items kept byte for byte",
			`{"instructions": "Be brief.\u00e9" ,"input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}] ,"tools":[{"type":"web_search"}]}`,
			`{"instructions": "Be brief.\u00e9\n\nCAT" ,"input":[{"role":"user","content":[{"type":"input_text","text":"x"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"<skill_context id=\"pdf\">BODY</skill_context>"}]}] ,"tools":[{"type":"web_search"},{"type":"function","name":"load_skill","description":"Load a skill.","parameters":{"type":"object","properties":{"skill_id":{"type":"string"}},"required":["skill_id"]},"strict":false}]}`},
		{"null instructions",
			`{"instructions":null,"input":"x"}`,
			`{"instructions":"CAT","input":[{"role":"user","content":"x"},{"type":"message","role":"user","content":[{"type":"input_text","text":"<skill_context id=\"pdf\">BODY</skill_context>"}]}],"tools":[{"type":"function","name":"load_skill","description":"Load a skill.","parameters":{"type":"object","properties":{"skill_id":{"type":"string"}},"required":["skill_id"]},"strict":false}]}`},
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
		if _, err := Parse(got); err != nil {
			t.Errorf("%s: rendered body does not parse: %v", tt.name, err)
		}
	}
}

func TestRenderWithholdsAll(t *testing.T) {
	r, _ := Parse([]byte(`{"input":"x","tools":[{"type":"function","name":"bash","parameters":{}}],"tool_choice":"auto","parallel_tool_calls":true,"store":false}`))
	got, err := r.Render(&wire.Plan{Changed: true, Tools: wire.ToolSet{Withheld: []int{0}}})
	if err != nil || string(got) != `{"input":"x","store":false}` {
		t.Fatalf("%s %v", got, err)
	}
	// The members last in the body, with the catalog added after them
	// (the edits once overlapped on the commas between them: a panic).
	r, _ = Parse([]byte(`{"input":"x","tools":[{"type":"function","name":"bash","parameters":{}}],"tool_choice":"auto","parallel_tool_calls":false}`))
	p := plan()
	p.Envelopes, p.Tools = nil, wire.ToolSet{Withheld: []int{0}}
	got, err = r.Render(p)
	if err != nil || string(got) != `{"input":"x","instructions":"CAT"}` {
		t.Fatalf("%s %v", got, err)
	}
}

const answerWithCall = `{"id":"resp_1","object":"response","output":[` +
	`{"type":"reasoning","id":"rs_1","summary":[]},` +
	`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":"{\"skill_id\":\"pdf\"}","status":"completed"},` +
	`{"type":"function_call","id":"fc_2","call_id":"call_2","name":"shell","arguments":"{}","status":"completed"}],` +
	`"usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}}`

const finalAnswer = `{"id":"resp_2","object":"response","output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Done.","annotations":[]}]}],"usage":{"input_tokens":20,"output_tokens":3,"total_tokens":23}}`

func TestToolLoopStateless(t *testing.T) {
	r, _ := Parse([]byte(`{"model":"m","input":"make a pdf"}`))
	mine := func(n string) bool { return n == "load_skill" }
	ans, usage, ok := r.ReadAnswer([]byte(answerWithCall), 0, mine)
	if !ok || ans == nil || len(ans.Calls) != 1 || ans.Calls[0].ID != "call_1" || string(usage) != `{"input_tokens":10,"output_tokens":2,"total_tokens":12}` {
		t.Fatalf("answer %+v usage %s", ans, usage)
	}
	next, err := r.FollowUp([]byte(`{"model":"m","input":"make a pdf"}`), ans, []wire.ToolResult{{CallID: "call_1", Content: "ENV"}}, wire.ToolSet{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","input":[{"role":"user","content":"make a pdf"},{"type":"reasoning","id":"rs_1","summary":[]},` +
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":"{\"skill_id\":\"pdf\"}","status":"completed"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"ENV"}]}`
	if string(next) != want {
		t.Fatalf("follow-up\n got %s\nwant %s", next, want)
	}
	if ans2, _, _ := r.ReadAnswer([]byte(finalAnswer), 1, mine); ans2 != nil {
		t.Fatal("final answer has no call of the proxy's")
	}
	out, err := r.Final([]byte(finalAnswer), 1, json.RawMessage(`{"input_tokens":30}`), nil)
	if err != nil || !strings.Contains(string(out), `"usage":{"input_tokens":30}`) || !strings.Contains(string(out), `"id":"resp_2"`) {
		t.Fatalf("final %s %v", out, err)
	}
	if _, err := r.FollowUp(next, ans, []wire.ToolResult{{CallID: "nope", Content: "x"}}, wire.ToolSet{}); err == nil {
		t.Fatal("a result without its call: want error")
	}
}

func TestToolLoopStateful(t *testing.T) {
	body := []byte(`{"model":"m","previous_response_id":"resp_0","input":"go on","store":true}`)
	r, _ := Parse(body)
	ans, _, _ := r.ReadAnswer([]byte(answerWithCall), 0, func(n string) bool { return n == "load_skill" })
	next, err := r.FollowUp(body, ans, []wire.ToolResult{{CallID: "call_1", Content: "ENV"}}, wire.ToolSet{})
	if err != nil {
		t.Fatal(err)
	}
	// The client's previous_response_id stays: the round's items and the
	// output follow its input (chaining from resp_1 would fail were it not
	// stored, and would leave a held client call of that round unanswered).
	want := `{"model":"m","previous_response_id":"resp_0","input":[{"role":"user","content":"go on"},{"type":"reasoning","id":"rs_1","summary":[]},` +
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":"{\"skill_id\":\"pdf\"}","status":"completed"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"ENV"}],"store":true}`
	if string(next) != want {
		t.Fatalf("got %s\nwant %s", next, want)
	}
}

func TestFinalStripsAtTheLimit(t *testing.T) {
	r, _ := Parse([]byte(`{"input":"x"}`))
	out, err := r.Final([]byte(answerWithCall), 4, nil, func(n string) bool { return n == "load_skill" })
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Output []struct{ Type, Name string } `json:"output"`
	}
	_ = json.Unmarshal(out, &resp)
	if len(resp.Output) != 1 || resp.Output[0].Name != "shell" {
		t.Fatalf("want only the client's call (reasoning went with the proxy's): %s", out)
	}
}

// sse renders events as an upstream would.
func sse(events ...string) []byte {
	var b bytes.Buffer
	for i, e := range events {
		var typ struct{ Type string }
		_ = json.Unmarshal([]byte(e), &typ)
		e = e[:len(e)-1] + fmt.Sprintf(`,"sequence_number":%d}`, i)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ.Type, e)
	}
	return b.Bytes()
}

// runRound runs one upstream round through s (see streamtest.RunRound).
func runRound(s *Stream, final bool, body []byte) (string, wire.RoundEnd) {
	return streamtest.RunRound(s, final, body)
}

func TestStreamHidesTheProxysCallsAndRenumbers(t *testing.T) {
	r, _ := Parse([]byte(`{"input":"make a pdf","stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	round1 := sse(
		`{"type":"response.created","response":{"id":"resp_1","output":[]}}`,
		`{"type":"response.in_progress","response":{"id":"resp_1","output":[]}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_0","role":"assistant","content":[]}}`,
		`{"type":"response.output_text.delta","output_index":0,"item_id":"msg_0","content_index":0,"delta":"Loading."}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_0","role":"assistant","content":[{"type":"output_text","text":"Loading."}]}}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"type":"reasoning","id":"rs_1","summary":[]}}`,
		`{"type":"response.output_item.done","output_index":1,"item":{"type":"reasoning","id":"rs_1","summary":[]}}`,
		`{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":""}}`,
		`{"type":"response.function_call_arguments.delta","output_index":2,"item_id":"fc_1","delta":"{\"skill_id\":"}`,
		`{"type":"response.function_call_arguments.delta","output_index":2,"item_id":"fc_1","delta":"\"pdf\"}"}`,
		`{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":"{\"skill_id\":\"pdf\"}"}}`,
		`{"type":"response.completed","response":{"id":"resp_1","output":[],"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}}`,
	)
	out1, end1 := runRound(s, false, round1)
	if end1.Loop == nil || len(end1.Loop.Calls) != 1 || string(end1.Loop.Calls[0].Arguments) != `{"skill_id":"pdf"}` || end1.Loop.ID != "resp_1" {
		t.Fatalf("round 1 end %+v %+v", end1, end1.Loop)
	}
	if strings.Contains(out1, "load_skill") || strings.Contains(out1, "rs_1") || strings.Contains(out1, "response.completed") {
		t.Fatalf("round 1 leaked the proxy's items:\n%s", out1)
	}
	if !strings.Contains(string(end1.Loop.Turn), `"rs_1"`) || !strings.Contains(string(end1.Loop.Turn), `"call_1"`) {
		t.Fatalf("the follow-up must carry the reasoning and the call: %s", end1.Loop.Turn)
	}
	round2 := sse(
		`{"type":"response.created","response":{"id":"resp_2","output":[]}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_2","role":"assistant","content":[]}}`,
		`{"type":"response.output_text.delta","output_index":0,"item_id":"msg_2","content_index":0,"delta":"Done."}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_2","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}`,
		`{"type":"response.completed","response":{"id":"resp_2","output":[{"type":"message"}],"usage":{"input_tokens":9,"output_tokens":2,"total_tokens":11}}}`,
	)
	out2, end2 := runRound(s, false, round2)
	if end2.Loop != nil {
		t.Fatal("round 2 must be the answer")
	}
	all := out1 + out2
	// Sequence numbers 0.. without gaps, output_index 0 then 1.
	rd := wire.NewEventReader(strings.NewReader(all))
	seq := 0
	var completed string
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		var e struct {
			Type     string          `json:"type"`
			Seq      int             `json:"sequence_number"`
			Index    *int            `json:"output_index"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("bad event %q", ev.Data)
		}
		if e.Seq != seq {
			t.Fatalf("sequence_number %d, want %d:\n%s", e.Seq, seq, all)
		}
		seq++
		if e.Type == "response.created" && strings.Contains(string(e.Response), "resp_2") {
			t.Fatal("second response.created relayed")
		}
		if e.Type == "response.output_item.added" && strings.Contains(string(ev.Data), "msg_2") && (e.Index == nil || *e.Index != 1) {
			t.Fatalf("round 2 item at output_index %v, want 1", e.Index)
		}
		if e.Type == "response.completed" {
			completed = string(e.Response)
		}
	}
	if !strings.Contains(completed, `"msg_0"`) || !strings.Contains(completed, `"msg_2"`) || strings.Contains(completed, "load_skill") ||
		!strings.Contains(completed, `"input_tokens":9`) || !strings.Contains(completed, `"id":"resp_2"`) {
		t.Fatalf("final response.completed %s", completed)
	}
}

// FuzzParse: validation never panics, answers 400 in API terms, and what it
// accepts renders into a body it accepts again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"model":"m","input":"hi"}`, `{"input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`,
		`{"instructions":null,"input":[],"tools":[{"type":"web_search"}]}`, `{"input":5}`, `[]`, ``, `{"previous_response_id":"r","input":"x","store":true}`} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"input":[{"role":"Go "}]}`)) // a role quoted back in the error
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Parse(in)
		if err != nil {
			if we, ok := err.(*wire.Error); !ok || we.Status != 400 || streamtest.DecoderLeak(we.Message, in) {
				t.Fatalf("error %v", err)
			}
			return
		}
		p := plan()
		p.Tools.Withheld = nil
		out, err := r.Render(p)
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
	r, _ := Parse([]byte(`{"input":"x","stream":true}`))
	s := r.NewStream(func(string) bool { return false })
	_, end := runRound(s, false, sse(
		`{"type":"response.created","response":{"id":"resp_1","output":[]}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"m","role":"assistant","content":[]}}`,
	))
	if !end.Incomplete {
		t.Fatal("a stream without response.completed must be incomplete")
	}
}

func TestReviewFixes(t *testing.T) {
	mine := func(n string) bool { return n == "load_skill" }
	// A held client call is left out of the follow-up, and the client's
	// previous_response_id stays (the upstream would otherwise find the
	// held call, stored with the round's response, unanswered).
	body := []byte(`{"previous_response_id":"resp_0","input":"go on","store":false}`)
	r, _ := Parse(body)
	mixed := `{"id":"resp_1","output":[{"type":"function_call","call_id":"c1","name":"load_skill","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"shell","arguments":"{}"}]}`
	ans, _, _ := r.ReadAnswer([]byte(mixed), 0, mine)
	next, err := r.FollowUp(body, ans, []wire.ToolResult{{CallID: "c1", Content: "ENV"}}, wire.ToolSet{})
	if err != nil || strings.Contains(string(next), `"c2"`) || !strings.Contains(string(next), `"previous_response_id":"resp_0"`) {
		t.Fatalf("follow-up %s %v", next, err)
	}
	// "input": null takes the envelopes in its place (no second "input").
	r, _ = Parse([]byte(`{"instructions":"s","input":null}`))
	got, _ := r.Render(plan())
	if strings.Count(string(got), `"input"`) != 1 {
		t.Fatalf("render %s", got)
	}
	// response.incomplete after a proxy call: the call is not shown, and counted dropped.
	r, _ = Parse([]byte(`{"input":"x","stream":true}`))
	s := r.NewStream(mine)
	out, end := runRound(s, false, sse(
		`{"type":"response.created","response":{"id":"resp_1","output":[]}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c1","name":"load_skill","arguments":""}}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c1","name":"load_skill","arguments":"{}"}}`,
		`{"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete","output":[{"type":"function_call","call_id":"c1","name":"load_skill","arguments":"{}"}]}}`,
	))
	if end.Loop != nil || end.Dropped != 1 || end.Incomplete || strings.Contains(out, "load_skill") || !strings.Contains(out, "response.incomplete") {
		t.Fatalf("end %+v\n%s", end, out)
	}
}

func TestStatePath(t *testing.T) {
	for _, tt := range []struct{ body, path, query string }{
		{`{"input":"x","previous_response_id":"resp_1"}`, "/v1/responses/resp_1", ""},
		{`{"input":"x","previous_response_id":"a b?c"}`, "/v1/responses/a b?c", ""},
		{`{"input":"x","previous_response_id":"a/b"}`, "", ""},
		{`{"input":"x","previous_response_id":".."}`, "", ""},
		{`{"input":"x","conversation":"conv_1"}`, "/v1/conversations/conv_1/items", "order=desc&limit=100"},
		{`{"input":"x","conversation":{"id":"conv_2"}}`, "/v1/conversations/conv_2/items", "order=desc&limit=100"},
	} {
		r, err := Parse([]byte(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		if p, q := r.StatePath(); p != tt.path || q != tt.query {
			t.Errorf("%s: %q %q, want %q %q", tt.body, p, q, tt.path, tt.query)
		}
		if got := r.View().Stateful; !got {
			t.Errorf("%s: Stateful %v", tt.body, got)
		}
	}
}

func TestStatePathNone(t *testing.T) {
	for _, body := range []string{`{"input":"x"}`, `{"input":"x","conversation":null}`, `{"input":"x","previous_response_id":""}`} {
		r, err := Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := r.StatePath(); p != "" || r.View().Stateful {
			t.Errorf("%s: path %q, Stateful %v", body, p, r.View().Stateful)
		}
	}
}

func TestAnswerDropped(t *testing.T) {
	mine := func(name string) bool { return name == "load_skill" }
	notRun := `{"type":"function_call_output","call_id":"c_l","output":"` + notRunOutput + `"}`
	response := `{"id":"resp_1","output":[{"type":"function_call","call_id":"c_w","name":"get_weather","arguments":"{}"},` +
		`{"type":"function_call","call_id":"c_l","name":"load_skill","arguments":"{}"}]}`
	for _, tt := range []struct {
		name, body, state, want string
		n                       int
	}{
		{"array input", `{"previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c_w","output":"ok"}]}`, response,
			`{"previous_response_id":"resp_1","input":[` + notRun + `,{"type":"function_call_output","call_id":"c_w","output":"ok"}]}`, 1},
		{"string input", `{"previous_response_id":"resp_1","input":"and now?"}`, response,
			`{"previous_response_id":"resp_1","input":[` + notRun + `,{"role":"user","content":"and now?"}]}`, 1},
		{"no input", `{"previous_response_id":"resp_1"}`, response,
			`{"previous_response_id":"resp_1","input":[` + notRun + `]}`, 1},
		{"null input", `{"previous_response_id":"resp_1","input":null}`, response,
			`{"previous_response_id":"resp_1","input":[` + notRun + `]}`, 1},
		{"answered by the client", `{"previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c_l","output":"x"}]}`, response,
			`{"previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c_l","output":"x"}]}`, 0},
		{"conversation items, answered", `{"conversation":"conv_1","input":"hi"}`,
			`{"object":"list","data":[{"type":"function_call_output","call_id":"c_l","output":"x"},{"type":"function_call","call_id":"c_l","name":"load_skill","arguments":"{}"}]}`,
			`{"conversation":"conv_1","input":"hi"}`, 0},
		{"conversation items, unanswered", `{"conversation":"conv_1","input":"hi"}`,
			`{"object":"list","data":[{"type":"function_call","call_id":"c_l","name":"load_skill","arguments":"{}"},{"type":"message","role":"user","content":"x"}]}`,
			`{"conversation":"conv_1","input":[` + notRun + `,{"role":"user","content":"hi"}]}`, 1},
		{"not a state", `{"previous_response_id":"resp_1","input":"hi"}`, `{"error":{}}`, `{"previous_response_id":"resp_1","input":"hi"}`, 0},
	} {
		r, err := Parse([]byte(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		out, n, err := r.AnswerDropped(r.Body(), []byte(tt.state), mine)
		if err != nil || n != tt.n || string(out) != tt.want {
			t.Errorf("%s: %d %v\n%s\nwant %d\n%s", tt.name, n, err, out, tt.n, tt.want)
		}
	}
}

// A hosted MCP server's call (mcp_call) holds its output: it is a tool
// result of that tool, as function_call_output is of its call.
func TestParseMCPCall(t *testing.T) {
	body := `{"model":"m","input":[{"role":"user","content":"deploy it"},` +
		`{"type":"mcp_call","id":"mcp_1","server_label":"skills","name":"load_skill","arguments":"{}","output":"<skill_context id=\"x\">B</skill_context>"},` +
		`{"role":"user","content":"and again"}]}`
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.View().Turns[1]; got != (wire.Turn{Role: "tool", Text: `<skill_context id="x">B</skill_context>`, Tool: "load_skill"}) {
		t.Errorf("mcp_call turn %+v", got)
	}
}

// The client's tools by name: functions, and custom tools (never shadowed,
// never gated); built-in tools have no name.
func TestViewToolNames(t *testing.T) {
	r, err := Parse([]byte(`{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}},` +
		`{"type":"custom","name":"apply_patch","format":{"type":"text"}},{"type":"web_search"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := r.View().Tools
	want := []wire.ClientTool{{Name: "f", Params: []byte(`{"type":"object"}`)}, {Name: "apply_patch", Custom: true}, {}}
	if len(got) != len(want) {
		t.Fatalf("tools %+v", got)
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Custom != want[i].Custom || string(got[i].Params) != string(want[i].Params) {
			t.Errorf("tool %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
