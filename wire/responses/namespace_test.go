package responses

import (
	"encoding/json"
	"testing"
)

// A call into a namespace tool ("namespace":"mcp__skills") is the
// client's even under one of the proxy's names: the tool loop does not take
// it (JSON and streamed), a read-back does not hide it, a state repair does
// not answer it, and the gate does not count it as a call of a top-level
// function of that name.
func TestNamespacedCallsAreTheClients(t *testing.T) {
	mine := func(n string) bool { return n == "load_skill" }
	call := `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","namespace":"mcp__skills","arguments":"{}","status":"completed"}`
	plain := `{"type":"function_call","id":"fc_2","call_id":"call_2","name":"load_skill","arguments":"{}","status":"completed"}`

	r, _ := Parse([]byte(`{"model":"m","input":"x"}`))
	if ans, _, ok := r.ReadAnswer([]byte(`{"id":"resp_1","object":"response","status":"completed","output":[`+call+`]}`), 0, mine); !ok || ans != nil {
		t.Errorf("JSON: the proxy took the namespaced call: %+v", ans)
	}
	if ans, _, ok := r.ReadAnswer([]byte(`{"id":"resp_1","object":"response","status":"completed","output":[`+plain+`]}`), 0, mine); !ok || ans == nil {
		t.Errorf("JSON: the proxy did not take its own call")
	}

	r, _ = Parse([]byte(`{"model":"m","input":"x","stream":true}`))
	_, e := runRound(r.NewStream(mine), false, sse(
		`{"type":"response.created","response":{"id":"resp_1","output":[]}}`,
		`{"type":"response.output_item.added","output_index":0,"item":`+call+`}`,
		`{"type":"response.output_item.done","output_index":0,"item":`+call+`}`,
		`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[`+call+`]}}`))
	if e.Loop != nil {
		t.Errorf("stream: the proxy took the namespaced call")
	}

	if hide := proxyItems([]json.RawMessage{json.RawMessage(call), json.RawMessage(plain)}, mine); hide[0] || !hide[1] {
		t.Errorf("read-back hides %v, want only the plain call", hide)
	}

	r, _ = Parse([]byte(`{"model":"m","previous_response_id":"resp_1","input":[{"role":"user","content":"x"}]}`))
	if _, n, err := r.AnswerDropped(r.Body(), []byte(`{"output":[`+call+`]}`), mine); err != nil || n != 0 {
		t.Errorf("a state repair answered the client's call: %d, %v", n, err)
	}

	r, err := Parse([]byte(`{"model":"m","input":[` + call + `,{"type":"function_call_output","call_id":"call_1","output":"ok"},{"role":"user","content":"x"}]}`))
	if err != nil || len(r.View().Called) != 0 {
		t.Errorf("Called %v, %v: a namespaced call is no top-level function's", r.View().Called, err)
	}

	// A read-back shows the client's namespaced call with its output, though
	// the output has the shape of the proxy's load_skill answer (the
	// library's own MCP server answers in it).
	out := `{"id":"fco_1","type":"function_call_output","call_id":"call_1","output":"ENVELOPE pdf"}`
	page := `{"object":"list","data":[` + call + `,` + out + `],"first_id":"fc_1","last_id":"fco_1","has_more":false}`
	if got, changed := StoredItems([]byte(page), "asc", 0, Neighbours{}, testMarks); changed {
		t.Errorf("a read-back hid the client's namespaced call's output: %s", got)
	}

	// A custom (free-form) tool's call is the client's under any name.
	custom := `{"type":"custom_tool_call","id":"ctc_1","call_id":"call_3","name":"load_skill","input":"x","status":"completed"}`
	r, _ = Parse([]byte(`{"model":"m","input":"x"}`))
	if ans, _, ok := r.ReadAnswer([]byte(`{"id":"resp_1","object":"response","status":"completed","output":[`+custom+`]}`), 0, mine); !ok || ans != nil {
		t.Errorf("the proxy took a custom tool's call named load_skill: %+v", ans)
	}
}
