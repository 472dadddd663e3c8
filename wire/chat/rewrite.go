package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// Render splices p into the request in one pass over the spans Parse found:
// every byte outside the edits is copied as is and nothing is scanned twice.
// A capped stream that offers the proxy's tools also asks for usage (see
// asksUsage).
func (r *Request) Render(p *wire.Plan) ([]byte, error) {
	out, err := r.render(p)
	if err != nil || !r.asksUsage(p) {
		return out, err
	}
	if out, err = withUsage(out); err != nil {
		return nil, err
	}
	r.askedUsage = true
	return out, nil
}

// asksUsage reports whether the upstream must be asked for usage the
// client did not ask for: a stream carries usage only with
// stream_options.include_usage, and without it the proxy cannot take a
// hidden round's output from the client's output-token cap (wire.Budget),
// so the follow-ups would carry the whole cap again. Only when there is a
// cap and the plan offers the proxy's tools (hidden rounds may follow):
// everywhere else the upstream gets the client's stream_options as sent.
func (r *Request) asksUsage(p *wire.Plan) bool {
	return p != nil && p.Changed && r.view.Stream && !r.includeUsage && len(p.Tools.Server) > 0 &&
		(r.maxCompletion.Set || r.maxTokens.Set)
}

// withUsage sets stream_options.include_usage in body, keeping the other
// members of the client's stream_options (vLLM's continuous_usage_stats).
func withUsage(body []byte) ([]byte, error) {
	ms, err := jsonspan.Members(body)
	if err != nil {
		return nil, fmt.Errorf("chat: asking for usage: %w", err)
	}
	if so, ok := jsonspan.Value(ms, "stream_options"); ok && body[so.Start] == '{' {
		return jsonspan.SetIn(body, "stream_options", "include_usage", []byte("true"))
	}
	return jsonspan.Set(body, "stream_options", []byte(`{"include_usage":true}`))
}

// WithoutUsageAsk returns body, a request of this one's tool loop, with
// the client's stream_options back as it sent them, and whether Render had
// asked for usage (false: body is returned as it is). From then on the
// stream relays usage as the upstream sends it: for an upstream that
// refuses stream_options (see docs/proxy.md), which then never reports
// usage, and hidden rounds take nothing from the cap, as before the ask.
func (r *Request) WithoutUsageAsk(body []byte) ([]byte, bool) {
	if !r.askedUsage {
		return body, false
	}
	var out []byte
	var err error
	if so, ok := jsonspan.Value(r.members, "stream_options"); ok {
		out, err = jsonspan.Set(body, "stream_options", r.body[so.Start:so.End])
	} else {
		out, err = jsonspan.Remove(body, "stream_options")
	}
	if err != nil {
		return body, false
	}
	r.askedUsage = false
	return out, true
}

// UsageAskRefused reports whether refusal, the body of an upstream's
// refusal (400, 422) of a request Render asked for usage in, plausibly
// refuses that ask: it names stream_options or include_usage (Azure's
// older API versions: "Unrecognized request argument supplied:
// stream_options"; OpenAI's param; FastAPI's and pydantic's loc), as JSON
// or as text. Names in what a refusal echoes of the request ("input",
// "input_value": FastAPI puts the whole body there when it misses a field)
// do not count: that refusal is about something else, and sending the
// request again would only double it. False when Render asked for nothing.
func (r *Request) UsageAskRefused(refusal []byte) bool {
	if !r.askedUsage {
		return false
	}
	var v any
	if json.Unmarshal(refusal, &v) != nil {
		return namesUsageAsk(string(refusal)) // text, or JSON cut short
	}
	return mentionsUsageAsk(v)
}

// mentionsUsageAsk walks a decoded refusal for namesUsageAsk.
func mentionsUsageAsk(v any) bool {
	switch v := v.(type) {
	case string:
		return namesUsageAsk(v)
	case []any:
		return slices.ContainsFunc(v, mentionsUsageAsk)
	case map[string]any:
		for k, e := range v {
			if k == "input" || k == "input_value" {
				continue
			}
			if namesUsageAsk(k) || mentionsUsageAsk(e) {
				return true
			}
		}
	}
	return false
}

func namesUsageAsk(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "stream_options") || strings.Contains(s, "include_usage")
}

// prefixed reports whether the request ends in an assistant message with
// "prefix": true after some other message: a prefix the model is to
// continue, which DeepSeek's and Mistral's APIs require to be the last message.
func (r *Request) prefixed() bool {
	if len(r.msgs) < 2 {
		return false
	}
	m := r.msgs[len(r.msgs)-1]
	if m.role != "assistant" {
		return false
	}
	ms, err := jsonspan.Members(m.raw)
	if err != nil {
		return false
	}
	return string(bytes.TrimSpace(jsonspan.Raw(m.raw, ms, "prefix"))) == "true"
}

// render is Render without the ask for usage.
func (r *Request) render(p *wire.Plan) ([]byte, error) {
	if p == nil || !p.Changed {
		return r.body, nil
	}
	body := r.body
	first, last := r.msgs[0].at, r.msgs[len(r.msgs)-1].at

	// The catalog's message: the first system/developer message, else new.
	target, edited := -1, [][]byte(nil)
	var newSystem []byte
	if p.Catalog != "" {
		for i, m := range r.msgs {
			if m.role == "system" || m.role == "developer" {
				target = i
				break
			}
		}
		if target >= 0 {
			var err error
			if edited, err = withCatalog(r.msgs[target], p.CatalogJSON); err != nil {
				return nil, err
			}
		}
		if edited == nil { // no system message, or one whose content cannot take text
			newSystem = slices.Concat([]byte(`{"role":"system","content":`), p.CatalogJSON, []byte{'}'})
		}
	}
	roleJSON := wire.Quote(p.EnvelopeRole)

	// Size the output exactly enough (JSON escaping makes the quoted texts
	// longer than the texts): growing a ~15 KB body mid-way copied it and
	// doubled what a rewrite allocates.
	n := len(body) + len(newSystem) + 64
	for _, part := range edited {
		n += len(part)
	}
	for _, e := range p.Envelopes {
		n += len(e.JSON) + len(roleJSON) + 32
	}
	tools := r.toolsJSON(p.Tools)
	n += len(tools) + len(`,"tools":`)
	out := make([]byte, 0, n)

	// The envelopes go after the last message, or before a trailing
	// assistant message with "prefix": true (DeepSeek's and Mistral's prefix
	// completion, which the model continues and which must come last).
	cut := last.End
	if len(p.Envelopes) > 0 && r.prefixed() {
		cut = r.msgs[len(r.msgs)-2].at.End
	}

	// Up to the first message, [the new system message,] the messages with
	// the catalog's message edited, the envelopes, the rest of the array.
	out = append(out, body[:first.Start]...)
	if newSystem != nil {
		out = append(append(out, newSystem...), ',')
	}
	if edited != nil {
		at := r.msgs[target].at
		out = append(out, body[first.Start:at.Start]...)
		for _, part := range edited {
			out = append(out, part...)
		}
		out = append(out, body[at.End:cut]...)
	} else {
		out = append(out, body[first.Start:cut]...)
	}
	for _, env := range p.Envelopes {
		out = append(out, `,{"role":`...)
		out = append(out, roleJSON...)
		out = append(out, `,"content":`...)
		out = append(out, env.JSON...)
		out = append(out, '}')
	}
	out = append(out, body[cut:last.End]...)
	rest := body[last.End:]
	if !p.Tools.Changed() {
		return append(out, rest...), nil
	}
	if tools == nil { // gating emptied the tools
		return withoutTools(append(out, rest...))
	}

	// Tools replace the client's array (or null), or are added as the last member.
	var at jsonspan.Span
	if r.hasTools {
		at = r.tools
	} else {
		end := r.members[len(r.members)-1].Value.End
		at = jsonspan.Span{Start: end, End: end}
		tools = append([]byte(`,"tools":`), tools...)
	}
	if at.Start < last.End {
		// tools come before messages: out still has the body's bytes there.
		return jsonspan.Splice(append(out, rest...), at, tools), nil
	}
	out = append(out, body[last.End:at.Start]...)
	out = append(out, tools...)
	return append(out, body[at.End:]...), nil
}

// toolsJSON renders the tools array of ts (see wire.ToolSet.Elements);
// nil when it would be empty.
func (r *Request) toolsJSON(ts wire.ToolSet) []byte {
	els := ts.Elements(r.clientTools, wire.ToolSpec.FunctionJSON)
	if len(els) == 0 {
		return nil
	}
	return jsonspan.Array(els)
}

// withCatalog returns message m with the catalog (given JSON-encoded)
// appended to its content, as parts to concatenate: "\n\n"+catalog for
// string content, a text part for array content, the catalog itself for
// null or missing content. nil means the content has another shape (Parse
// rejects those) and m is left alone. The common case, string content, is returned as slices of
// m and the catalog, so that Render copies the ~10 KB catalog once, not
// three times.
func withCatalog(m message, quoted []byte) ([][]byte, error) {
	ms, err := jsonspan.Members(m.raw)
	if err != nil {
		return nil, err
	}
	cs, ok := jsonspan.Value(ms, "content")
	if !ok || jsonspan.IsNull(m.raw[cs.Start:cs.End]) {
		whole, err := jsonspan.Set(m.raw, "content", quoted)
		return [][]byte{whole}, err
	}
	content := m.raw[cs.Start:cs.End]
	switch content[0] {
	case '"':
		open, rest, err := jsonspan.QuotedParts(content, quoted)
		if err != nil {
			return nil, err
		}
		sep := []byte(nil)
		if m.text != "" {
			sep = []byte(`\n\n`)
		}
		// The message up to the content's closing quote, the separator, the
		// catalog from after its opening quote, the rest of the message.
		return [][]byte{m.raw[:cs.Start], open, sep, rest, m.raw[cs.End:]}, nil
	case '[':
		part := slices.Concat([]byte(`{"type":"text","text":`), quoted, []byte{'}'})
		edited, err := jsonspan.Append(content, part)
		if err != nil {
			return nil, err
		}
		return [][]byte{jsonspan.Splice(m.raw, cs, edited)}, nil
	}
	return nil, nil
}

// withoutTools drops tools, tool_choice and parallel_tool_calls from a body
// whose tools array gating emptied: upstreams reject an empty tools array
// and tool settings without tools.
func withoutTools(body []byte) ([]byte, error) {
	var err error
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
		if body, err = jsonspan.Remove(body, k); err != nil {
			return nil, err
		}
	}
	return body, nil
}
