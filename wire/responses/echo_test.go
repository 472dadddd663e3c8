package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

// echoOf is what the API echoes of request body in a response object (the
// members in this order): the value sent, else the API's default.
func echoOf(body []byte) string {
	var b strings.Builder
	for i, f := range []struct{ key, def string }{{"instructions", "null"}, {"parallel_tool_calls", "true"}, {"tool_choice", `"auto"`}, {"tools", "[]"}} {
		if i > 0 {
			b.WriteByte(',')
		}
		v := f.def
		if got := gjson.GetBytes(body, f.key); got.Exists() {
			v = got.Raw
		}
		b.WriteString(`"` + f.key + `":` + v)
	}
	return b.String()
}

// responseFor is a response object answering body: its echoes, output and usage.
func responseFor(body []byte, status, output string) string {
	return `{"id":"resp_1","object":"response","status":"` + status + `",` + echoOf(body) + `,"output":` + output +
		`,"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}`
}

const answerText = `[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Done.","annotations":[]}]}]`

// echoCases are client requests and plans that change what the response
// object echoes.
var echoCases = []struct {
	name, body string
	plan       func() *wire.Plan
}{
	{"instructions and tools",
		`{"model":"m","instructions":"Be brief.","input":"make a pdf","tools":[{"type":"function","name":"shell","parameters":{}},{"type":"web_search"}],"tool_choice":"auto"}`, plan},
	{"escapes kept byte for byte",
		`{"instructions": "caf\u00e9 \"q\"" ,"input":"x","tools":[ {"type":"web_search"} ]}`, plan},
	{"no instructions, no tools", `{"model":"m","input":"make a pdf"}`, plan},
	{"null instructions and tools", `{"instructions":null,"tools":null,"input":"x"}`, plan},
	{"a gated tool withheld", `{"input":"x","tools":[{"type":"function","name":"bash"},{"type":"function","name":"read"}]}`, func() *wire.Plan {
		p := plan()
		p.Tools.Withheld = []int{0}
		return p
	}},
	{"every tool withheld, tool_choice and parallel_tool_calls with them",
		`{"input":"x","instructions":"s","tools":[{"type":"function","name":"bash"}],"tool_choice":"none","parallel_tool_calls":false}`, func() *wire.Plan {
			p := plan()
			p.Tools = wire.ToolSet{Withheld: []int{0}}
			return p
		}},
}

// TestFinalEchoesTheClientsRequest: the answer to the proxy's request
// echoes the proxy's instructions and tools; the client gets its own, and
// nothing else changes.
func TestFinalEchoesTheClientsRequest(t *testing.T) {
	for _, tc := range echoCases {
		r, err := Parse([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		sent, err := r.Render(tc.plan())
		if err != nil {
			t.Fatal(err)
		}
		if echoOf(sent) == echoOf([]byte(tc.body)) {
			t.Fatalf("%s: the rewrite changed nothing echoed", tc.name)
		}
		got, err := r.Final([]byte(responseFor(sent, "completed", answerText)), 0, nil, nil)
		if want := responseFor([]byte(tc.body), "completed", answerText); err != nil || string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
	}

	// Envelopes alone: nothing echoed changed, the answer goes as it came.
	body := `{"instructions":"s","input":"x","tools":[{"type":"function","name":"shell"}]}`
	r, _ := Parse([]byte(body))
	sent, _ := r.Render(&wire.Plan{Changed: true, EnvelopeRole: "user", Envelopes: plan().Envelopes})
	raw := []byte(responseFor(sent, "completed", answerText))
	if out, err := r.Final(raw, 0, nil, nil); err != nil || string(out) != string(raw) {
		t.Fatalf("%s %v", out, err)
	}
	// An upstream that echoes nothing gets nothing added.
	r, _ = Parse([]byte(body))
	_, _ = r.Render(plan())
	raw = []byte(`{"id":"resp_1","output":` + answerText + `}`)
	if out, err := r.Final(raw, 0, nil, nil); err != nil || string(out) != string(raw) {
		t.Fatalf("%s %v", out, err)
	}
}

// TestFinalEchoesAfterToolRounds: the client's answer comes from a later
// round, whose request has the proxy's tools (and a gated tool load_skill
// enabled).
func TestFinalEchoesAfterToolRounds(t *testing.T) {
	body := `{"model":"m","instructions":"Be brief.","input":"make a pdf","tools":[{"type":"function","name":"bash"},{"type":"function","name":"shell"}],"parallel_tool_calls":false}`
	r, _ := Parse([]byte(body))
	p := plan()
	p.Tools.Withheld = []int{0}
	sent, _ := r.Render(p)
	mine := func(n string) bool { return n == "load_skill" }
	call := `[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":"{}","status":"completed"}]`
	ans, _, ok := r.ReadAnswer([]byte(responseFor(sent, "completed", call)), 0, mine)
	if !ok || ans == nil {
		t.Fatal("round 0 must loop")
	}
	next, err := r.FollowUp(sent, ans, []wire.ToolResult{{CallID: "call_1", Content: "ENV"}}, wire.ToolSet{Server: p.Tools.Server})
	if err != nil || !strings.Contains(string(next), `"bash"`) || !strings.Contains(string(next), `"load_skill"`) {
		t.Fatalf("follow-up %s %v", next, err)
	}
	got, err := r.Final([]byte(responseFor(next, "completed", answerText)), 1, json.RawMessage(`{"input_tokens":10}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(responseFor([]byte(body), "completed", answerText), `"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}`, `"usage":{"input_tokens":10}`, 1)
	if string(got) != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

// streamResponses returns the response object of each event of a client's
// stream that carries one, by event type.
func streamResponses(t *testing.T, out string) (types []string, resps []string) {
	t.Helper()
	rd := wire.NewEventReader(strings.NewReader(out))
	for {
		ev, err := rd.Next()
		if err != nil {
			return
		}
		if !ev.HasData {
			continue
		}
		if r := gjson.GetBytes(ev.Data, "response"); r.Exists() {
			types = append(types, ev.Type())
			resps = append(resps, r.Raw)
		}
	}
}

// checkEchoes fails unless every response object echoes body.
func checkEchoes(t *testing.T, name, body string, types, resps []string) {
	t.Helper()
	want := echoOf([]byte(body))
	for i, resp := range resps {
		if got := echoOf([]byte(resp)); got != want {
			t.Errorf("%s: %s echoes\n %s\nwant %s", name, types[i], got, want)
		}
	}
}

// TestStreamEchoesTheClientsRequest: every event that carries the
// response object (created, in_progress, queued; completed, incomplete,
// failed) echoes the client's request, in a round without tool calls and
// when the final event comes from a later round.
func TestStreamEchoesTheClientsRequest(t *testing.T) {
	mine := func(n string) bool { return n == "load_skill" }
	for _, tc := range echoCases {
		for _, last := range []string{"response.completed", "response.incomplete", "response.failed"} {
			name := tc.name + "/" + last
			r, _ := Parse([]byte(tc.body))
			p := tc.plan()
			sent, _ := r.Render(p)
			status := strings.TrimPrefix(last, "response.")
			// One round, the answer.
			s := r.NewStream(mine)
			out, end := runRound(s, false, sse(
				`{"type":"response.queued","response":`+responseFor(sent, "queued", "[]")+`}`,
				`{"type":"response.created","response":`+responseFor(sent, "in_progress", "[]")+`}`,
				`{"type":"response.in_progress","response":`+responseFor(sent, "in_progress", "[]")+`}`,
				`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}`,
				`{"type":"response.output_text.delta","output_index":0,"item_id":"msg_1","content_index":0,"delta":"Done."}`,
				`{"type":"`+last+`","response":`+responseFor(sent, status, answerText)+`}`,
			))
			types, resps := streamResponses(t, out)
			if end.Loop != nil || len(resps) != 4 {
				t.Fatalf("%s: %d response objects, end %+v:\n%s", name, len(resps), end, out)
			}
			checkEchoes(t, name, tc.body, types, resps)

			// Two rounds: the client's answer comes from the follow-up.
			if p.Tools.Server == nil {
				continue
			}
			r, _ = Parse([]byte(tc.body))
			sent, _ = r.Render(p)
			s = r.NewStream(mine)
			out1, end1 := runRound(s, false, sse(
				`{"type":"response.created","response":`+responseFor(sent, "in_progress", "[]")+`}`,
				`{"type":"response.in_progress","response":`+responseFor(sent, "in_progress", "[]")+`}`,
				`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":""}}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":"{}"}}`,
				`{"type":"response.completed","response":`+responseFor(sent, "completed", `[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":"{}"}]`)+`}`,
			))
			if end1.Loop == nil {
				t.Fatalf("%s: round 1 must loop", name)
			}
			next, err := r.FollowUp(sent, end1.Loop, []wire.ToolResult{{CallID: "call_1", Content: "ENV"}}, wire.ToolSet{Server: p.Tools.Server})
			if err != nil {
				t.Fatal(err)
			}
			out2, _ := runRound(s, false, sse(
				`{"type":"response.created","response":`+responseFor(next, "in_progress", "[]")+`}`,
				`{"type":"response.in_progress","response":`+responseFor(next, "in_progress", "[]")+`}`,
				`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}`,
				`{"type":"response.output_text.delta","output_index":0,"item_id":"msg_1","content_index":0,"delta":"Done."}`,
				`{"type":"`+last+`","response":`+responseFor(next, status, answerText)+`}`,
			))
			types, resps = streamResponses(t, out1+out2)
			if len(resps) != 3 || types[2] != last {
				t.Fatalf("%s: %v:\n%s", name, types, out1+out2)
			}
			checkEchoes(t, name+"/after a tool round", tc.body, types, resps)
		}
	}
}
