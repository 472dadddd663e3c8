package responses

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A round that loops: reasoning passes over the client calls it holds back
// and goes with the next item kept (the API refuses the proxy's call sent
// without its reasoning), or is held with them when none follows; Shown
// says whether the client gets items of the round (its stored response
// must then stay, see HiddenPath). JSON and streamed alike.
func TestRoundThatLoopsHeldCallsAndShown(t *testing.T) {
	rs := func(id string) string { return `{"type":"reasoning","id":"` + id + `","summary":[]}` }
	fc := func(id, name string) string {
		return `{"type":"function_call","id":"fc_` + id + `","call_id":"` + id + `","name":"` + name + `","arguments":"{}","status":"completed"}`
	}
	msg := `{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Loading.","annotations":[]}]}`
	tests := []struct {
		name   string
		items  []string
		stream bool     // the JSON answer holds the whole round, so a client call before the proxy's is held too
		turn   []string // ids the follow-up sends, in order
		shown  bool
	}{
		{"json: reasoning passes the held call to the proxy's", []string{rs("rs_1"), fc("call_w", "bash"), fc("call_l", "load_skill")}, false,
			[]string{"rs_1", "fc_call_l"}, false},
		{"stream: reasoning passes the held call to the proxy's", []string{fc("call_l", "load_skill"), rs("rs_1"), fc("call_w", "bash"), fc("call_m", "load_skill")}, true,
			[]string{"fc_call_l", "rs_1", "fc_call_m"}, false},
		{"json: reasoning with only held calls after it is held", []string{fc("call_l", "load_skill"), rs("rs_1"), fc("call_w", "bash")}, false,
			[]string{"fc_call_l"}, false},
		{"stream: reasoning with only held calls after it is held", []string{fc("call_l", "load_skill"), rs("rs_1"), fc("call_w", "bash")}, true,
			[]string{"fc_call_l"}, false},
		{"json: a preamble is shown", []string{msg, fc("call_l", "load_skill")}, false, []string{"msg_1", "fc_call_l"}, true},
		{"stream: a preamble is shown", []string{msg, fc("call_l", "load_skill")}, true, []string{"msg_1", "fc_call_l"}, true},
		{"stream: reasoning passes the held call to a message shown", []string{fc("call_l", "load_skill"), rs("rs_1"), fc("call_w", "bash"), msg}, true,
			[]string{"fc_call_l", "rs_1", "msg_1"}, true},
	}
	mine := func(n string) bool { return n == "load_skill" }
	for _, tt := range tests {
		r, _ := Parse([]byte(`{"model":"m","input":"x"}`))
		var turn []byte
		var shown bool
		var out string
		if tt.stream {
			events := []string{`{"type":"response.created","response":{"id":"resp_1","output":[]}}`}
			for i, it := range tt.items {
				events = append(events,
					fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":%s}`, i, it),
					fmt.Sprintf(`{"type":"response.output_item.done","output_index":%d,"item":%s}`, i, it))
			}
			events = append(events, `{"type":"response.completed","response":{"id":"resp_1","output":[]}}`)
			o, e := runRound(r.NewStream(mine), false, sse(events...))
			if e.Loop == nil {
				t.Fatalf("%s: the round does not loop", tt.name)
			}
			turn, shown, out = e.Loop.Turn, e.Loop.Shown, o
		} else {
			ans, _, ok := r.ReadAnswer([]byte(`{"id":"resp_1","object":"response","output":[`+strings.Join(tt.items, ",")+`]}`), 0, mine)
			if !ok || ans == nil || ans.Late {
				t.Fatalf("%s: the round does not loop: %+v", tt.name, ans)
			}
			turn, shown = ans.Turn, ans.Shown
		}
		var sent []struct{ ID string }
		if err := json.Unmarshal(append(append([]byte{'['}, turn...), ']'), &sent); err != nil {
			t.Fatalf("%s: turn %s: %v", tt.name, turn, err)
		}
		var ids []string
		for _, s := range sent {
			ids = append(ids, s.ID)
		}
		if strings.Join(ids, " ") != strings.Join(tt.turn, " ") || shown != tt.shown {
			t.Errorf("%s: follow-up sends %v, shown %v; want %v, %v", tt.name, ids, shown, tt.turn, tt.shown)
		}
		// Reasoning is shown only with an item shown; held calls never are.
		if strings.Contains(out, "bash") || strings.Contains(out, "rs_1") != (tt.shown && slices.Contains(tt.turn, "rs_1")) {
			t.Errorf("%s: the client was shown:\n%s", tt.name, out)
		}
	}
}
