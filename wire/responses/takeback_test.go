package responses

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

// A refused turn's items are taken back only when the conversation's newest
// items are exactly those the rounds added: output items by id, input
// items by type and text, call_id or id, whatever form the conversation
// keeps a message's content in.
func TestTakeBack(t *testing.T) {
	const (
		user     = `{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"make me a pdf"}]}`
		envelope = `{"id":"msg_2","type":"message","role":"user","content":[{"type":"input_text","text":"<skill_context>BODY</skill_context>"}]}`
		call     = `{"id":"fc_1","type":"function_call","call_id":"call_l","name":"load_skill","arguments":"{}"}`
		output   = `{"id":"fco_1","type":"function_call_output","call_id":"call_l","output":"LOADED"}`
		call2    = `{"id":"fc_2","type":"function_call","call_id":"call_m","name":"load_skill","arguments":"{}"}`
		other    = `{"id":"msg_9","type":"message","role":"user","content":"someone else"}`
	)
	round0 := `{"model":"m","conversation":"conv_1","input":[{"role":"user","content":"make me a pdf"},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<skill_context>BODY</skill_context>"}]}]}`
	round1 := `{"model":"m","conversation":"conv_1","input":[{"type":"function_call_output","call_id":"call_l","output":"LOADED"}]}`
	list := func(items ...string) []byte {
		return []byte(`{"object":"list","data":[` + strings.Join(items, ",") + `]}`)
	}
	path := func(id string) string { return "/v1/conversations/conv_1/items/" + id }
	tests := []struct {
		name   string
		rounds [][2]string // body, its answer's output ids (comma-separated)
		list   []byte
		want   []string // nil: an error
	}{
		{"one round", [][2]string{{round0, "fc_1"}}, list(call, envelope, user, other),
			[]string{path("fc_1"), path("msg_2"), path("msg_1")}},
		{"two rounds", [][2]string{{round0, "fc_1"}, {round1, "fc_2"}}, list(call2, output, call, envelope, user),
			[]string{path("fc_2"), path("fco_1"), path("fc_1"), path("msg_2"), path("msg_1")}},
		{"a string input", [][2]string{{`{"model":"m","conversation":"conv_1","input":"make me a pdf"}`, "fc_1"}},
			list(call, strings.Replace(user, `[{"type":"input_text","text":"make me a pdf"}]`, `"make me a pdf"`, 1)),
			[]string{path("fc_1"), path("msg_1")}},
		{"another writer's item is the newest", [][2]string{{round0, "fc_1"}}, list(other, call, envelope, user), nil},
		{"another message where the turn's input was", [][2]string{{round0, "fc_1"}}, list(call, envelope, other), nil},
		{"fewer items than the turn added", [][2]string{{round0, "fc_1"}}, list(call, envelope), nil},
		{"an output without an id", [][2]string{{round0, ""}}, list(strings.Replace(call, `"id":"fc_1",`, "", 1), envelope, user), nil},
		{"an id that is not a path segment", [][2]string{{round0, "fc/1"}}, list(strings.Replace(call, "fc_1", "fc/1", 1), envelope, user), nil},
		{"not a list", [][2]string{{round0, "fc_1"}}, []byte(`{"error":{}}`), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.rounds[0][0]))
			if err != nil {
				t.Fatal(err)
			}
			for _, rd := range tc.rounds {
				r.noteAdded([]byte(rd[0]), &wire.Answer{OutputIDs: strings.Split(rd[1], ",")})
			}
			p, q, n := r.AddedPath()
			if p != "/v1/conversations/conv_1/items" || q != "order=desc&limit="+strconv.Itoa(len(r.added)) || n != len(r.added) {
				t.Errorf("AddedPath %q %q %d", p, q, n)
			}
			got, err := r.TakeBack(tc.list)
			if tc.want == nil {
				if err == nil {
					t.Errorf("took back %q, want an error", got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	// Nothing is noted outside a conversation.
	r, _ := Parse([]byte(`{"model":"m","input":"hi"}`))
	r.noteAdded(r.Body(), &wire.Answer{OutputIDs: []string{"fc_1"}})
	if p, _, _ := r.AddedPath(); p != "" {
		t.Errorf("AddedPath %q without a conversation", p)
	}
}

// A round that ended failed (a response.failed event, or a response with
// status "failed") is over upstream: the turn's items are taken back as
// after a refusal. A round that ended incomplete completed, and one whose
// stream broke off may still complete: neither is failed.
func TestFailed(t *testing.T) {
	const body = `{"model":"m","stream":true,"conversation":"conv_1","input":"make me a pdf"}`
	response := func(status string) string {
		return `{"id":"resp_1","object":"response","status":"` + status + `","output":[{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Here"}]}],"usage":null}`
	}
	for _, tc := range []struct {
		status string
		want   bool
	}{
		{"completed", false},
		{"incomplete", false},
		{"failed", true},
	} {
		t.Run(tc.status, func(t *testing.T) {
			r, err := Parse([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			none := func(string) bool { return false }
			if _, _, ok := r.ReadAnswer([]byte(response(tc.status)), 1, none); !ok || r.Failed() != tc.want {
				t.Errorf("JSON: read %v, Failed %v, want %v", ok, r.Failed(), tc.want)
			}
			r, _ = Parse([]byte(body))
			events, err := Events([]byte(response(tc.status)))
			if err != nil {
				t.Fatal(err)
			}
			if _, end := runRound(r.NewStream(none), false, events); end.Incomplete || r.Failed() != tc.want {
				t.Errorf("stream: incomplete %v, Failed %v, want %v", end.Incomplete, r.Failed(), tc.want)
			}
		})
	}
	// A stream ended by an error event, the stream's other terminal event
	// (it carries no response), ended failed too.
	r, _ := Parse([]byte(body))
	errored := sse(`{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}`,
		`{"type":"error","code":"server_error","message":"The server had an error while processing your request.","param":null}`)
	if _, end := runRound(r.NewStream(func(string) bool { return false }), false, errored); end.Incomplete || !r.Failed() {
		t.Errorf("error event: incomplete %v, Failed %v, want failed", end.Incomplete, r.Failed())
	}
	// A stream that broke off before its final event is not failed.
	r, _ = Parse([]byte(body))
	events, _ := Events([]byte(response("failed")))
	cut := events[:strings.LastIndex(string(events), "event: response.failed")]
	if _, end := runRound(r.NewStream(func(string) bool { return false }), false, cut); !end.Incomplete || r.Failed() {
		t.Errorf("cut stream: incomplete %v, Failed %v", end.Incomplete, r.Failed())
	}
}

// A failed response is the client's answer whatever it holds: a complete
// call of the proxy's in it runs no round (the answer stopped short, as an
// incomplete one did), and its calls are dropped from what the client gets.
// A failed response without output is still a failure.
func TestFailedAnswerRunsNoRound(t *testing.T) {
	const body = `{"model":"m","input":"make me a pdf"}`
	mine := func(n string) bool { return n == "load_skill" }
	for _, tc := range []struct {
		name, raw string
		stops     bool
	}{
		{"completed with a call", `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"c1","name":"load_skill","arguments":"{\"skill_id\":\"pdf\"}"}]}`, false},
		{"failed with a call", `{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[{"type":"function_call","id":"fc_1","call_id":"c1","name":"load_skill","arguments":"{\"skill_id\":\"pdf\"}"}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			ans, _, ok := r.ReadAnswer([]byte(tc.raw), 0, mine)
			if !ok || ans == nil || len(ans.Calls) != 1 {
				t.Fatalf("read %v, answer %+v: want the proxy's call", ok, ans)
			}
			if ans.Truncated != tc.stops {
				t.Errorf("Truncated %v, want %v: a failed answer must run no round", ans.Truncated, tc.stops)
			}
		})
	}
	r, _ := Parse([]byte(body))
	if _, _, _ = r.ReadAnswer([]byte(`{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":null}`), 0, mine); !r.Failed() {
		t.Error("a failed response with output null: Failed false, want true")
	}
}
