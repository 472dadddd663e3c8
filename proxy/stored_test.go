package proxy

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/skills"
)

// A response read back by id (GET /v1/responses/{id}) shows what the
// client's POST showed, as far as the stored object tells: its own
// instructions and tools, no call of the proxy's in the output; its input
// items (GET /v1/responses/{id}/input_items) hold no envelope, no call of
// the proxy's and no output of one. Usage and what earlier rounds showed
// need state the proxy does not keep (see wire/responses/stored.go).
func TestResponsesStoredReadBackIsTheClients(t *testing.T) {
	catalog := skills.RenderCatalog([]*skills.Skill{{ID: "demo/pdf", Description: "Make PDF files."}},
		skills.CatalogOptions{Footer: "3 more skills are not listed here: call search_skills."})
	load := func(skill string) fakeai.Responder {
		return fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "a skill fits"},
			ToolCalls: []fakeai.Call{{ID: "call_" + skill, Name: "load_skill", Arguments: `{"skill_id":"demo/` + skill + `"}`}}})
	}
	answer := fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."})
	weather := `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{}}}]`
	tests := []struct {
		name   string
		body   string
		rounds int // MaxToolRounds; 0: the default
		script []fakeai.Responder
		input  string // the client's input items, as the list shows them (asc)
	}{
		{"instructions and tools, a hidden round", `{"model":"m","instructions":"Be brief.","tools":` + weather + `,"input":"make me a pdf"}`, 0,
			[]fakeai.Responder{load("pdf"), answer}, `["make me a pdf"]`},
		{"none of either", `{"model":"m","input":[{"role":"user","content":"make me a pdf"}]}`, 0,
			[]fakeai.Responder{load("pdf"), answer}, `["make me a pdf"]`},
		{"the round limit: the proxy's call in the output", `{"model":"m","instructions":"Be brief.","input":"make me a pdf"}`, 1,
			[]fakeai.Responder{load("pdf"), load("xlsx")}, `["make me a pdf"]`},
		{"no hidden round", `{"model":"m","instructions":"Be brief.","tools":` + weather + `,"input":"hi"}`, 0,
			[]fakeai.Responder{answer}, `["hi"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxToolRounds = tc.rounds })
			h.rw.catalog = catalog
			h.up.Script(tc.script...)
			resp, posted := h.do("POST", "/v1/responses", tc.body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("POST: %d %s", resp.StatusCode, posted)
			}
			id := gjson.GetBytes(posted, "id").Str
			resp, got := h.do("GET", "/v1/responses/"+id, "", nil)
			if resp.StatusCode != 200 || gjson.GetBytes(got, "id").Str != id {
				t.Fatalf("GET: %d %s", resp.StatusCode, got)
			}
			for _, k := range []string{"instructions", "tools", "output"} {
				p := gjson.GetBytes(posted, k).Raw
				if k == "output" && tc.rounds == 1 {
					// The round limit's message stands in for an answer the
					// stored object does not have; read back, it cannot be
					// told from a hidden round's, which has none either.
					p = gjson.GetBytes(posted, `output.#(id!%"msg_skillrouter_*")#`).Raw
				}
				if g := gjson.GetBytes(got, k).Raw; g != p {
					t.Errorf("%s read back:\n%s\nthe POST's:\n%s", k, g, p)
				}
			}
			if strings.Contains(string(got), "Agent Skills") || strings.Contains(string(got), "load_skill") {
				t.Errorf("the proxy's catalog or tool read back: %s", got)
			}
			resp, items := h.do("GET", "/v1/responses/"+id+"/input_items?order=asc&limit=100", "", nil)
			if resp.StatusCode != 200 {
				t.Fatalf("GET input_items: %d %s", resp.StatusCode, items)
			}
			var texts []string
			for _, it := range gjson.GetBytes(items, "data").Array() {
				texts = append(texts, strconv.Quote(it.Get("content").String()))
			}
			if g := "[" + strings.Join(texts, ",") + "]"; g != tc.input {
				t.Errorf("input items %s, want %s:\n%s", g, tc.input, items)
			}
		})
	}
}

// In a stream the client gets one id, in response.created as in
// response.completed: the answer's, since response.created waits for the
// answer (LangChain and the AI SDK keep response.created's to chain from).
// Read back, it shows no call of the proxy's. Other methods on a stored
// response, and a GET of it as a stream, pass through.
func TestResponsesStoredReadBackStreamAndOtherMethods(t *testing.T) {
	h := newHarness(t, nil)
	h.rw.catalog = skills.RenderCatalog([]*skills.Skill{{ID: "demo/pdf", Description: "Make PDF files."}}, skills.CatalogOptions{})
	h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."}))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	events := sseData(t, b)
	first := gjson.Get(events[0], "response.id").Str
	if gjson.Get(events[0], "type").Str != "response.created" || first != gjson.Get(events[len(events)-1], "response.id").Str {
		t.Errorf("response.created names %q, response.completed %q: one stream, one response", first, gjson.Get(events[len(events)-1], "response.id").Str)
	}
	finish(t, h)
	resp, got := h.do("GET", "/v1/responses/"+first, "", nil)
	if resp.StatusCode != 200 || gjson.GetBytes(got, "id").Str != first || gjson.GetBytes(got, "instructions").Type != gjson.Null ||
		gjson.GetBytes(got, "tools").Raw != "[]" || gjson.GetBytes(got, "output.0.content.0.text").Str != "Here is your pdf." ||
		strings.Contains(string(got), "load_skill") {
		t.Errorf("the stream's response read back: %d %s", resp.StatusCode, got)
	}
	n := len(h.up.Requests())
	for _, tc := range []struct{ method, path string }{
		{"DELETE", "/v1/responses/" + first},
		{"POST", "/v1/responses/" + first + "/cancel"},
		{"GET", "/v1/responses/" + first + "?stream=true"},
		{"HEAD", "/v1/responses/" + first},
	} {
		h.do(tc.method, tc.path, "", nil)
		reqs := append(h.up.Requests(), h.up.Deletes()...)
		if !slices.ContainsFunc(reqs, func(r fakeai.Request) bool { return r.Method == tc.method && r.Path == strings.Split(tc.path, "?")[0] }) {
			t.Errorf("%s %s did not reach the upstream", tc.method, tc.path)
		}
	}
	if len(h.up.Requests()) < n+3 {
		t.Errorf("requests %d after %d", len(h.up.Requests()), n)
	}
}

// The SDKs page input items with after=<the last item shown> and stop at
// an empty page even when has_more is true, so a page that held only the
// proxy's items must not come out empty while more follow: paging as the
// SDKs do, with small pages, the client gets its own items, and neither
// reasoning whose call is on the next page nor an output whose call is on
// the page before.
func TestResponsesStoredInputItemsPagedAsTheSDKs(t *testing.T) {
	for _, order := range []string{"asc", "desc"} {
		for _, limit := range []int{1, 2, 3} {
			t.Run(order+"/"+strconv.Itoa(limit), func(t *testing.T) {
				h := newHarness(t, nil)
				scriptHiddenRounds(h, true, "Here is your pdf.")
				resp, posted := h.do("POST", "/v1/responses", `{"model":"m","input":[{"role":"user","content":"first"},{"role":"user","content":"make me a pdf"}]}`, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("POST: %d %s", resp.StatusCode, posted)
				}
				id := gjson.GetBytes(posted, "id").Str
				var texts []string
				after := ""
				for page := 0; page < 20; page++ {
					q := "?order=" + order + "&limit=" + strconv.Itoa(limit)
					if after != "" {
						q += "&after=" + after
					}
					resp, items := h.do("GET", "/v1/responses/"+id+"/input_items"+q, "", nil)
					if resp.StatusCode != 200 {
						t.Fatalf("GET input_items: %d %s", resp.StatusCode, items)
					}
					data := gjson.GetBytes(items, "data").Array()
					for _, it := range data {
						texts = append(texts, it.Get("content").String())
					}
					if !gjson.GetBytes(items, "has_more").Bool() || len(data) == 0 {
						break
					}
					after = data[len(data)-1].Get("id").Str
				}
				want := []string{"first", "make me a pdf"}
				if order == "desc" {
					slices.Reverse(want)
				}
				if !slices.Equal(texts, want) {
					t.Errorf("paged like the SDKs, the client read %q, want %q", texts, want)
				}
			})
		}
	}
}

// itemText is a listed message's text: its content string, or its parts'
// texts joined.
func itemText(it gjson.Result) string {
	if c := it.Get("content"); c.Type == gjson.String {
		return c.Str
	}
	var b strings.Builder
	for _, p := range it.Get("content.#.text").Array() {
		b.WriteString(p.Str)
	}
	return b.String()
}

// scriptHiddenRounds scripts the upstream for a turn with two hidden rounds,
// search_skills then load_skill, each with reasoning before its call when
// thinking, and an answer; the search's result is JSON, not an envelope.
func scriptHiddenRounds(h *harness, thinking bool, answer string) {
	h.rw.catalog = skills.RenderCatalog([]*skills.Skill{{ID: "demo/pdf", Description: "Make PDF files."}}, skills.CatalogOptions{})
	h.rw.search = `{"query":"pdf","results":[{"id":"demo/pdf","description":"Make PDF files."}],"hint":"Call load_skill with the id of the skill that fits the task."}`
	search := fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_s", Name: "search_skills", Arguments: `{"query":"pdf"}`}}}
	load := fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}
	if thinking {
		search.Thinking = &fakeai.Thinking{Text: "search first"}
		load.Thinking = &fakeai.Thinking{Text: "a skill fits"}
	}
	h.up.Script(fakeai.Reply(search), fakeai.Reply(load), fakeai.Reply(fakeai.Turn{Content: answer}))
}

// conversationWithHiddenRound makes a conversation through the proxy and
// runs two turns in it, the first with hidden rounds (scriptHiddenRounds), and
// returns its id and the client's messages, oldest first.
func conversationWithHiddenRound(t *testing.T, h *harness, thinking bool) (string, []string) {
	t.Helper()
	resp, b := h.do("POST", "/v1/conversations", `{}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("create conversation: %d %s", resp.StatusCode, b)
	}
	cid := gjson.GetBytes(b, "id").Str
	scriptHiddenRounds(h, thinking, "Here is your pdf.")
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "You're welcome."}))
	for _, in := range []string{"make me a pdf", "thanks"} {
		resp, b := h.do("POST", "/v1/responses", `{"model":"m","conversation":"`+cid+`","input":[{"role":"user","content":"`+in+`"}]}`, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("POST %q: %d %s", in, resp.StatusCode, b)
		}
	}
	return cid, []string{"make me a pdf", "Here is your pdf.", "thanks", "You're welcome."}
}

// A conversation's items (GET /v1/conversations/{id}/items) are shown by
// the rules of a response's input items: the client's messages, no
// envelope, no call of the proxy's with the reasoning before it, no output
// of one; newest first by default, as the API lists them. One item of the
// proxy's read by its id (GET /v1/conversations/{id}/items/{item_id}) is
// answered as the API answers an item it does not have; the client's come
// as they are.
func TestResponsesConversationItemsAreTheClients(t *testing.T) {
	h := newHarness(t, nil)
	cid, want := conversationWithHiddenRound(t, h, true)
	stored := h.up.Conversation(cid)
	var kinds []string
	for _, it := range stored {
		g := gjson.Parse(it)
		kinds = append(kinds, g.Get("type").Str+":"+g.Get("name").Str)
	}
	if all := strings.Join(kinds, " "); !strings.Contains(all, "reasoning:") || !strings.Contains(all, "function_call:load_skill") ||
		!strings.Contains(all, "function_call:search_skills") || !strings.Contains(all, "function_call_output:") ||
		!strings.Contains(strings.Join(stored, ""), "skill_context") || !strings.Contains(strings.Join(stored, ""), `\"results\"`) {
		t.Fatalf("the conversation lacks the proxy's items: %s", all)
	}
	for _, order := range []string{"", "asc", "desc"} {
		q := "?limit=100"
		if order != "" {
			q += "&order=" + order
		}
		resp, b := h.do("GET", "/v1/conversations/"+cid+"/items"+q, "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("GET items%s: %d %s", q, resp.StatusCode, b)
		}
		var texts []string
		for _, it := range gjson.GetBytes(b, "data").Array() {
			texts = append(texts, itemText(it))
		}
		w := slices.Clone(want)
		if order != "asc" {
			slices.Reverse(w)
		}
		if !slices.Equal(texts, w) {
			t.Errorf("items%s: %q, want %q\n%s", q, texts, w, b)
		}
		if gjson.GetBytes(b, "has_more").Bool() || gjson.GetBytes(b, "object").Str != "list" {
			t.Errorf("items%s: %s", q, b)
		}
	}
	resp, b := h.do("GET", "/v1/conversations/"+cid+"/items?order=asc&limit=100", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	shown := map[string]bool{}
	for _, it := range gjson.GetBytes(b, "data").Array() {
		shown[it.Get("id").Str] = true
	}
	for i, it := range stored {
		id := gjson.Get(it, "id").Str
		resp, b := h.do("GET", "/v1/conversations/"+cid+"/items/"+id, "", nil)
		switch {
		case shown[id] && (resp.StatusCode != 200 || string(b) != it):
			t.Errorf("item %d (%s), the client's: %d %s, want it as stored %s", i, kinds[i], resp.StatusCode, b, it)
		case !shown[id] && (resp.StatusCode != 404 || string(b) != `{"error":{"message":"Item with id '`+id+`' not found.","type":"invalid_request_error","param":null,"code":null}}`):
			t.Errorf("item %d (%s), the proxy's: %d %s, want a 404 as for an item that is not there", i, kinds[i], resp.StatusCode, b)
		}
	}
	// Other methods and other paths pass through; so does an upstream's error.
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/conversations/" + cid + "/items/no_such_item", 404},
		{"GET", "/v1/conversations/conv_nope/items", 404},
		{"POST", "/v1/conversations/" + cid + "/items", 0},
		{"DELETE", "/v1/conversations/" + cid + "/items/" + gjson.Get(stored[0], "id").Str, 200},
	} {
		n := len(h.up.Requests()) + len(h.up.Deletes())
		resp, b := h.do(tc.method, tc.path, `{}`, nil)
		if tc.status != 0 && resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, b)
		}
		if len(h.up.Requests())+len(h.up.Deletes()) == n {
			t.Errorf("%s %s did not reach the upstream", tc.method, tc.path)
		}
	}
}

// The SDKs page a conversation's items with after=<last_id> (openai-node's
// and openai-python's ConversationCursorPage; a response's input items
// with the last item shown) and stop at an empty page even when has_more
// is true: paging either way with small pages, the client reads its own
// items, each once, and no reasoning of the proxy's whose call fell on
// another page.
func TestResponsesConversationItemsPagedAsTheSDKs(t *testing.T) {
	for _, cursor := range []string{"last_id", "last item"} {
		for _, order := range []string{"asc", "desc"} {
			for _, limit := range []int{1, 2, 3} {
				t.Run(cursor+"/"+order+"/"+strconv.Itoa(limit), func(t *testing.T) {
					h := newHarness(t, nil)
					cid, want := conversationWithHiddenRound(t, h, true)
					var texts []string
					after := ""
					for page := 0; page < 20; page++ {
						q := "?order=" + order + "&limit=" + strconv.Itoa(limit)
						if after != "" {
							q += "&after=" + after
						}
						resp, b := h.do("GET", "/v1/conversations/"+cid+"/items"+q, "", nil)
						if resp.StatusCode != 200 {
							t.Fatalf("GET items: %d %s", resp.StatusCode, b)
						}
						data := gjson.GetBytes(b, "data").Array()
						for _, it := range data {
							texts = append(texts, itemText(it))
						}
						if !gjson.GetBytes(b, "has_more").Bool() || len(data) == 0 {
							break
						}
						after = gjson.GetBytes(b, "last_id").Str
						if cursor == "last item" {
							after = data[len(data)-1].Get("id").Str
						}
					}
					if order == "desc" {
						slices.Reverse(want)
					}
					if !slices.Equal(texts, want) {
						t.Errorf("paged like the SDKs, the client read %q, want %q", texts, want)
					}
				})
			}
		}
	}
}

// The neighbours of an item are read from its list with the client's
// credentials and query, the proxy's order, after and limit; when that
// read fails, what they would decide is shown rather than the GET failing.
func TestResponsesConversationItemNeighbours(t *testing.T) {
	h := newHarness(t, nil)
	cid, _ := conversationWithHiddenRound(t, h, true)
	var rs string
	for _, it := range h.up.Conversation(cid) {
		if gjson.Get(it, "type").Str == "reasoning" {
			rs = gjson.Get(it, "id").Str
			break
		}
	}
	hdr := map[string]string{"Authorization": "Bearer client-key"}
	item := "/v1/conversations/" + cid + "/items/" + rs + "?include=reasoning.encrypted_content"
	n := len(h.up.Requests())
	if resp, b := h.do("GET", item, "", hdr); resp.StatusCode != 404 {
		t.Fatalf("the proxy's reasoning: %d %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()[n:]
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want the item and its neighbours", len(reqs))
	}
	nb := reqs[1]
	q, _ := url.ParseQuery(nb.RawQuery)
	if nb.Method != "GET" || nb.Path != "/v1/conversations/"+cid+"/items" || nb.Header.Get("Authorization") != "Bearer client-key" ||
		q.Get("order") != "asc" || q.Get("after") != rs || q.Get("limit") != "20" || q.Get("include") != "reasoning.encrypted_content" {
		t.Errorf("neighbours read as %s %s?%s (Authorization %q)", nb.Method, nb.Path, nb.RawQuery, nb.Header.Get("Authorization"))
	}
	h.up.Handle("/v1/conversations/"+cid+"/items", fakeai.Status(500, "down"))
	if resp, b := h.do("GET", item, "", hdr); resp.StatusCode != 200 || gjson.GetBytes(b, "id").Str != rs {
		t.Errorf("neighbours unread: %d %s, want the item shown", resp.StatusCode, b)
	}
}

// A page at an end of its list has nothing there to read: the input items
// of a turn that answers a call of the previous response (its output, the
// call elsewhere) are read with one request, in either order.
func TestResponsesStoredItemsNoNeighboursAtTheEnds(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_w", Name: "get_weather", Arguments: `{}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "Sunny."}))
	tools := `[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]`
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","tools":`+tools+`,"input":"weather?"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	resp, b = h.do("POST", "/v1/responses", `{"model":"m","tools":`+tools+`,"previous_response_id":"`+gjson.GetBytes(b, "id").Str+
		`","input":[{"type":"function_call_output","call_id":"call_w","output":"sunny"}]}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	id := gjson.GetBytes(b, "id").Str
	for _, q := range []string{"", "?order=asc", "?order=desc&limit=5"} {
		n := len(h.up.Requests())
		resp, b := h.do("GET", "/v1/responses/"+id+"/input_items"+q, "", nil)
		if resp.StatusCode != 200 || gjson.GetBytes(b, "data.0.call_id").Str != "call_w" {
			t.Fatalf("input_items%s: %d %s", q, resp.StatusCode, b)
		}
		if k := len(h.up.Requests()) - n; k != 1 {
			t.Errorf("input_items%s: %d upstream requests, want 1", q, k)
		}
	}
}

// layoutItem renders one item of a stored list for a test's layout: a
// message ("user:text", "assistant:text", "envelope:skill"), reasoning
// ("reasoning"), a call ("call:name:call_id") or its output
// ("output:call_id:text"); id is the item's id.
func layoutItem(id, spec string) string {
	kind, rest, _ := strings.Cut(spec, ":")
	q := strconv.Quote
	switch kind {
	case "user", "assistant":
		part := "input_text"
		if kind == "assistant" {
			part = "output_text"
		}
		return `{"id":` + q(id) + `,"type":"message","role":"` + kind + `","content":[{"type":"` + part + `","text":` + q(rest) + `}]}`
	case "envelope":
		return `{"id":` + q(id) + `,"type":"message","role":"user","content":[{"type":"input_text","text":` +
			q(`<skill_context id="`+rest+`">`+"\nbody\n</skill_context>") + `}]}`
	case "reasoning":
		return `{"id":` + q(id) + `,"type":"reasoning","summary":[]}`
	case "call":
		name, call, _ := strings.Cut(rest, ":")
		return `{"id":` + q(id) + `,"type":"function_call","call_id":` + q(call) + `,"name":` + q(name) + `,"arguments":"{}"}`
	case "output":
		call, text, _ := strings.Cut(rest, ":")
		return `{"id":` + q(id) + `,"type":"function_call_output","call_id":` + q(call) + `,"output":` + q(text) + `}`
	}
	panic("layoutItem: " + spec)
}

// shownText names a listed item for a test: a message's text, a call's
// name, an output's text.
func shownText(it gjson.Result) string {
	switch it.Get("type").Str {
	case "function_call":
		return "call " + it.Get("name").Str
	case "function_call_output":
		if out := it.Get("output").Str; len(out) > 30 {
			return "output " + out[:30] + "..."
		}
		return "output " + it.Get("output").Str
	}
	return itemText(it)
}

// The proxy's answers, as its tools write them (router.IsToolResult).
const (
	searchAnswer   = `{"query":"pdf","results":[{"id":"demo/pdf","description":"Make PDF files."}],"hint":"Call load_skill with the id of the skill that fits the task."}`
	notFoundAnswer = "<skill_error id=\"demo/xlsx\" reason=\"not_found\">\n  <message>The skill \"demo/xlsx\" is unavailable: no skill has this id.</message>\n</skill_error>"
	activeAnswer   = "<skill_status id=\"demo/pdf\" status=\"already_active\">\n  <message>loaded</message>\n</skill_status>"
	envelopeAnswer = "<skill_context id=\"demo/pdf\">\nbody\n</skill_context>"
)

// A conversation with the proxy's items at the ends of its pages and a
// run of them longer than several pages, paged as the SDKs page it
// (openai-node and openai-python: a conversation's items from last_id, a
// response's input items from the last item's id; both stop at has_more
// false or an empty page), in either order and with small pages: the
// client reads each of its items once, in order, whichever cursor it
// follows; each page's first_id and last_id name its own first and last
// items (null when it has none), and only the last page comes out empty.
func TestResponsesStoredItemsPageEdges(t *testing.T) {
	layout := []string{
		"envelope:demo/pdf", "user:one", "assistant:reply one", "user:two",
		// four hidden rounds in a row: longer than the pages read past at limit 1
		"reasoning", "call:load_skill:c1", "output:c1:" + envelopeAnswer,
		"reasoning", "call:search_skills:c2", "output:c2:" + searchAnswer,
		"reasoning", "call:load_skill:c3", "output:c3:" + notFoundAnswer,
		"reasoning", "call:load_skill:c4", "output:c4:" + activeAnswer,
		"assistant:reply two", "user:three", "call:get_weather:cw", "output:cw:sunny", "assistant:reply three",
		// a round the limit cut: the proxy's call left without output
		"reasoning", "call:load_skill:c5",
	}
	want := []string{"one", "reply one", "two", "reply two", "three", "call get_weather", "output sunny", "reply three"}
	var items []string
	for i, spec := range layout {
		items = append(items, layoutItem("item_"+strconv.Itoa(i), spec))
	}
	for _, cursor := range []string{"last_id", "last item"} {
		for _, order := range []string{"asc", "desc"} {
			for _, limit := range []int{1, 2, 3, 5, 20} {
				t.Run(cursor+"/"+order+"/"+strconv.Itoa(limit), func(t *testing.T) {
					h := newHarness(t, nil)
					h.up.PutConversation("conv_edges", items...)
					var got []string
					after, done := "", false
					for page := 0; page < 2*len(layout) && !done; page++ {
						q := "?order=" + order + "&limit=" + strconv.Itoa(limit)
						if after != "" {
							q += "&after=" + after
						}
						resp, b := h.do("GET", "/v1/conversations/conv_edges/items"+q, "", nil)
						if resp.StatusCode != 200 {
							t.Fatalf("GET items%s: %d %s", q, resp.StatusCode, b)
						}
						data := gjson.GetBytes(b, "data").Array()
						if len(data) > limit {
							t.Errorf("page %d: %d items, over the limit %d", page, len(data), limit)
						}
						first, last := gjson.GetBytes(b, "first_id"), gjson.GetBytes(b, "last_id")
						switch {
						case len(data) == 0 && (first.Type != gjson.Null || last.Type != gjson.Null):
							t.Errorf("page %d: empty, first_id %s and last_id %s, want null", page, first.Raw, last.Raw)
						case len(data) > 0 && (first.Str != data[0].Get("id").Str || last.Str != data[len(data)-1].Get("id").Str):
							t.Errorf("page %d: first_id %s, last_id %s, not its items' %s", page, first.Raw, last.Raw, b)
						}
						for _, it := range data {
							got = append(got, shownText(it))
						}
						more := gjson.GetBytes(b, "has_more").Bool()
						if len(data) == 0 && more {
							t.Errorf("page %d: empty while has_more is true: the SDKs stop here", page)
						}
						done = !more || len(data) == 0
						after = last.Str
						if cursor == "last item" && len(data) > 0 {
							after = data[len(data)-1].Get("id").Str
						}
					}
					if !done {
						t.Errorf("still has_more after %d pages", 2*len(layout))
					}
					w := slices.Clone(want)
					if order == "desc" {
						slices.Reverse(w)
					}
					if !slices.Equal(got, w) {
						t.Errorf("paged like the SDKs, the client read %q, want %q", got, w)
					}
				})
			}
		}
	}
}

// The proxy's outputs are told apart however far their calls are: those
// its tools' answers tell by their shape (load_skill's and search_skills')
// with no read at all, a sandbox tool's by its call, sought further back
// than the first 20 items. Read by the page or one by one, only the
// client's items show.
func TestResponsesStoredOutputsFarFromTheirCalls(t *testing.T) {
	layout := []string{"user:make a pdf", "reasoning", "call:skill_execute:cx", "call:search_skills:cs"}
	for i := range 30 {
		layout = append(layout, "call:load_skill:cl"+strconv.Itoa(i))
	}
	layout = append(layout, "output:cs:"+searchAnswer)
	for i := range 30 {
		layout = append(layout, "output:cl"+strconv.Itoa(i)+":"+notFoundAnswer)
	}
	layout = append(layout, `output:cx:{"ok":true,"exit_code":0,"stdout":"done"}`, "assistant:Here is your pdf.")
	var items []string
	for i, spec := range layout {
		items = append(items, layoutItem("item_"+strconv.Itoa(i), spec))
	}
	h := newHarness(t, func(c *Config) {
		c.ProxyTool = func(name string) bool {
			return name == "load_skill" || name == "search_skills" || name == "skill_execute"
		}
	})
	h.up.PutConversation("conv_far", items...)
	for _, q := range []string{"?order=asc&limit=1", "?order=desc&limit=1", "?order=asc&limit=100", "?order=desc&limit=3"} {
		var got []string
		after := ""
		for page := 0; page < len(layout); page++ {
			qa := q
			if after != "" {
				qa += "&after=" + after
			}
			resp, b := h.do("GET", "/v1/conversations/conv_far/items"+qa, "", nil)
			if resp.StatusCode != 200 {
				t.Fatalf("GET items%s: %d %s", qa, resp.StatusCode, b)
			}
			data := gjson.GetBytes(b, "data").Array()
			for _, it := range data {
				got = append(got, shownText(it))
			}
			if !gjson.GetBytes(b, "has_more").Bool() || len(data) == 0 {
				break
			}
			after = gjson.GetBytes(b, "last_id").Str
		}
		want := []string{"make a pdf", "Here is your pdf."}
		if strings.Contains(q, "desc") {
			slices.Reverse(want)
		}
		if !slices.Equal(got, want) {
			t.Errorf("items%s: the client read %q, want %q", q, got, want)
		}
	}
	for i, spec := range layout {
		id := "item_" + strconv.Itoa(i)
		resp, b := h.do("GET", "/v1/conversations/conv_far/items/"+id, "", nil)
		client := spec == layout[0] || spec == layout[len(layout)-1]
		if client && resp.StatusCode != 200 || !client && resp.StatusCode != 404 {
			t.Errorf("item %s (%.40s): %d %.80s", id, spec, resp.StatusCode, b)
		}
	}
}

// The neighbours of a page are read outside it: without the client's
// before (an input_items cursor), which would keep them on its side of it.
func TestResponsesStoredNeighboursWithoutBefore(t *testing.T) {
	h := newHarness(t, nil)
	h.up.PutConversation("conv_b", layoutItem("item_0", "user:hi"), layoutItem("item_1", "reasoning"),
		layoutItem("item_2", "call:load_skill:c1"), layoutItem("item_3", "assistant:ok"))
	n := len(h.up.Requests())
	if resp, b := h.do("GET", "/v1/conversations/conv_b/items?order=asc&limit=2&before=item_3", "", nil); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()[n:]
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want the page and its neighbours", len(reqs))
	}
	if q, _ := url.ParseQuery(reqs[1].RawQuery); q.Has("before") || q.Get("after") != "item_1" {
		t.Errorf("neighbours read with %s", reqs[1].RawQuery)
	}
}

// A stream whose first round showed the client a preamble and then loaded
// a skill opens with that round's response id, and its answer is the next
// round's. LangChain and the AI SDK chain the next turn from the opening's
// id, whose response ends at the proxy's unanswered call: the proxy sends
// that turn on from the answer (per credential: another key's turn naming
// the id goes as sent).
func TestTurnChainedFromAnOpeningGoesOnFromTheAnswer(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{Content: "Let me load a skill first.", ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."}),
		fakeai.Reply(fakeai.Turn{Content: "second turn"}),
		fakeai.Reply(fakeai.Turn{Content: "another key's turn"}))
	key := map[string]string{"Authorization": "Bearer sk-a"}
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`, key)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	events := sseData(t, b)
	opened, answer := gjson.Get(events[0], "response.id").Str, gjson.Get(events[len(events)-1], "response.id").Str
	if opened == "" || opened == answer {
		t.Fatalf("want a stream opened with the preamble's response, answered in another: %q, %q", opened, answer)
	}
	finish(t, h)
	n := len(h.up.Requests())
	body := `{"model":"m","previous_response_id":"` + opened + `","input":"and a second one"}`
	if resp, b := h.do("POST", "/v1/responses", body, key); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if len(reqs) != n+1 {
		t.Fatalf("%d upstream requests for the next turn, want 1 (no stored-state repair)", len(reqs)-n)
	}
	if got := gjson.GetBytes(reqs[n].Body, "previous_response_id").Str; got != answer {
		t.Errorf("the next turn went on from %q, want the answer's %q", got, answer)
	}
	if !strings.Contains(h.logText(), `"chained_to_answer":true`) {
		t.Errorf("not logged:\n%s", h.logText())
	}
	if resp, b := h.do("POST", "/v1/responses", body, map[string]string{"Authorization": "Bearer sk-b"}); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs = h.up.Requests()
	if got := gjson.GetBytes(reqs[len(reqs)-1].Body, "previous_response_id").Str; got != opened {
		t.Errorf("another key's turn went on from %q, want %q as sent", got, opened)
	}
}
