package chat

import (
	"bytes"
	"encoding/json"
	"errors"
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
	out, separate, err := r.render(p)
	if err != nil {
		return nil, err
	}
	r.plan, r.separate = p, separate
	if !r.asksUsage(p) {
		return out, nil
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
	return refusalNames(refusal, namesUsageAsk)
}

// refusalNames reports whether refusal, an upstream's error body, names
// what names reports true of: as JSON (see mentions), or, when it is text
// or JSON cut short, anywhere in it.
func refusalNames(refusal []byte, names func(string) bool) bool {
	var v any
	if json.Unmarshal(refusal, &v) != nil {
		return names(string(refusal))
	}
	return mentions(v, names)
}

// mentions walks a decoded refusal for a string or member name that names
// reports true of, but for what it echoes of the request ("input",
// "input_value").
func mentions(v any, names func(string) bool) bool {
	switch v := v.(type) {
	case string:
		return names(v)
	case []any:
		return slices.ContainsFunc(v, func(e any) bool { return mentions(e, names) })
	case map[string]any:
		for k, e := range v {
			if k == "input" || k == "input_value" {
				continue
			}
			if names(k) || mentions(e, names) {
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

// render is Render without the ask for usage; separate reports whether it
// put envelopes in messages of their own (see MergeEnvelopes).
func (r *Request) render(p *wire.Plan) (out []byte, separate bool, err error) {
	if p == nil || !p.Changed {
		return r.body, false, nil
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
			// String content comes back as slices of the message and the
			// catalog, so that Render copies the ~10 KB catalog once.
			if edited, err = withTexts(r.msgs[target], p.CatalogJSON); err != nil {
				return nil, false, err
			}
		}
		if edited == nil { // no system message, or one whose content cannot take text
			newSystem = slices.Concat([]byte(`{"role":"system","content":`), p.CatalogJSON, []byte{'}'})
		}
	}
	// The envelopes' message when they go inside the last user message
	// (MergeEnvelopes), else nil.
	into, merged := r.mergeInto(p), [][]byte(nil)
	if into >= 0 {
		quoted := make([][]byte, len(p.Envelopes))
		for i, e := range p.Envelopes {
			quoted[i] = e.JSON
		}
		if merged, err = withTexts(r.msgs[into], quoted...); err != nil {
			return nil, false, err
		}
	}
	separate = merged == nil && len(p.Envelopes) > 0
	roleJSON := wire.Quote(p.EnvelopeRole)

	// Size the output exactly enough (JSON escaping makes the quoted texts
	// longer than the texts): growing a ~15 KB body mid-way copied it and
	// doubled what a rewrite allocates.
	n := len(body) + len(newSystem) + 64
	for _, part := range edited {
		n += len(part)
	}
	for _, part := range merged {
		n += len(part)
	}
	if separate {
		for _, e := range p.Envelopes {
			n += len(e.JSON) + len(roleJSON) + 32
		}
	}
	tools := r.toolsJSON(p.Tools)
	n += len(tools) + len(`,"tools":`)
	out = make([]byte, 0, n)

	// The envelopes go after the last message, or before a trailing
	// assistant message with "prefix": true (DeepSeek's and Mistral's prefix
	// completion, which the model continues and which must come last).
	cut := last.End
	if separate && r.prefixed() {
		cut = r.msgs[len(r.msgs)-2].at.End
	}

	// The messages edited, in body order: the catalog's (a system or
	// developer message) and the one the envelopes go into (a user
	// message), both before cut.
	type edit struct {
		at    jsonspan.Span
		parts [][]byte
	}
	edits := make([]edit, 0, 2)
	if edited != nil {
		edits = append(edits, edit{r.msgs[target].at, edited})
	}
	if merged != nil {
		edits = append(edits, edit{r.msgs[into].at, merged})
		if len(edits) == 2 && target > into {
			edits[0], edits[1] = edits[1], edits[0]
		}
	}

	// Up to the first message, [the new system message,] the messages with
	// the edited ones replaced, the envelopes, the rest of the array.
	out = append(out, body[:first.Start]...)
	if newSystem != nil {
		out = append(append(out, newSystem...), ',')
	}
	pos := first.Start
	for _, e := range edits {
		out = append(out, body[pos:e.at.Start]...)
		for _, part := range e.parts {
			out = append(out, part...)
		}
		pos = e.at.End
	}
	out = append(out, body[pos:cut]...)
	if separate {
		for _, env := range p.Envelopes {
			out = append(out, `,{"role":`...)
			out = append(out, roleJSON...)
			out = append(out, `,"content":`...)
			out = append(out, env.JSON...)
			out = append(out, '}')
		}
	}
	out = append(out, body[cut:last.End]...)
	rest := body[last.End:]
	if !p.Tools.Changed() {
		return append(out, rest...), separate, nil
	}
	if tools == nil { // gating emptied the tools
		out, err = withoutTools(append(out, rest...))
		return out, separate, err
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
		return jsonspan.Splice(append(out, rest...), at, tools), separate, nil
	}
	out = append(out, body[last.End:at.Start]...)
	out = append(out, tools...)
	return append(out, body[at.End:]...), separate, nil
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

// withTexts returns message m with texts (each JSON-encoded) appended to
// its content, as parts to concatenate: "\n\n" and the texts joined by
// "\n\n" for string content (no leading separator when it is empty), one
// text part each for array content, the texts joined by "\n\n" for null
// or missing content. nil means the content has another shape (Parse
// rejects those) and m is left alone.
func withTexts(m message, quoted ...[]byte) ([][]byte, error) {
	ms, err := jsonspan.Members(m.raw)
	if err != nil {
		return nil, err
	}
	cs, ok := jsonspan.Value(ms, "content")
	if !ok || jsonspan.IsNull(m.raw[cs.Start:cs.End]) {
		joined, err := joinQuoted(quoted)
		if err != nil {
			return nil, err
		}
		whole, err := jsonspan.Set(m.raw, "content", joined)
		return [][]byte{whole}, err
	}
	content := m.raw[cs.Start:cs.End]
	switch content[0] {
	case '"':
		open, rest, err := jsonspan.QuotedParts(content, quoted[len(quoted)-1])
		if err != nil {
			return nil, err
		}
		sep := []byte(nil)
		if m.text != "" {
			sep = paragraph
		}
		// The message up to the content's closing quote, the separator, the
		// texts but the last without their quotes, each followed by a
		// separator, the last from after its opening quote, the rest of the
		// message.
		parts := make([][]byte, 0, 5+2*(len(quoted)-1))
		parts = append(parts, m.raw[:cs.Start], open, sep)
		for _, q := range quoted[:len(quoted)-1] {
			text, err := unquoted(q)
			if err != nil {
				return nil, err
			}
			parts = append(parts, text, paragraph)
		}
		return append(parts, rest, m.raw[cs.End:]), nil
	case '[':
		textParts := make([][]byte, len(quoted))
		for i, q := range quoted {
			textParts[i] = slices.Concat([]byte(`{"type":"text","text":`), q, []byte{'}'})
		}
		edited, err := jsonspan.Append(content, textParts...)
		if err != nil {
			return nil, err
		}
		return [][]byte{jsonspan.Splice(m.raw, cs, edited)}, nil
	}
	return nil, nil
}

// paragraph separates texts appended to a content, JSON-escaped.
var paragraph = []byte(`\n\n`)

// joinQuoted joins JSON strings into one JSON string of their texts
// separated by "\n\n".
func joinQuoted(quoted [][]byte) ([]byte, error) {
	if len(quoted) == 1 {
		return quoted[0], nil
	}
	out := []byte{'"'}
	for i, q := range quoted {
		text, err := unquoted(q)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, paragraph...)
		}
		out = append(out, text...)
	}
	return append(out, '"'), nil
}

// unquoted is a JSON string's text as it stands between its quotes, still
// escaped.
func unquoted(q []byte) ([]byte, error) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return nil, errors.New("chat: not a JSON string")
	}
	return q[1 : len(q)-1], nil
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
