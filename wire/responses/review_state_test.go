package responses

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

// Review of 9c5b4f1 (stored state). Defect: in a conversation, a round
// that loops holds back the client's calls of every kind (kind), but
// appendNotRun answers only function and custom-tool calls (callOutput
// returns nil for the rest). The conversation stores the round's output,
// so a held apply_patch_call, shell_call, local_shell_call or computer_call
// stays there without an output: the client never saw it, AnswerDropped
// answers only the proxy's function calls, and every later turn of the
// conversation is refused ("No tool output found ..."). Before this change
// such calls were shown to the client, who answered them. Either the
// follow-up answers them (apply_patch_call_output with status "failed",
// shell_call_output, local_shell_call_output take a text) or, for a kind the
// proxy cannot answer (computer_call_output needs a screenshot), the round
// must not loop with it held.
func TestReviewConversationHeldCallsOfEveryKindAnswered(t *testing.T) {
	mine := func(n string) bool { return n == "load_skill" }
	proxyCall := `{"type":"function_call","id":"fc_1","call_id":"c_l","name":"load_skill","arguments":"{}"}`
	for _, call := range []string{
		`{"type":"apply_patch_call","id":"apc_1","call_id":"c_x","status":"completed","operation":{"type":"update_file","path":"a.go","diff":"@@"}}`,
		`{"type":"shell_call","id":"sh_1","call_id":"c_x","status":"completed","action":{"commands":["ls"]}}`,
		`{"type":"local_shell_call","id":"lsh_1","call_id":"c_x","status":"completed","action":{"type":"exec","command":["ls"],"env":{}}}`,
		`{"type":"computer_call","id":"cu_1","call_id":"c_x","status":"completed","action":{"type":"screenshot"},"pending_safety_checks":[]}`,
	} {
		typ := gjson.Get(call, "type").Str
		body := []byte(`{"model":"m","conversation":"conv_1","input":"do it"}`)
		// answered reports whether a follow-up's input answers c_x.
		answered := func(next []byte) bool {
			ok := false
			gjson.GetBytes(next, "input").ForEach(func(_, it gjson.Result) bool {
				if strings.HasSuffix(it.Get("type").Str, "_output") && (it.Get("call_id").Str == "c_x" || it.Get("id").Str == "c_x") {
					ok = true
				}
				return true
			})
			return ok
		}
		t.Run(typ+"/json", func(t *testing.T) {
			r, err := Parse(body)
			if err != nil {
				t.Fatal(err)
			}
			ans, _, _ := r.ReadAnswer([]byte(`{"id":"resp_1","output":[`+proxyCall+`,`+call+`]}`), 0, mine)
			if ans == nil || ans.Late {
				return // the round does not loop: the client gets the call
			}
			next, err := r.FollowUp(body, ans, []wire.ToolResult{{CallID: "c_l", Name: "load_skill", Content: "ENV"}}, wire.ToolSet{})
			if err != nil {
				t.Fatal(err)
			}
			if !answered(next) {
				t.Errorf("the conversation keeps the held %s unanswered; follow-up input %s", typ, gjson.GetBytes(next, "input").Raw)
			}
		})
		t.Run(typ+"/stream", func(t *testing.T) {
			r, err := Parse(body)
			if err != nil {
				t.Fatal(err)
			}
			s := r.NewStream(mine)
			_, end := runRound(s, false, sse(
				`{"type":"response.created","response":{"id":"resp_1","output":[]}}`,
				`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"c_l","name":"load_skill","arguments":""}}`,
				`{"type":"response.output_item.done","output_index":0,"item":`+proxyCall+`}`,
				`{"type":"response.output_item.added","output_index":1,"item":`+call+`}`,
				`{"type":"response.output_item.done","output_index":1,"item":`+call+`}`,
				`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[`+proxyCall+`,`+call+`]}}`,
			))
			if end.Loop == nil {
				return
			}
			next, err := r.FollowUp(body, end.Loop, []wire.ToolResult{{CallID: "c_l", Name: "load_skill", Content: "ENV"}}, wire.ToolSet{})
			if err != nil {
				t.Fatal(err)
			}
			if !answered(next) {
				t.Errorf("the conversation keeps the held %s unanswered; follow-up input %s", typ, gjson.GetBytes(next, "input").Raw)
			}
		})
	}
}
