package messages

import (
	"reflect"
	"testing"
)

// FuzzReadAnswer checks that ReadAnswer's undecoded path (noCalls) reads
// every message as decoding it does: same answer, usage and verdict.
func FuzzReadAnswer(f *testing.F) {
	for _, s := range []string{
		`{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":6}}`,
		`{"id":"m","type":"message","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"load_skill","input":{"skill_id":"x"}}],"stop_reason":"tool_use"}`,
		`{"id":"m","type":"message","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":{}}]}`,
		`{"type":"message","content":[{"TYPE":"tool_use","name":"load_skill"}]}`,
		`{"type":"message","content":[{"type":"tool\u005fuse","name":"load_skill"}]}`,
		`{"type":"message","content":[5,null,{"type":7}]}`,
		`{"type":"message","content":null}`, `{"type":"message"}`, `{"type":"message","content":{}}`,
		`{"type":"error","error":{"type":"overloaded_error"}}`, `{"type":"message","stop_reason":5}`,
		`{"type":"message","container":{"id":"c"},"content":[]}`, `{"type":"message","Type":"message"}`,
		`{}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	mine := func(name string) bool { return name == "load_skill" || name == "search_skills" }
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, slow := &Request{}, &Request{}
		ans, usage, ok := fast.ReadAnswer(raw, 1, mine)
		wantAns, wantUsage, wantOK := slow.decodeAnswer(raw, 1, mine)
		if ok != wantOK || string(usage) != string(wantUsage) || !reflect.DeepEqual(ans, wantAns) || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("ReadAnswer(%q) = %+v, %q, %v; decoded: %+v, %q, %v", raw, ans, usage, ok, wantAns, wantUsage, wantOK)
		}
	})
}

// TestNoCalls: messages without tool_use blocks are read without decoding;
// any tool_use block is decoded.
func TestNoCalls(t *testing.T) {
	for _, c := range []struct {
		raw, usage string
		ok         bool
	}{
		{`{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"text","text":"Hi."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":6}}`,
			`{"input_tokens":12,"output_tokens":6}`, true},
		{`{"id":"m","type":"message","content":[{"type":"tool_use","id":"t","name":"bash","input":{}}]}`, "", false},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "", false},
	} {
		usage, ok := noCalls([]byte(c.raw))
		if ok != c.ok || string(usage) != c.usage {
			t.Errorf("noCalls(%s) = %q, %v; want %q, %v", c.raw, usage, ok, c.usage, c.ok)
		}
	}
}
