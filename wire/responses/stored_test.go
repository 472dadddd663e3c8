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
// items, listed alike; its neighbours (read as NeighbourQueries says) tell
// what the page alone cannot.
func TestStoredItems(t *testing.T) {
	const (
		user       = `{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"make me a pdf"}]}`
		envelope   = `{"id":"msg_2","type":"message","role":"user","content":[{"type":"input_text","text":"ENVELOPE pdf"}]}`
		quoted     = `{"id":"msg_3","type":"message","role":"user","content":[{"type":"input_text","text":"see:"},{"type":"input_text","text":"ENVELOPE pdf"}]}`
		reasoning  = `{"id":"rs_1","type":"reasoning","summary":[]}`
		proxyCall  = `{"id":"fc_1","type":"function_call","call_id":"c1","name":"load_skill","arguments":"{}"}`
		proxyOut   = `{"id":"fco_1","type":"function_call_output","call_id":"c1","output":"ENVELOPE pdf"}`
		searchCall = `{"id":"fc_4","type":"function_call","call_id":"c4","name":"load_skill","arguments":"{}"}`
		searchOut  = `{"id":"fco_4","type":"function_call_output","call_id":"c4","output":"[{\"id\":\"demo/pdf\"}]"}`
		notRun     = `{"id":"fco_2","type":"function_call_output","call_id":"c0","output":"` + notRunOutput + `"}`
		clientCall = `{"id":"fc_3","type":"function_call","call_id":"c3","name":"get_weather","arguments":"{}"}`
		clientOut  = `{"id":"fco_3","type":"function_call_output","call_id":"c3","output":"sunny"}`
		before     = "order=desc&after="
		after      = "order=asc&after="
		limit      = "&limit=20"
	)
	list := func(items ...string) string {
		return `{"object":"list","data":[` + strings.Join(items, ",") + `],"first_id":"x","last_id":"y","has_more":true}`
	}
	tests := []struct {
		name, order, in string
		queries         [2]string // NeighbourQueries of the page: before, after
		n               [2]string // its neighbours, as listed
		want            string    // "": in unchanged
	}{
		{"oldest first", "asc", list(notRun, user, envelope, reasoning, proxyCall, proxyOut, clientCall, clientOut), [2]string{}, [2]string{},
			list(user, clientCall, clientOut)},
		{"newest first (the default)", "", list(clientOut, clientCall, proxyOut, proxyCall, reasoning, envelope, user, notRun), [2]string{}, [2]string{},
			list(clientOut, clientCall, user)},
		{"a load_skill output (an envelope) on another page than its call", "asc", list(proxyOut, user), [2]string{}, [2]string{}, list(user)},
		{"another output on another page than its call, unread", "asc", list(searchOut, user), [2]string{before + "fco_4" + limit, ""}, [2]string{}, ""},
		{"another output, its call among the older items", "asc", list(searchOut, user), [2]string{before + "fco_4" + limit, ""},
			[2]string{list(clientOut, searchCall, reasoning), ""}, list(user)},
		{"another output, newest first", "desc", list(user, searchOut), [2]string{before + "fco_4" + limit, ""},
			[2]string{list(searchCall), ""}, list(user)},
		{"a client output, its call among the older items", "asc", list(clientOut, user), [2]string{before + "fco_3" + limit, ""},
			[2]string{list(clientCall), ""}, ""},
		{"reasoning newest, unread what follows", "asc", list(user, reasoning), [2]string{"", after + "rs_1" + limit}, [2]string{}, ""},
		{"reasoning newest, the proxy's call after it", "asc", list(user, reasoning), [2]string{"", after + "rs_1" + limit},
			[2]string{"", list(proxyCall, proxyOut)}, list(user)},
		{"reasoning newest, newest first", "", list(reasoning, user), [2]string{"", after + "rs_1" + limit},
			[2]string{"", list(proxyCall)}, list(user)},
		{"reasoning newest, the client's call after it", "asc", list(user, reasoning), [2]string{"", after + "rs_1" + limit},
			[2]string{"", list(clientCall)}, ""},
		{"reasoning oldest, newest first: its item on the page", "desc", list(user, reasoning), [2]string{}, [2]string{}, ""},
		{"a message quoting an envelope is the client's", "asc", list(quoted, user), [2]string{}, [2]string{}, ""},
		{"nothing of the proxy's", "asc", list(user, clientCall, clientOut), [2]string{}, [2]string{}, ""},
		{"all of it the proxy's", "asc", list(reasoning, proxyCall, proxyOut, envelope), [2]string{}, [2]string{}, list()},
		{"empty", "asc", list(), [2]string{}, [2]string{}, ""},
		{"not a list", "asc", `{"object":"response","data":[` + reasoning + `]}`, [2]string{}, [2]string{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, a := ItemsNeighbours([]byte(tc.in), tc.order, false, testMarks)
			if [2]string{b, a} != tc.queries {
				t.Errorf("neighbour queries %q, want %q", [2]string{b, a}, tc.queries)
			}
			got, changed := StoredItems([]byte(tc.in), tc.order, Neighbours{[]byte(tc.n[0]), []byte(tc.n[1])}, testMarks)
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(got) != want || changed != (tc.want != "") {
				t.Errorf("got %s (changed %v)\nwant %s", got, changed, want)
			}
		})
	}
	// At an end of its list a page has nothing to read there: the first
	// page (no cursor) holds the oldest items in asc order, the newest in
	// desc; a page without more holds the other end.
	end := func(items ...string) string {
		return `{"object":"list","data":[` + strings.Join(items, ",") + `],"first_id":"x","last_id":"y","has_more":false}`
	}
	for _, tc := range []struct {
		name, order, in string
		first           bool
		want            [2]string
	}{
		{"asc, the first page", "asc", list(searchOut, reasoning), true, [2]string{"", after + "rs_1" + limit}},
		{"asc, the last page", "asc", end(searchOut, reasoning), false, [2]string{before + "fco_4" + limit, ""}},
		{"asc, the only page", "asc", end(searchOut, reasoning), true, [2]string{}},
		{"desc, the first page", "desc", list(reasoning, searchOut), true, [2]string{before + "fco_4" + limit, ""}},
		{"desc, the last page", "", end(reasoning, searchOut), false, [2]string{"", after + "rs_1" + limit}},
		{"desc, the only page", "desc", end(reasoning, searchOut), true, [2]string{}},
	} {
		if b, a := ItemsNeighbours([]byte(tc.in), tc.order, tc.first, testMarks); [2]string{b, a} != tc.want {
			t.Errorf("ItemsNeighbours, %s: %q, want %q", tc.name, [2]string{b, a}, tc.want)
		}
	}
	// One item read by its id (GET /v1/conversations/{id}/items/{item_id}),
	// by the same rules, with its neighbours.
	for _, tc := range []struct {
		name, item string
		queries    [2]string
		n          [2]string
		shown      bool
	}{
		{"the client's message", user, [2]string{}, [2]string{}, true},
		{"an envelope", envelope, [2]string{}, [2]string{}, false},
		{"a message quoting an envelope", quoted, [2]string{}, [2]string{}, true},
		{"the proxy's call", proxyCall, [2]string{}, [2]string{}, false},
		{"its output, an envelope", proxyOut, [2]string{}, [2]string{}, false},
		{"the stored-state repair's output", notRun, [2]string{}, [2]string{}, false},
		{"the client's call", clientCall, [2]string{}, [2]string{}, true},
		{"the client's output", clientOut, [2]string{before + "fco_3" + limit, ""}, [2]string{list(user, clientCall), ""}, true},
		{"reasoning, what follows unread", reasoning, [2]string{"", after + "rs_1" + limit}, [2]string{}, true},
		{"reasoning before the proxy's call", reasoning, [2]string{"", after + "rs_1" + limit}, [2]string{"", list(proxyCall)}, false},
		{"reasoning before the client's message", reasoning, [2]string{"", after + "rs_1" + limit}, [2]string{"", list(user)}, true},
		{"another output, its call unread", searchOut, [2]string{before + "fco_4" + limit, ""}, [2]string{}, true},
		{"another output of the proxy's call", searchOut, [2]string{before + "fco_4" + limit, ""}, [2]string{list(searchCall), ""}, false},
		{"not an object", `[` + proxyCall + `]`, [2]string{}, [2]string{}, true},
		{"not JSON", `{"type":`, [2]string{}, [2]string{}, true},
	} {
		b, a := ItemNeighbours([]byte(tc.item), testMarks)
		if [2]string{b, a} != tc.queries {
			t.Errorf("StoredItem, %s: neighbour queries %q, want %q", tc.name, [2]string{b, a}, tc.queries)
		}
		if got := StoredItem([]byte(tc.item), Neighbours{[]byte(tc.n[0]), []byte(tc.n[1])}, testMarks); got != tc.shown {
			t.Errorf("StoredItem, %s: shown %v, want %v", tc.name, got, tc.shown)
		}
	}
}
