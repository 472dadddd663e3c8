package responses

// What the API stored, read back. GET /v1/responses/{id} returns the
// response object the upstream kept, which echoes the request the proxy
// sent, and GET /v1/responses/{id}/input_items lists that request's input;
// a conversation's items (GET /v1/conversations/{id}/items, one by GET
// /v1/conversations/{id}/items/{item_id}) hold every round's input and
// output. The JSON answer and the stream showed the client its own
// request instead (see echo.go); the proxy keeps nothing per response, so
// reading back it restores what the stored object itself tells apart
// (wire.Marks):
//
//   - instructions: the catalog the proxy appended is cut, with the
//     "\n\n" before it; instructions that were the catalog alone become
//     null (the client sent none, null or "");
//   - tools: the proxy's are removed: function tools of the proxy's names
//     with "strict": false, as Render writes them (a client's own tool of
//     such a name is never shadowed, and the API echoes the strict it was
//     given);
//   - output: the calls of those tools and the reasoning before them, as
//     Final removes them;
//   - input items and conversation items: the auto-loaded envelopes (a
//     message that is one envelope), the calls of the proxy's tools with
//     the reasoning before them, their outputs (load_skill's and
//     search_skills' are told by their shape, Marks.ToolResult; another
//     is told by its call), and the outputs the stored-state repair gave
//     dropped calls (notRunOutput). A page, or one item, does not always
//     hold what decides: reasoning goes with the item after it and an
//     output with its call. So the items next to it are read too
//     (Neighbours: 20 after it, 20 and then 100 more before it, only as
//     far as needed); what they do not decide is shown.
//
// What only the request knew stays as the upstream has it: usage (the last
// round's, as the client got it), the items of
// earlier rounds the client got (in the input here, in output there), the
// client's tools the gate left out (and tool_choice and
// parallel_tool_calls, removed with the last of them), a tool_choice the
// follow-ups relaxed to "auto" (the response the client got echoed its
// own), instructions sent as "" (null here). A page of items may come out shorter than its limit; its
// first_id and last_id name the items it shows, so that a client paging
// from either (openai-node and openai-python page a conversation's items
// from last_id, a response's input items from the last item's id) goes on
// right after what it got (the proxy reads on past a page it would show
// empty, proxy/stored.go). One item of the proxy's read by its id is
// answered as a missing one.

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
	"github.com/skillrouter/skillrouter/wire/internal/openai"
)

// StoredResponse returns a response object read back from the API as the
// client got it from the proxy, as far as m tells; changed is false (and
// raw returned) when nothing of the proxy's is found.
func StoredResponse(raw []byte, m wire.Marks) (out []byte, changed bool) {
	ms, err := jsonspan.Members(raw)
	if err != nil || gjson.GetBytes(raw, "object").Str != "response" {
		return raw, false
	}
	var edits []jsonspan.Edit
	if s, ok := jsonspan.Value(ms, "instructions"); ok {
		if v, ok := clientInstructions(raw[s.Start:s.End], m); ok {
			edits = append(edits, jsonspan.Edit{At: s, With: v})
		}
	}
	proxy := map[string]bool{}
	if s, ok := jsonspan.Value(ms, "tools"); ok {
		if els, err := jsonspan.Elements(raw[s.Start:s.End]); err == nil {
			var kept [][]byte
			for _, e := range els {
				t := raw[s.Start+e.Start : s.Start+e.End]
				if name, ok := proxyTool(t, m); ok {
					proxy[name] = true
					continue
				}
				kept = append(kept, t)
			}
			if len(proxy) > 0 {
				edits = append(edits, jsonspan.Edit{At: s, With: jsonspan.Array(kept)})
			}
		}
	}
	if s, ok := jsonspan.Value(ms, "output"); ok && len(proxy) > 0 {
		var items []json.RawMessage
		if json.Unmarshal(raw[s.Start:s.End], &items) == nil {
			if kept, ok := without(items, proxyItems(items, func(name string) bool { return proxy[name] })); ok {
				edits = append(edits, jsonspan.Edit{At: s, With: kept})
			}
		}
	}
	if len(edits) == 0 {
		return raw, false
	}
	return jsonspan.Apply(raw, edits...), true
}

// clientInstructions returns the instructions the client sent, when v (a
// stored response's) ends with the proxy's catalog.
func clientInstructions(v []byte, m wire.Marks) ([]byte, bool) {
	var text string
	if v[0] != '"' || json.Unmarshal(v, &text) != nil {
		return nil, false
	}
	const sep = "\n\n" // as Render appends the catalog
	switch i := m.CatalogStart(text); {
	case i == 0:
		return []byte("null"), true
	case i >= len(sep) && text[i-len(sep):i] == sep:
		return wire.Quote(text[:i-len(sep)]), true
	}
	return nil, false
}

// proxyTool returns the name of a tool definition t that is the proxy's.
func proxyTool(t []byte, m wire.Marks) (string, bool) {
	res := gjson.GetManyBytes(t, "type", "name", "strict")
	name := res[1].Str
	return name, res[0].Str == "function" && res[2].Type == gjson.False && m.Tool(name)
}

// Neighbours are the items next to a page of stored items (or one item)
// in its list, oldest first: before, the older; after, the newer. The
// rules read reasoning with the item after it and an output with its
// call, which the page may not hold. ItemsNeighbours and ItemNeighbours
// read them, as far as needed.
type Neighbours struct {
	before, after []json.RawMessage
}

// neighbourItems is how many neighbours are read on each side: the API's
// default page. An output whose call they do not hold has its call sought
// once more among the furtherItems before them (the API's largest page):
// the proxy's outputs its content does not tell (only the sandbox tools')
// follow their call within a round's items, and a client's output whose
// call is further back than that is shown as it would be anyway.
const (
	neighbourItems = 20
	furtherItems   = 100
)

// ItemsNeighbours reads a page's Neighbours through read (the list's
// answer to a query with order, after and limit; nil when it fails): the
// items before its oldest while an output on it has no call on it or read
// (up to neighbourItems, then furtherItems), after its newest when that is
// reasoning. first says the page is its list's first (read without a
// cursor): with has_more false, the page and first tell which end of the
// list it holds, where there is nothing to read.
func ItemsNeighbours(raw []byte, order string, first bool, m wire.Marks, read func(query string) []byte) Neighbours {
	p, ok := pageItems(raw, order)
	if !ok {
		return Neighbours{}
	}
	last := !gjson.GetBytes(raw, "has_more").Bool()
	oldest := order == "asc" && first || order != "asc" && last
	newest := order == "asc" && last || order != "asc" && first
	return readNeighbours(p.asc, oldest, newest, m, read)
}

// ItemNeighbours is ItemsNeighbours for one item.
func ItemNeighbours(raw []byte, m wire.Marks, read func(query string) []byte) Neighbours {
	if !isObject(raw) {
		return Neighbours{}
	}
	return readNeighbours([]json.RawMessage{raw}, false, false, m, read)
}

// readNeighbours reads the Neighbours the rules need for the items asc
// (oldest first); oldest and newest say asc holds an end of its list.
func readNeighbours(asc []json.RawMessage, oldest, newest bool, m wire.Marks, read func(query string) []byte) Neighbours {
	var n Neighbours
	if len(asc) == 0 {
		return n
	}
	query := func(order string, it json.RawMessage, limit int) string {
		id := gjson.GetBytes(it, "id").Str
		if id == "" {
			return ""
		}
		return "order=" + order + "&after=" + url.QueryEscape(id) + "&limit=" + strconv.Itoa(limit)
	}
	if last := asc[len(asc)-1]; !newest && gjson.GetBytes(last, "type").Str == "reasoning" {
		if q := query("asc", last, neighbourItems); q != "" {
			n.after = listed(read(q), "asc")
		}
	}
	if oldest {
		return n
	}
	sought := unmatchedOutputs(asc, m)
	from, limit := asc[0], neighbourItems
	for len(sought) > 0 {
		q := query("desc", from, limit)
		if q == "" {
			break
		}
		page := read(q)
		items := listed(page, "desc")
		n.before = append(items, n.before...)
		for _, it := range items {
			if v := gjson.GetManyBytes(it, "type", "call_id"); v[0].Str == "function_call" {
				delete(sought, v[1].Str)
			}
		}
		if len(items) == 0 || limit == furtherItems || !gjson.GetBytes(page, "has_more").Bool() {
			break
		}
		from, limit = items[0], furtherItems
	}
	return n
}

// unmatchedOutputs returns the call ids of the function outputs among asc
// that the rules leave shown and whose calls asc does not hold.
func unmatchedOutputs(asc []json.RawMessage, m wire.Marks) map[string]bool {
	hide := hiddenItems(asc, Neighbours{}, m)
	calls := map[string]bool{}
	for _, it := range asc {
		if v := gjson.GetManyBytes(it, "type", "call_id"); v[0].Str == "function_call" {
			calls[v[1].Str] = true
		}
	}
	sought := map[string]bool{}
	for i, it := range asc {
		if v := gjson.GetManyBytes(it, "type", "call_id"); !hide[i] && v[0].Str == "function_call_output" && !calls[v[1].Str] {
			sought[v[1].Str] = true
		}
	}
	return sought
}

// StoredItems returns a page of stored items (GET
// /v1/responses/{id}/input_items, GET /v1/conversations/{id}/items, listed
// alike) without the proxy's, as far as m and the page's neighbours tell,
// and at most limit of them (none: no bound); order is the page's ("asc",
// else the API's default, newest first). Its first_id and last_id name the
// items shown (null for none), the cursor the SDKs page on, so a client
// goes on right after the last item it got; has_more is the upstream's
// unless items shown were cut by limit. changed is false (and raw
// returned) when nothing is removed.
func StoredItems(raw []byte, order string, limit int, n Neighbours, m wire.Marks) (out []byte, changed bool) {
	p, ok := pageItems(raw, order)
	if !ok {
		return raw, false
	}
	hide := hiddenItems(p.asc, n, m)
	var kept [][]byte
	for i, it := range p.items {
		if !hide[ascIndex(order, len(p.items), i)] {
			kept = append(kept, it)
		}
	}
	cut := limit > 0 && len(kept) > limit
	if cut {
		kept = kept[:limit]
	}
	if len(kept) == len(p.items) {
		return raw, false
	}
	edits := []jsonspan.Edit{{At: p.data, With: jsonspan.Array(kept)}}
	id := func(key string, it []byte) {
		v := []byte("null")
		if it != nil {
			v = wire.Quote(gjson.GetBytes(it, "id").Str)
		}
		if s, ok := jsonspan.Value(p.ms, key); ok {
			edits = append(edits, jsonspan.Edit{At: s, With: v})
		}
	}
	var first, last []byte
	if len(kept) > 0 {
		first, last = kept[0], kept[len(kept)-1]
	}
	id("first_id", first)
	id("last_id", last)
	if s, ok := jsonspan.Value(p.ms, "has_more"); ok && cut {
		edits = append(edits, jsonspan.Edit{At: s, With: []byte("true")})
	}
	return jsonspan.Apply(raw, edits...), true
}

// StoredItem reports whether one stored item (GET
// /v1/conversations/{id}/items/{item_id}) is the client's, as far as m
// and its neighbours tell: the rules of StoredItems, on a page of one.
func StoredItem(raw []byte, n Neighbours, m wire.Marks) (shown bool) {
	if !isObject(raw) {
		return true
	}
	return !hiddenItems([]json.RawMessage{raw}, n, m)[0]
}

func isObject(raw []byte) bool { return gjson.ValidBytes(raw) && gjson.ParseBytes(raw).IsObject() }

// page is a list page's items, oldest first (asc) and as listed, with
// the members of the list object and where its data is.
type page struct {
	asc, items []json.RawMessage
	ms         []jsonspan.Member
	data       jsonspan.Span
}

// pageItems returns a list page's items; ok is false when raw is not a
// list.
func pageItems(raw []byte, order string) (p page, ok bool) {
	ms, err := jsonspan.Members(raw)
	if err != nil || gjson.GetBytes(raw, "object").Str != "list" {
		return p, false
	}
	p.ms = ms
	p.data, ok = jsonspan.Value(ms, "data")
	if !ok || json.Unmarshal(raw[p.data.Start:p.data.End], &p.items) != nil {
		return page{}, false
	}
	p.asc = make([]json.RawMessage, len(p.items))
	for i, it := range p.items {
		p.asc[ascIndex(order, len(p.items), i)] = it
	}
	return p, true
}

// ascIndex is the place, oldest first, of the i-th of n items listed in
// order.
func ascIndex(order string, n, i int) int {
	if order == "asc" {
		return i
	}
	return n - 1 - i
}

// listed returns the items of a list page, oldest first given its order.
func listed(raw []byte, order string) []json.RawMessage {
	p, _ := pageItems(raw, order)
	return p.asc
}

// hiddenItems tells which of the stored items asc (oldest first) are the
// proxy's: the envelopes, the proxy's calls with the reasoning before
// them, their outputs (a load_skill output, an envelope, wherever its call
// is) and the stored-state repair's outputs. The rules run over the
// neighbours too, which decide reasoning at the newest end and outputs
// whose calls are older than asc.
func hiddenItems(asc []json.RawMessage, n Neighbours, m wire.Marks) []bool {
	all := slices.Concat(n.before, asc, n.after)
	hide := proxyItems(all, m.Tool)
	calls := map[string]bool{}   // the proxy's calls
	clients := map[string]bool{} // calls read here that are the client's
	for i, it := range all {
		if v := gjson.GetManyBytes(it, "type", "call_id"); v[0].Str == "function_call" || v[0].Str == "custom_tool_call" {
			if hide[i] {
				calls[v[1].Str] = true
			} else {
				clients[v[1].Str] = true
			}
		}
	}
	for i, it := range all {
		v := gjson.GetManyBytes(it, "type", "call_id", "output", "content")
		switch v[0].Str {
		case "function_call_output":
			// The proxy's outputs its tools' answers tell by their shape
			// (an envelope, a search's results, ...) are told apart
			// however far their calls are; an output whose call is here
			// and the client's (a namespaced load_skill of the library's
			// own MCP server answers in the same shape) is the client's.
			hide[i] = hide[i] || calls[v[1].Str] || !clients[v[1].Str] && v[2].Type == gjson.String && (v[2].Str == notRunOutput ||
				m.Envelope != nil && m.Envelope(v[2].Str) || m.ToolResult != nil && m.ToolResult(v[2].Str))
		case "message", "":
			hide[i] = hide[i] || envelope(v[3], m)
		}
	}
	return hide[len(n.before) : len(n.before)+len(asc)]
}

// envelope reports whether a message's content is one auto-loaded
// envelope, as Render adds it (one input_text part).
func envelope(content gjson.Result, m wire.Marks) bool {
	parts := content.Array()
	return len(parts) == 1 && parts[0].Get("type").Str == "input_text" && m.Envelope(openai.ContentText([]byte(content.Raw)))
}

// without returns items but the hidden ones as a JSON array; ok is false
// when none is hidden.
func without(items []json.RawMessage, hidden []bool) ([]byte, bool) {
	var kept [][]byte
	for i, it := range items {
		if !hidden[i] {
			kept = append(kept, it)
		}
	}
	if len(kept) == len(items) {
		return nil, false
	}
	return jsonspan.Array(kept), true
}
