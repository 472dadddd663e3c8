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
//     the reasoning before them, their outputs (a load_skill output is an
//     envelope; another is told by its call), and the outputs the
//     stored-state repair gave dropped calls (notRunOutput). A page, or
//     one item, does not always hold what decides: reasoning goes with
//     the item after it and an output with its call. So the items next to
//     it are read too (Neighbours: up to 20 each side, only when needed);
//     what they do not decide is shown.
//
// What only the request knew stays as the upstream has it: usage (the last
// round's, where the client got the sum of all rounds), the items of
// earlier rounds the client got (in the input here, in output there), the
// client's tools the gate left out (and tool_choice and
// parallel_tool_calls, removed with the last of them), instructions sent as
// "" (null here). A page of items may come out shorter than its limit; its
// first_id and last_id stay the upstream's, the cursor of its list (the
// proxy reads on past a page it would show empty, proxy/stored.go). One
// item of the proxy's read by its id is answered as a missing one.

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

// Neighbours are the items next to a page of stored items (or one item) in
// its list, as the upstream listed them for the queries ItemsNeighbours
// (ItemNeighbours) gives: Before, the older items, newest first; After,
// the newer, oldest first. The rules read reasoning with the item after it
// and an output with its call, which the page may not hold. Either may be
// nil: not needed, or not read.
type Neighbours struct {
	Before, After []byte
}

// neighbourItems is how many neighbours are read on each side: the API's
// default page.
const neighbourItems = 20

// ItemsNeighbours returns the queries (order, after and limit, to list
// with the client's query) that read a page's Neighbours, "" for a side
// that is not needed: the items before its oldest when an output on it has
// no call on it, after its newest when that is reasoning. first says the
// page is its list's first (read without a cursor): with has_more false,
// the page and first tell which end of the list it holds, where there is
// nothing to read.
func ItemsNeighbours(raw []byte, order string, first bool, m wire.Marks) (before, after string) {
	asc, _, _, ok := pageItems(raw, order)
	if !ok {
		return "", ""
	}
	before, after = neighbourQueries(asc, m)
	last := !gjson.GetBytes(raw, "has_more").Bool()
	if order == "asc" && first || order != "asc" && last {
		before = "" // the page holds the oldest item
	}
	if order == "asc" && last || order != "asc" && first {
		after = "" // the page holds the newest
	}
	return before, after
}

// ItemNeighbours is ItemsNeighbours for one item.
func ItemNeighbours(raw []byte, m wire.Marks) (before, after string) {
	if !isObject(raw) {
		return "", ""
	}
	return neighbourQueries([]json.RawMessage{raw}, m)
}

// neighbourQueries returns the queries of the neighbours the rules need
// for the items asc (oldest first).
func neighbourQueries(asc []json.RawMessage, m wire.Marks) (before, after string) {
	if len(asc) == 0 {
		return "", ""
	}
	query := func(order string, it json.RawMessage) string {
		id := gjson.GetBytes(it, "id").Str
		if id == "" {
			return ""
		}
		return "order=" + order + "&after=" + url.QueryEscape(id) + "&limit=" + strconv.Itoa(neighbourItems)
	}
	hide := hiddenItems(asc, Neighbours{}, m)
	calls := map[string]bool{}
	for _, it := range asc {
		if v := gjson.GetManyBytes(it, "type", "call_id"); v[0].Str == "function_call" {
			calls[v[1].Str] = true
		}
	}
	for i, it := range asc {
		if v := gjson.GetManyBytes(it, "type", "call_id"); !hide[i] && v[0].Str == "function_call_output" && !calls[v[1].Str] {
			before = query("desc", asc[0])
			break
		}
	}
	if last := asc[len(asc)-1]; gjson.GetBytes(last, "type").Str == "reasoning" {
		after = query("asc", last)
	}
	return before, after
}

// StoredItems returns a page of stored items (GET
// /v1/responses/{id}/input_items, GET /v1/conversations/{id}/items, listed
// alike) without the proxy's, as far as m and the page's neighbours tell;
// order is the page's ("asc", else the API's default, newest first).
// changed is false (and raw returned) when nothing is removed.
func StoredItems(raw []byte, order string, n Neighbours, m wire.Marks) (out []byte, changed bool) {
	asc, items, s, ok := pageItems(raw, order)
	if !ok {
		return raw, false
	}
	hide := hiddenItems(asc, n, m)
	hidden := make([]bool, len(items))
	for i := range items {
		hidden[i] = hide[ascIndex(order, len(items), i)]
	}
	kept, ok := without(items, hidden)
	if !ok {
		return raw, false
	}
	return jsonspan.Apply(raw, jsonspan.Edit{At: s, With: kept}), true
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

// pageItems returns a page's items oldest first and as listed, and where
// they are in raw; ok is false when raw is not a list.
func pageItems(raw []byte, order string) (asc, items []json.RawMessage, at jsonspan.Span, ok bool) {
	ms, err := jsonspan.Members(raw)
	if err != nil || gjson.GetBytes(raw, "object").Str != "list" {
		return nil, nil, at, false
	}
	at, ok = jsonspan.Value(ms, "data")
	if !ok || json.Unmarshal(raw[at.Start:at.End], &items) != nil {
		return nil, nil, at, false
	}
	asc = make([]json.RawMessage, len(items))
	for i, it := range items {
		asc[ascIndex(order, len(items), i)] = it
	}
	return asc, items, at, true
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
	asc, _, _, _ := pageItems(raw, order)
	return asc
}

// hiddenItems tells which of the stored items asc (oldest first) are the
// proxy's: the envelopes, the proxy's calls with the reasoning before
// them, their outputs (a load_skill output, an envelope, wherever its call
// is) and the stored-state repair's outputs. The rules run over the
// neighbours too, which decide reasoning at the newest end and outputs
// whose calls are older than asc.
func hiddenItems(asc []json.RawMessage, n Neighbours, m wire.Marks) []bool {
	before := listed(n.Before, "desc")
	all := slices.Concat(before, asc, listed(n.After, "asc"))
	hide := proxyItems(all, m.Tool)
	calls := map[string]bool{}
	for i, it := range all {
		if v := gjson.GetManyBytes(it, "type", "call_id"); hide[i] && v[0].Str == "function_call" {
			calls[v[1].Str] = true
		}
	}
	for i, it := range all {
		v := gjson.GetManyBytes(it, "type", "call_id", "output", "content")
		switch v[0].Str {
		case "function_call_output":
			// A load_skill output is an envelope: it is told apart even
			// when its call is not read.
			hide[i] = hide[i] || calls[v[1].Str] ||
				(v[2].Type == gjson.String && (v[2].Str == notRunOutput || m.Envelope != nil && m.Envelope(v[2].Str)))
		case "message", "":
			hide[i] = hide[i] || envelope(v[3], m)
		}
	}
	return hide[len(before) : len(before)+len(asc)]
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
