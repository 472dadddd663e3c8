package messages

import (
	"encoding/json"
	"slices"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// Render splices p into the request (see the package doc for where each
// part goes).
func (r *Request) Render(p *wire.Plan) ([]byte, error) {
	if p == nil || !p.Changed {
		return r.body, nil
	}
	var edits []jsonspan.Edit
	added := jsonspan.NewAppender(r.body, r.members) // members after the last one

	if p.Catalog != "" {
		sys := r.body[r.system.Start:r.system.End]
		switch {
		case r.systemStr:
			sep := ""
			if r.systemTxt != "" {
				sep = `\n\n`
			}
			edited, err := jsonspan.AppendQuoted(sys, sep, p.CatalogJSON)
			if err != nil {
				return nil, err
			}
			edits = append(edits, jsonspan.Edit{At: r.system, With: edited})
		case r.hasSystem && !jsonspan.IsNull(sys):
			edited, err := jsonspan.Append(sys, textBlock(p.CatalogJSON))
			if err != nil {
				return nil, err
			}
			edits = append(edits, jsonspan.Edit{At: r.system, With: edited})
		case r.hasSystem: // null
			edits = append(edits, jsonspan.Edit{At: r.system, With: p.CatalogJSON})
		default:
			added.Add("system", p.CatalogJSON)
		}
	}

	var remove []string // top-level members to drop, in one jsonspan.Removals
	if len(p.Envelopes) > 0 {
		blocks := make([][]byte, len(p.Envelopes))
		for i, e := range p.Envelopes {
			blocks[i] = textBlock(e.JSON)
		}
		msg := slices.Concat([]byte(`{"role":"user","content":`), jsonspan.Array(blocks), []byte{'}'})
		// After the last message, or before a trailing assistant message
		// (a prefill the model continues).
		last := len(r.msgs) - 1
		before := last // the client's message the envelopes follow
		if r.roles[last] == "assistant" && last > 0 {
			before = last - 1
			at := r.msgs[last].Start
			edits = append(edits, jsonspan.Edit{At: jsonspan.Span{Start: at, End: at}, With: append(msg, ',')})
		} else {
			at := r.msgs[last].End
			edits = append(edits, jsonspan.Edit{At: jsonspan.Span{Start: at, End: at}, With: append([]byte{','}, msg...)})
		}
		if e, ok := r.automaticBreakpoint(before); ok {
			if e != nil {
				edits = append(edits, *e)
			}
			remove = append(remove, "cache_control")
		}
	}

	if p.Tools.Changed() {
		tools := r.toolsJSON(p.Tools)
		switch {
		case tools == nil: // gating emptied the tools
			remove = append(remove, "tools", "tool_choice")
		case r.hasTools:
			edits = append(edits, jsonspan.Edit{At: r.tools, With: tools})
		default:
			added.Add("tools", tools)
		}
	}
	edits = append(edits, jsonspan.Removals(r.members, remove...)...)
	if e, ok := added.Edit(); ok {
		edits = append(edits, e)
	}
	return jsonspan.Apply(r.body, edits...), nil
}

// automaticBreakpoint moves automatic prompt caching's breakpoint (a
// top-level "cache_control") onto the last cacheable block of message i,
// the client's last before the envelopes. The API puts it on the request's
// last cacheable block, which would be the envelopes: they change every
// turn, so the next turn, whose history holds no envelopes, would never
// read the cache. On the client's block it caches the history, as it would
// without the proxy, taking the same breakpoint slot (the API allows four)
// at the same place in the order of TTLs (longer ones first). ok reports
// that the top-level cache_control goes; e is nil when the block already
// is an explicit breakpoint. Thinking blocks and empty text cannot carry
// cache_control; a message with no other block keeps automatic caching.
// A block whose cache_control is null is no breakpoint: it gets the moved
// one (replacing the null).
func (r *Request) automaticBreakpoint(i int) (e *jsonspan.Edit, ok bool) {
	cs, has := breakpoint(r.body, r.members)
	if !has || r.body[cs.Start] != '{' {
		return nil, false
	}
	cc := r.body[cs.Start:cs.End]
	at := r.msgs[i]
	msg := r.body[at.Start:at.End]
	ms, err := jsonspan.Members(msg)
	if err != nil {
		return nil, false
	}
	s, has := jsonspan.Value(ms, "content")
	if !has {
		return nil, false
	}
	content := msg[s.Start:s.End]
	var edited []byte
	switch content[0] {
	case '"': // a string is one text block
		if string(content) == `""` {
			return nil, false
		}
		edited = slices.Concat([]byte(`[{"type":"text","text":`), content, []byte(`,"cache_control":`), cc, []byte(`}]`))
	case '[':
		els, err := jsonspan.Elements(content)
		if err != nil {
			return nil, false
		}
		for k := len(els) - 1; k >= 0 && edited == nil; k-- {
			b := content[els[k].Start:els[k].End]
			bm, err := jsonspan.Members(b)
			if err != nil {
				return nil, false
			}
			if _, explicit := breakpoint(b, bm); explicit {
				if cacheable(b) {
					return nil, true
				}
				continue
			}
			if !cacheable(b) {
				continue
			}
			set, err := jsonspan.Set(b, "cache_control", cc)
			if err != nil {
				return nil, false
			}
			edited = jsonspan.Splice(content, els[k], set)
		}
	}
	if edited == nil {
		return nil, false
	}
	return &jsonspan.Edit{At: jsonspan.Span{Start: at.Start + s.Start, End: at.Start + s.End}, With: edited}, true
}

// breakpoint returns the value of the cache_control member of object b,
// whose members are ms, when it sets a cache breakpoint: an explicit null
// sets none, as when the member is absent. Every "is this a breakpoint"
// question about a block or the request asks it here.
func breakpoint(b []byte, ms []jsonspan.Member) (jsonspan.Span, bool) {
	s, ok := jsonspan.Value(ms, "cache_control")
	if !ok || jsonspan.IsNull(b[s.Start:s.End]) {
		return jsonspan.Span{}, false
	}
	return s, true
}

// cacheable reports whether a content block can carry cache_control.
func cacheable(b []byte) bool {
	var blk block
	if json.Unmarshal(b, &blk) != nil {
		return false
	}
	switch blk.Type {
	case "thinking", "redacted_thinking":
		return false
	case "text":
		return blk.Text != nil && *blk.Text != ""
	}
	return true
}

func textBlock(quoted []byte) []byte {
	return slices.Concat([]byte(`{"type":"text","text":`), quoted, []byte{'}'})
}

// toolsJSON renders the tools array of ts (see wire.ToolSet.Elements);
// nil when it would be empty.
func (r *Request) toolsJSON(ts wire.ToolSet) []byte {
	els := slices.DeleteFunc(ts.Elements(r.withUses(), toolJSON), func(e []byte) bool { return e == nil })
	if len(els) == 0 {
		return nil
	}
	return jsonspan.Array(els)
}

// toolJSON renders a proxy tool as an Anthropic client tool.
func toolJSON(s wire.ToolSpec) []byte {
	out := []byte(`{"name":`)
	out = append(out, wire.Quote(s.Name)...)
	if s.Description != "" {
		out = append(out, `,"description":`...)
		out = append(out, wire.Quote(s.Description)...)
	}
	params := s.Parameters
	if len(params) == 0 {
		params = []byte(`{"type":"object","properties":{}}`)
	}
	out = append(out, `,"input_schema":`...)
	out = append(out, params...)
	return append(out, '}')
}
