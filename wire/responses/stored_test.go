package responses

import (
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

// testMarks recognise a catalog that is "CATALOG" at the end of a text and
// envelopes that are "ENVELOPE ...".
var testMarks = wire.Marks{
	Tool: func(name string) bool { return name == "load_skill" },
	CatalogStart: func(text string) int {
		if strings.HasSuffix(text, "CATALOG") {
			return len(text) - len("CATALOG")
		}
		return -1
	},
	Envelope: func(text string) bool { return strings.HasPrefix(text, "ENVELOPE ") },
}

func TestStoredResponse(t *testing.T) {
	const (
		proxyTool  = `{"type":"function","name":"load_skill","parameters":{},"strict":false}`
		clientTool = `{"type":"function","name":"get_weather","parameters":{}}`
		ownLoad    = `{"type":"function","name":"load_skill","parameters":{}}` // the client's own, strict as it sent it
		reasoning  = `{"id":"rs_1","type":"reasoning","summary":[]}`
		proxyCall  = `{"id":"fc_1","type":"function_call","call_id":"c1","name":"load_skill","arguments":"{}"}`
		message    = `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}`
	)
	obj := func(instructions, tools, output string) string {
		return `{"id":"resp_1","object":"response","instructions":` + instructions + `,"output":[` + output + `],"tools":[` + tools + `],"usage":{}}`
	}
	tests := []struct {
		name, in, want string
	}{
		{"catalog after the client's instructions", obj(`"Be brief.\n\nCATALOG"`, clientTool, message), obj(`"Be brief."`, clientTool, message)},
		{"the catalog alone", obj(`"CATALOG"`, "", message), obj(`null`, "", message)},
		{"a catalog not after a blank line is the client's", obj(`"Be brief.\nCATALOG"`, "", message), ""},
		{"no catalog", obj(`"Be brief."`, clientTool, message), ""},
		{"instructions as items", obj(`[{"role":"developer","content":"CATALOG"}]`, "", message), ""},
		{"the proxy's tool and its call, with the reasoning before it", obj(`null`, clientTool+","+proxyTool, message+","+reasoning+","+proxyCall),
			obj(`null`, clientTool, message)},
		{"the client's own tool of that name", obj(`null`, ownLoad, reasoning+","+proxyCall), ""},
		{"not a response", `{"object":"list","instructions":"CATALOG"}`, ""},
		{"not JSON", `{"object":`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := StoredResponse([]byte(tc.in), testMarks)
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(got) != want || changed != (tc.want != "") {
				t.Errorf("got %s (changed %v)\nwant %s", got, changed, want)
			}
		})
	}
}

// A page of stored items: a response's input items or a conversation's
// items, listed alike.
func TestStoredItems(t *testing.T) {
	const (
		user       = `{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"make me a pdf"}]}`
		envelope   = `{"id":"msg_2","type":"message","role":"user","content":[{"type":"input_text","text":"ENVELOPE pdf"}]}`
		quoted     = `{"id":"msg_3","type":"message","role":"user","content":[{"type":"input_text","text":"see:"},{"type":"input_text","text":"ENVELOPE pdf"}]}`
		reasoning  = `{"id":"rs_1","type":"reasoning","summary":[]}`
		proxyCall  = `{"id":"fc_1","type":"function_call","call_id":"c1","name":"load_skill","arguments":"{}"}`
		proxyOut   = `{"id":"fco_1","type":"function_call_output","call_id":"c1","output":"ENVELOPE pdf"}`
		searchOut  = `{"id":"fco_4","type":"function_call_output","call_id":"c4","output":"[{\"id\":\"demo/pdf\"}]"}`
		notRun     = `{"id":"fco_2","type":"function_call_output","call_id":"c0","output":"` + notRunOutput + `"}`
		clientCall = `{"id":"fc_3","type":"function_call","call_id":"c3","name":"get_weather","arguments":"{}"}`
		clientOut  = `{"id":"fco_3","type":"function_call_output","call_id":"c3","output":"sunny"}`
	)
	list := func(items ...string) string {
		return `{"object":"list","data":[` + strings.Join(items, ",") + `],"first_id":"x","last_id":"y","has_more":true}`
	}
	tests := []struct {
		name, order, in, want string
	}{
		{"oldest first", "asc", list(notRun, user, envelope, reasoning, proxyCall, proxyOut, clientCall, clientOut),
			list(user, clientCall, clientOut)},
		{"newest first (the default)", "", list(clientOut, clientCall, proxyOut, proxyCall, reasoning, envelope, user, notRun),
			list(clientOut, clientCall, user)},
		{"a load_skill output (an envelope) on another page than its call", "asc", list(proxyOut, user), list(user)},
		{"another output on another page than its call stays", "asc", list(searchOut, user), ""},
		{"a message quoting an envelope is the client's", "asc", list(quoted, user), ""},
		{"nothing of the proxy's", "asc", list(user, clientCall, clientOut), ""},
		{"all of it the proxy's", "asc", list(reasoning, proxyCall, proxyOut, envelope), list()},
		{"not a list", "asc", `{"object":"response","data":[` + envelope + `]}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := StoredItems([]byte(tc.in), tc.order, testMarks)
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(got) != want || changed != (tc.want != "") {
				t.Errorf("got %s (changed %v)\nwant %s", got, changed, want)
			}
		})
	}
	// One item read alone (GET /v1/conversations/{id}/items/{item_id}) by
	// the same rules, as on a page of its own: what needs its neighbours
	// (reasoning before a call, an output that is not an envelope) is shown.
	for _, tc := range []struct {
		name, item string
		shown      bool
	}{
		{"the client's message", user, true},
		{"an envelope", envelope, false},
		{"a message quoting an envelope", quoted, true},
		{"the proxy's call", proxyCall, false},
		{"its output, an envelope", proxyOut, false},
		{"the stored-state repair's output", notRun, false},
		{"the client's call", clientCall, true},
		{"the client's output", clientOut, true},
		{"reasoning, alone", reasoning, true},
		{"another output, alone", searchOut, true},
		{"not an object", `[` + proxyCall + `]`, true},
		{"not JSON", `{"type":`, true},
	} {
		if got := StoredItem([]byte(tc.item), testMarks); got != tc.shown {
			t.Errorf("StoredItem, %s: shown %v, want %v", tc.name, got, tc.shown)
		}
	}
}
