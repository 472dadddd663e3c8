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
//     the reasoning before them, their outputs when the call is on the
//     same page (or, for load_skill, when the output is an envelope), and
//     the outputs the stored-state repair gave dropped calls
//     (notRunOutput).
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

// StoredItems returns a page of stored items (GET
// /v1/responses/{id}/input_items, GET /v1/conversations/{id}/items, listed
// alike) without the proxy's, as far as m tells; order is the page's
// ("asc", else the API's default, newest first). changed is false (and
// raw returned) when nothing is removed.
func StoredItems(raw []byte, order string, m wire.Marks) (out []byte, changed bool) {
	ms, err := jsonspan.Members(raw)
	if err != nil || gjson.GetBytes(raw, "object").Str != "list" {
		return raw, false
	}
	s, ok := jsonspan.Value(ms, "data")
	if !ok {
		return raw, false
	}
	var items []json.RawMessage
	if json.Unmarshal(raw[s.Start:s.End], &items) != nil {
		return raw, false
	}
	// The rules read the items oldest first.
	asc := make([]json.RawMessage, len(items))
	at := func(i int) int { // asc's index of items[i]
		if order == "asc" {
			return i
		}
		return len(items) - 1 - i
	}
	for i, it := range items {
		asc[at(i)] = it
	}
	hide := hiddenItems(asc, m)
	hidden := make([]bool, len(items))
	for i := range items {
		hidden[i] = hide[at(i)]
	}
	kept, ok := without(items, hidden)
	if !ok {
		return raw, false
	}
	return jsonspan.Apply(raw, jsonspan.Edit{At: s, With: kept}), true
}

// StoredItem reports whether one stored item (GET
// /v1/conversations/{id}/items/{item_id}) is the client's, as far as m
// tells from the item alone: the rules of StoredItems, on a page of one.
func StoredItem(raw []byte, m wire.Marks) (shown bool) {
	if !gjson.ValidBytes(raw) || !gjson.ParseBytes(raw).IsObject() {
		return true
	}
	return !hiddenItems([]json.RawMessage{raw}, m)[0]
}

// hiddenItems tells which of the stored items asc (oldest first) are the
// proxy's: the envelopes, the proxy's calls with the reasoning before
// them, their outputs when the call is among asc (a load_skill output, an
// envelope, wherever its call is) and the stored-state repair's outputs.
func hiddenItems(asc []json.RawMessage, m wire.Marks) []bool {
	hide := proxyItems(asc, m.Tool)
	calls := map[string]bool{}
	for i, it := range asc {
		if v := gjson.GetManyBytes(it, "type", "call_id"); hide[i] && v[0].Str == "function_call" {
			calls[v[1].Str] = true
		}
	}
	for i, it := range asc {
		v := gjson.GetManyBytes(it, "type", "call_id", "output", "content")
		switch v[0].Str {
		case "function_call_output":
			// A load_skill output is an envelope: it is told apart even
			// when its call is on another page.
			hide[i] = hide[i] || calls[v[1].Str] ||
				(v[2].Type == gjson.String && (v[2].Str == notRunOutput || m.Envelope != nil && m.Envelope(v[2].Str)))
		case "message", "":
			hide[i] = hide[i] || envelope(v[3], m)
		}
	}
	return hide
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
