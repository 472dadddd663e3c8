package messages

import (
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
	end, nonEmpty := jsonspan.End(r.body, r.members)
	var added []byte
	addMember := func(key string, value []byte) {
		if nonEmpty || len(added) > 0 {
			added = append(added, ',')
		}
		added = append(append(append(added, wire.Quote(key)...), ':'), value...)
	}

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
			addMember("system", p.CatalogJSON)
		}
	}

	if len(p.Envelopes) > 0 {
		blocks := make([][]byte, len(p.Envelopes))
		for i, e := range p.Envelopes {
			blocks[i] = textBlock(e.JSON)
		}
		msg := slices.Concat([]byte(`{"role":"user","content":`), jsonspan.Array(blocks), []byte{'}'})
		// After the last message, or before a trailing assistant message
		// (a prefill the model continues).
		last := len(r.msgs) - 1
		if r.roles[last] == "assistant" && last > 0 {
			at := r.msgs[last].Start
			edits = append(edits, jsonspan.Edit{At: jsonspan.Span{Start: at, End: at}, With: append(msg, ',')})
		} else {
			at := r.msgs[last].End
			edits = append(edits, jsonspan.Edit{At: jsonspan.Span{Start: at, End: at}, With: append([]byte{','}, msg...)})
		}
	}

	if p.Tools.Changed() {
		tools := r.toolsJSON(p.Tools)
		switch {
		case tools == nil: // gating emptied the tools
			edits = append(edits, jsonspan.Removals(r.members, "tools", "tool_choice")...)
		case r.hasTools:
			edits = append(edits, jsonspan.Edit{At: r.tools, With: tools})
		default:
			addMember("tools", tools)
		}
	}
	if len(added) > 0 {
		edits = append(edits, jsonspan.Edit{At: end, With: added})
	}
	return jsonspan.Apply(r.body, edits...), nil
}

func textBlock(quoted []byte) []byte {
	return slices.Concat([]byte(`{"type":"text","text":`), quoted, []byte{'}'})
}

// toolsJSON renders the tools array of ts (see wire.ToolSet.Elements);
// nil when it would be empty.
func (r *Request) toolsJSON(ts wire.ToolSet) []byte {
	els := ts.Elements(r.clientTools, toolJSON)
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
