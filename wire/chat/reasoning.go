package chat

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// reasoningDetails merges the reasoning_details arrays of a round's deltas
// into the array a JSON answer has in message.reasoning_details.
// OpenRouter streams them (reasoning.text, reasoning.summary,
// reasoning.encrypted, each with format, id, index, and signature for
// text) as fragments: one detail's text, summary or data comes in pieces
// across chunks under the same index, its other members once (a first
// fragment may carry signature ""). It wants the whole array back on the
// assistant message to continue reasoning after tool calls, unchanged:
// Anthropic checks a signed text against its signature.
type reasoningDetails struct {
	items []*reasoningDetail
}

// reasoningDetail is one merged detail: its members in the order they
// first came.
type reasoningDetail struct {
	raw    json.RawMessage // a fragment that is not an object, kept as it is
	keys   []string
	vals   map[string]json.RawMessage
	pieces map[string]*strings.Builder // the appended members (see appended)
	typ    string
	index  *int64
}

// appended are the members whose fragments are pieces of one value.
var appended = map[string]bool{"text": true, "summary": true, "data": true}

// add merges the fragments of one delta's reasoning_details (an array).
func (rd *reasoningDetails) add(arr json.RawMessage) {
	elems, err := jsonspan.Elements(arr)
	if err != nil {
		return
	}
	for i, e := range elems {
		f := arr[e.Start:e.End]
		ms, err := jsonspan.Members(f)
		if err != nil {
			rd.items = append(rd.items, &reasoningDetail{raw: append(json.RawMessage(nil), f...)})
			continue
		}
		var typ string
		var index *int64
		if s, ok := jsonspan.Value(ms, "type"); ok {
			_ = json.Unmarshal(f[s.Start:s.End], &typ)
		}
		if s, ok := jsonspan.Value(ms, "index"); ok {
			var i int64
			if json.Unmarshal(f[s.Start:s.End], &i) == nil {
				index = &i
			}
		}
		d := rd.continues(typ, index, i == 0)
		if d == nil {
			d = &reasoningDetail{vals: map[string]json.RawMessage{}, pieces: map[string]*strings.Builder{}, typ: typ, index: index}
			rd.items = append(rd.items, d)
		}
		d.merge(f, ms)
	}
}

// continues is the detail a fragment of type typ continues: the one with
// its index and type, or without an index the last detail, when it is a
// text or summary of that type without an index too (an encrypted blob
// without an index is whole) and the fragment is the first of its array
// (first): the elements of one array are distinct details, and an
// upstream's JSON answer streamed by Events has the whole array in one
// chunk. nil for a new detail.
func (rd *reasoningDetails) continues(typ string, index *int64, first bool) *reasoningDetail {
	if index != nil {
		for _, d := range rd.items {
			if d.raw == nil && d.typ == typ && d.index != nil && *d.index == *index {
				return d
			}
		}
		return nil
	}
	if n := len(rd.items); n > 0 && first && typ != "reasoning.encrypted" {
		if d := rd.items[n-1]; d.raw == nil && d.typ == typ && d.index == nil {
			return d
		}
	}
	return nil
}

// merge adds the members ms of fragment f: the pieces of text, summary and
// data are appended; any other member keeps its first value that is
// neither empty nor null. Members keep the order they first came in.
func (d *reasoningDetail) merge(f []byte, ms []jsonspan.Member) {
	for _, m := range ms {
		v := json.RawMessage(f[m.Value.Start:m.Value.End])
		old, seen := d.vals[m.Key]
		if !seen {
			d.keys = append(d.keys, m.Key)
			d.vals[m.Key] = append(json.RawMessage(nil), v...)
		}
		if appended[m.Key] && len(v) > 0 && v[0] == '"' {
			var s string
			if json.Unmarshal(v, &s) == nil {
				b := d.pieces[m.Key]
				if b == nil {
					b = &strings.Builder{}
					d.pieces[m.Key] = b
				}
				b.WriteString(s)
			}
			continue
		}
		if seen && blank(old) && !blank(v) {
			d.vals[m.Key] = append(json.RawMessage(nil), v...)
		}
	}
}

// blank reports whether a member's value is null or an empty string.
func blank(v json.RawMessage) bool {
	return jsonspan.IsNull(v) || bytes.Equal(bytes.TrimSpace(v), []byte(`""`))
}

// JSON is the merged array; nil when no delta had a detail.
func (rd *reasoningDetails) JSON() json.RawMessage {
	if len(rd.items) == 0 {
		return nil
	}
	els := make([][]byte, len(rd.items))
	for i, d := range rd.items {
		if d.raw != nil {
			els[i] = d.raw
			continue
		}
		b := []byte{'{'}
		for j, k := range d.keys {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(append(b, wire.Quote(k)...), ':')
			if p, ok := d.pieces[k]; ok {
				b = append(b, wire.Quote(p.String())...)
			} else {
				b = append(b, d.vals[k]...)
			}
		}
		els[i] = append(b, '}')
	}
	return jsonspan.Array(els)
}
