package responses

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

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
	ToolResult: func(text string) bool {
		return strings.HasPrefix(text, "ENVELOPE ") || strings.HasPrefix(text, "RESULT ")
	},
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

// reads answers the neighbour queries a test expects, and records those
// asked: a query it has no answer for reads as failed (nil).
type reads struct {
	answers map[string]string
	asked   []string
}

func (r *reads) read(query string) []byte {
	r.asked = append(r.asked, query)
	if a, ok := r.answers[query]; ok {
		return []byte(a)
	}
	return nil
}

// A page of stored items: a response's input items or a conversation's
// items, listed alike; its neighbours (read as ItemsNeighbours asks) tell
// what the page alone cannot. The page shown names its own first and last
// items, and holds at most the client's limit.
func TestStoredItems(t *testing.T) {
	const (
		user       = `{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"make me a pdf"}]}`
		user2      = `{"id":"msg_4","type":"message","role":"user","content":"thanks"}`
		envelope   = `{"id":"msg_2","type":"message","role":"user","content":[{"type":"input_text","text":"ENVELOPE pdf"}]}`
		quoted     = `{"id":"msg_3","type":"message","role":"user","content":[{"type":"input_text","text":"see:"},{"type":"input_text","text":"ENVELOPE pdf"}]}`
		reasoning  = `{"id":"rs_1","type":"reasoning","summary":[]}`
		proxyCall  = `{"id":"fc_1","type":"function_call","call_id":"c1","name":"load_skill","arguments":"{}"}`
		proxyOut   = `{"id":"fco_1","type":"function_call_output","call_id":"c1","output":"ENVELOPE pdf"}`
		searchCall = `{"id":"fc_4","type":"function_call","call_id":"c4","name":"load_skill","arguments":"{}"}`
		searchOut  = `{"id":"fco_4","type":"function_call_output","call_id":"c4","output":"[{\"id\":\"demo/pdf\"}]"}`
		resultOut  = `{"id":"fco_5","type":"function_call_output","call_id":"c5","output":"RESULT {}"}`
		notRun     = `{"id":"fco_2","type":"function_call_output","call_id":"c0","output":"` + notRunOutput + `"}`
		clientCall = `{"id":"fc_3","type":"function_call","call_id":"c3","name":"get_weather","arguments":"{}"}`
		clientOut  = `{"id":"fco_3","type":"function_call_output","call_id":"c3","output":"sunny"}`
		before     = "order=desc&after="
		after      = "order=asc&after="
		limit      = "&limit=20"
		further    = "&limit=100"
	)
	list := func(items ...string) string {
		return `{"object":"list","data":[` + strings.Join(items, ",") + `],"first_id":"x","last_id":"y","has_more":true}`
	}
	end := func(items ...string) string {
		return `{"object":"list","data":[` + strings.Join(items, ",") + `],"first_id":"x","last_id":"y","has_more":false}`
	}
	// shown is a page as the client gets it: its own first and last ids
	// (null for none), has_more as given.
	shown := func(more bool, items ...string) string {
		first, last := "null", "null"
		if len(items) > 0 {
			first, last = `"`+gjson.Get(items[0], "id").Str+`"`, `"`+gjson.Get(items[len(items)-1], "id").Str+`"`
		}
		return `{"object":"list","data":[` + strings.Join(items, ",") + `],"first_id":` + first + `,"last_id":` + last + `,"has_more":` + strconv.FormatBool(more) + `}`
	}
	// olderClients are 20 of the client's messages, newest first: a page of
	// older items that does not hold the call sought.
	var olderClients []string
	for i := 20; i > 0; i-- {
		olderClients = append(olderClients, `{"id":"msg_o`+strconv.Itoa(i)+`","type":"message","role":"user","content":"x"}`)
	}
	tests := []struct {
		name, order, in string
		limit           int
		n               map[string]string // the neighbour queries' answers
		queries         []string          // the queries asked, in order
		want            string            // "": in unchanged
	}{
		{"oldest first", "asc", list(notRun, user, envelope, reasoning, proxyCall, proxyOut, clientCall, clientOut), 0, nil, nil,
			shown(true, user, clientCall, clientOut)},
		{"newest first (the default)", "", list(clientOut, clientCall, proxyOut, proxyCall, reasoning, envelope, user, notRun), 0, nil, nil,
			shown(true, clientOut, clientCall, user)},
		{"the proxy's items at both edges", "asc", end(reasoning, proxyCall, user, clientCall, clientOut, proxyOut), 0, nil, nil,
			shown(false, user, clientCall, clientOut)},
		{"a load_skill output (an envelope) on another page than its call", "asc", list(proxyOut, user), 0, nil, nil, shown(true, user)},
		{"an output the proxy's by its content, its call unread", "asc", list(resultOut, user), 0, nil, nil, shown(true, user)},
		{"another output on another page than its call, unread", "asc", list(searchOut, user), 0, nil,
			[]string{before + "fco_4" + limit}, ""},
		{"another output, its call among the older items", "asc", list(searchOut, user), 0,
			map[string]string{before + "fco_4" + limit: list(clientOut, searchCall, reasoning)}, []string{before + "fco_4" + limit}, shown(true, user)},
		{"another output, its call further back", "asc", list(searchOut, user), 0,
			map[string]string{before + "fco_4" + limit: list(olderClients...), before + "msg_o1" + further: list(searchCall, user2)},
			[]string{before + "fco_4" + limit, before + "msg_o1" + further}, shown(true, user)},
		{"another output, its call beyond what is read", "asc", list(searchOut, user), 0,
			map[string]string{before + "fco_4" + limit: list(olderClients...), before + "msg_o1" + further: list(user2)},
			[]string{before + "fco_4" + limit, before + "msg_o1" + further}, ""},
		{"another output, the list's start read", "asc", list(searchOut, user), 0,
			map[string]string{before + "fco_4" + limit: end(olderClients...)}, []string{before + "fco_4" + limit}, ""},
		{"another output, newest first", "desc", list(user, searchOut), 0,
			map[string]string{before + "fco_4" + limit: list(searchCall)}, []string{before + "fco_4" + limit}, shown(true, user)},
		{"a client output, its call among the older items", "asc", list(clientOut, user), 0,
			map[string]string{before + "fco_3" + limit: list(clientCall)}, []string{before + "fco_3" + limit}, ""},
		{"reasoning newest, unread what follows", "asc", list(user, reasoning), 0, nil, []string{after + "rs_1" + limit}, ""},
		{"reasoning newest, the proxy's call after it", "asc", list(user, reasoning), 0,
			map[string]string{after + "rs_1" + limit: list(proxyCall, proxyOut)}, []string{after + "rs_1" + limit}, shown(true, user)},
		{"reasoning newest, newest first", "", list(reasoning, user), 0,
			map[string]string{after + "rs_1" + limit: list(proxyCall)}, []string{after + "rs_1" + limit}, shown(true, user)},
		{"reasoning newest, the client's call after it", "asc", list(user, reasoning), 0,
			map[string]string{after + "rs_1" + limit: list(clientCall)}, []string{after + "rs_1" + limit}, ""},
		{"reasoning oldest, newest first: its item on the page", "desc", list(user, reasoning), 0, nil, nil, ""},
		{"a message quoting an envelope is the client's", "asc", list(quoted, user), 0, nil, nil, ""},
		{"nothing of the proxy's", "asc", list(user, clientCall, clientOut), 0, nil, nil, ""},
		{"all of it the proxy's", "asc", list(reasoning, proxyCall, proxyOut, envelope), 0, nil, nil, shown(true)},
		{"all of it the proxy's, the last page", "desc", end(envelope, proxyOut, proxyCall, reasoning), 0, nil, nil, shown(false)},
		{"more shown than the limit (a page read past with a larger one)", "asc", end(proxyOut, user, clientCall, proxyCall, clientOut), 2, nil, nil,
			shown(true, user, clientCall)},
		{"as many as the limit", "asc", end(proxyOut, user, clientCall, proxyCall), 2, nil, nil, shown(false, user, clientCall)},
		{"more than the limit, nothing of the proxy's", "desc", end(user2, clientOut, clientCall), 1, nil, nil, shown(true, user2)},
		{"empty", "asc", list(), 0, nil, nil, ""},
		{"not a list", "asc", `{"object":"response","data":[` + reasoning + `]}`, 0, nil, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &reads{answers: tc.n}
			n := ItemsNeighbours([]byte(tc.in), tc.order, false, testMarks, r.read)
			if !slices.Equal(r.asked, tc.queries) {
				t.Errorf("neighbour queries %q, want %q", r.asked, tc.queries)
			}
			got, changed := StoredItems([]byte(tc.in), tc.order, tc.limit, n, testMarks)
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
	for _, tc := range []struct {
		name, order, in string
		first           bool
		want            []string
	}{
		{"asc, the first page", "asc", list(searchOut, reasoning), true, []string{after + "rs_1" + limit}},
		{"asc, the last page", "asc", end(searchOut, reasoning), false, []string{before + "fco_4" + limit}},
		{"asc, the only page", "asc", end(searchOut, reasoning), true, nil},
		{"desc, the first page", "desc", list(reasoning, searchOut), true, []string{before + "fco_4" + limit}},
		{"desc, the last page", "", end(reasoning, searchOut), false, []string{after + "rs_1" + limit}},
		{"desc, the only page", "desc", end(reasoning, searchOut), true, nil},
	} {
		r := &reads{}
		ItemsNeighbours([]byte(tc.in), tc.order, tc.first, testMarks, r.read)
		if !slices.Equal(r.asked, tc.want) {
			t.Errorf("ItemsNeighbours, %s: %q, want %q", tc.name, r.asked, tc.want)
		}
	}
	// One item read by its id (GET /v1/conversations/{id}/items/{item_id}),
	// by the same rules, with its neighbours.
	for _, tc := range []struct {
		name, item string
		n          map[string]string
		queries    []string
		shown      bool
	}{
		{"the client's message", user, nil, nil, true},
		{"an envelope", envelope, nil, nil, false},
		{"a message quoting an envelope", quoted, nil, nil, true},
		{"the proxy's call", proxyCall, nil, nil, false},
		{"its output, an envelope", proxyOut, nil, nil, false},
		{"an output the proxy's by its content", resultOut, nil, nil, false},
		{"the stored-state repair's output", notRun, nil, nil, false},
		{"the client's call", clientCall, nil, nil, true},
		{"the client's output", clientOut, map[string]string{before + "fco_3" + limit: list(user, clientCall)}, []string{before + "fco_3" + limit}, true},
		{"reasoning, what follows unread", reasoning, nil, []string{after + "rs_1" + limit}, true},
		{"reasoning before the proxy's call", reasoning, map[string]string{after + "rs_1" + limit: list(proxyCall)}, []string{after + "rs_1" + limit}, false},
		{"reasoning before the client's message", reasoning, map[string]string{after + "rs_1" + limit: list(user)}, []string{after + "rs_1" + limit}, true},
		{"another output, its call unread", searchOut, nil, []string{before + "fco_4" + limit}, true},
		{"another output of the proxy's call", searchOut, map[string]string{before + "fco_4" + limit: list(searchCall)}, []string{before + "fco_4" + limit}, false},
		{"another output, its call further back", searchOut,
			map[string]string{before + "fco_4" + limit: list(olderClients...), before + "msg_o1" + further: list(user2, searchCall)},
			[]string{before + "fco_4" + limit, before + "msg_o1" + further}, false},
		{"not an object", `[` + proxyCall + `]`, nil, nil, true},
		{"not JSON", `{"type":`, nil, nil, true},
	} {
		r := &reads{answers: tc.n}
		n := ItemNeighbours([]byte(tc.item), testMarks, r.read)
		if !slices.Equal(r.asked, tc.queries) {
			t.Errorf("StoredItem, %s: neighbour queries %q, want %q", tc.name, r.asked, tc.queries)
		}
		if got := StoredItem([]byte(tc.item), n, testMarks); got != tc.shown {
			t.Errorf("StoredItem, %s: shown %v, want %v", tc.name, got, tc.shown)
		}
	}
}
