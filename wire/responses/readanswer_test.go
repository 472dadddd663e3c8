package responses

import (
	"reflect"
	"testing"
)

// FuzzReadAnswer checks that ReadAnswer's undecoded path (noCalls) reads
// every response as decoding it does: same answer, usage, verdict and
// failed status.
func FuzzReadAnswer(f *testing.F) {
	for _, s := range []string{
		`{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi."}]}],"usage":{"input_tokens":5,"output_tokens":2}}`,
		`{"id":"resp_1","status":"failed","output":[],"usage":null}`,
		`{"id":"r","output":[{"type":"reasoning","summary":[]},{"type":"function_call","name":"load_skill","call_id":"c1","arguments":"{}"}]}`,
		`{"id":"r","output":[{"type":"function_call","name":"bash","call_id":"c1","arguments":"{}"}]}`,
		`{"id":"r","output":[{"TYPE":"function_call","name":"load_skill"}]}`,
		`{"id":"r","output":[{"type":"function\u005fcall","name":"load_skill"}]}`,
		`{"id":"r","output":[5,null,"x",{"type":7}]}`,
		`{"id":5,"output":[]}`, `{"Status":"failed","output":[]}`, `{"status":"failed","status":"completed","output":[]}`,
		`{"output":null}`, `{}`, `[]`, `null`, `{"output":[{"type":"custom_tool_call","name":"load_skill"}]}`,
	} {
		f.Add([]byte(s))
	}
	mine := func(name string) bool { return name == "load_skill" || name == "search_skills" }
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, slow := &Request{}, &Request{}
		ans, usage, ok := fast.ReadAnswer(raw, 1, mine)
		wantAns, wantUsage, wantOK := slow.decodeAnswer(raw, 1, mine)
		if ok != wantOK || string(usage) != string(wantUsage) || !reflect.DeepEqual(ans, wantAns) || fast.failed != slow.failed {
			t.Fatalf("ReadAnswer(%q) = %+v, %q, %v (failed %v); decoded: %+v, %q, %v (failed %v)", raw, ans, usage, ok, fast.failed, wantAns, wantUsage, wantOK, slow.failed)
		}
	})
}

// TestNoCalls: responses without call items are read without decoding;
// any call item is decoded.
func TestNoCalls(t *testing.T) {
	for _, c := range []struct {
		raw, usage, status string
		ok                 bool
	}{
		{`{"id":"resp_67cc","object":"response","created_at":1741386163,"status":"completed","error":null,"model":"gpt-4.1","output":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Silent moon.","annotations":[]}]}],"usage":{"input_tokens":36,"output_tokens":87,"total_tokens":123}}`,
			`{"input_tokens":36,"output_tokens":87,"total_tokens":123}`, "completed", true},
		{`{"id":"r","status":"failed","output":[]}`, "", "failed", true},
		{`{"id":"r","output":[{"type":"function_call","name":"bash","call_id":"c","arguments":"{}"}]}`, "", "", false},
		{`{"id":"r","output":[{"type":"web_search_call","id":"ws_1","status":"completed"}]}`, "", "", true},
	} {
		usage, status, ok := noCalls([]byte(c.raw))
		if ok != c.ok || string(usage) != c.usage || (ok && status != c.status) {
			t.Errorf("noCalls(%s) = %q, %q, %v; want %q, %q, %v", c.raw, usage, status, ok, c.usage, c.status, c.ok)
		}
	}
}
