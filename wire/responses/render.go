package responses

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
	added := jsonspan.NewAppender(r.body, r.members) // members after the last one

	if p.Catalog != "" {
		r.rewrote("instructions")
		switch {
		case r.instructionsStr:
			sep := ""
			if r.instructionsTxt != "" {
				sep = `\n\n`
			}
			in := r.body[r.instructions.Start:r.instructions.End]
			edited, err := jsonspan.AppendQuoted(in, sep, p.CatalogJSON)
			if err != nil {
				return nil, err
			}
			edits = append(edits, jsonspan.Edit{At: r.instructions, With: edited})
		case r.hasInstructions: // null
			edits = append(edits, jsonspan.Edit{At: r.instructions, With: p.CatalogJSON})
		default:
			added.Add("instructions", p.CatalogJSON)
		}
	}

	if len(p.Envelopes) > 0 {
		items := make([][]byte, 0, len(p.Envelopes))
		role := wire.Quote(p.EnvelopeRole)
		for _, e := range p.Envelopes {
			items = append(items, slices.Concat([]byte(`{"type":"message","role":`), role,
				[]byte(`,"content":[{"type":"input_text","text":`), e.JSON, []byte(`}]}`)))
		}
		in, err := r.inputWith(items)
		if err != nil {
			return nil, err
		}
		if r.hasInput || r.inputNull {
			edits = append(edits, jsonspan.Edit{At: r.input, With: in})
		} else {
			added.Add("input", in)
		}
	}

	if p.Tools.Changed() {
		r.rewrote("tools")
		tools := r.toolsJSON(p.Tools)
		switch {
		case tools == nil: // gating emptied the tools
			r.rewrote("tool_choice")
			r.rewrote("parallel_tool_calls")
			edits = append(edits, jsonspan.Removals(r.members, "tools", "tool_choice", "parallel_tool_calls")...)
		case r.hasTools:
			edits = append(edits, jsonspan.Edit{At: r.tools, With: tools})
		default:
			added.Add("tools", tools)
		}
	}
	if e, ok := added.Edit(); ok {
		edits = append(edits, e)
	}
	return jsonspan.Apply(r.body, edits...), nil
}

// inputWith returns the input array with items appended; a string input
// becomes its one user message first.
func (r *Request) inputWith(items [][]byte) ([]byte, error) {
	if !r.hasInput {
		return jsonspan.Array(items), nil
	}
	in := r.body[r.input.Start:r.input.End]
	if r.inputString {
		first := slices.Concat([]byte(`{"role":"user","content":`), in, []byte{'}'})
		return jsonspan.Array(append([][]byte{first}, items...)), nil
	}
	return jsonspan.Append(in, items...)
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

// toolJSON renders a proxy tool as a Responses function tool. strict is
// false: the Responses API defaults it to true, which requires schemas the
// proxy's tools do not promise (every property required, no additional
// properties).
func toolJSON(s wire.ToolSpec) []byte {
	out := []byte(`{"type":"function","name":`)
	out = append(out, wire.Quote(s.Name)...)
	if s.Description != "" {
		out = append(out, `,"description":`...)
		out = append(out, wire.Quote(s.Description)...)
	}
	params := s.Parameters
	if len(params) == 0 {
		params = []byte(`{"type":"object","properties":{}}`)
	}
	out = append(out, `,"parameters":`...)
	out = append(out, params...)
	return append(out, `,"strict":false}`...)
}
