package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
	"github.com/skillrouter/skillrouter/wire/internal/openai"
	"github.com/skillrouter/skillrouter/wire/internal/ownership"
)

// response is what the tool loop reads of a response object.
type response struct {
	ID     string            `json:"id"`
	Status string            `json:"status"`
	Output []json.RawMessage `json:"output"`
	Usage  json.RawMessage   `json:"usage"`
}

// truncated reports whether a response stopped short, by its status:
// "incomplete" (incomplete_details.reason "max_output_tokens", or
// "content_filter"), which a stream ends with response.incomplete (see
// wire.Answer.Truncated), or "failed" (response.failed): the client gets it
// as it is, and no round runs on what it holds, as no round runs on a
// stream's response.failed.
func truncated(status string) bool { return status == "incomplete" || status == "failed" }

// item is what the tool loop reads of an output item.
type item struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	CallID    string `json:"call_id"`
	ID        string `json:"id"`
	Arguments string `json:"arguments"`
}

// owner is the name item's ownership is decided by (see ownName).
func (it item) owner() string { return ownName(it.Type, it.Name, it.Namespace) }

// ownName is the name the proxy's ownership of an item of type typ goes by:
// a function call's name, or "" for any other call, which is the client's
// whatever its name. The proxy's tools are plain functions, so a custom
// (free-form) tool's call, or a call into a namespace tool (Codex CLI groups
// each MCP server's tools in one, "mcp__NAME"), is never the proxy's, even
// when it is called load_skill or search_skills.
func ownName(typ, name, namespace string) string {
	if typ != "function_call" || namespace != "" {
		return ""
	}
	return name
}

// callID is the call_id of a function call, else its id, else one made up.
func callID(it item, round, i int) string {
	if it.CallID != "" {
		return it.CallID
	}
	return wire.CallID(it.ID, "call", round, i)
}

// ReadAnswer reads a non-streaming response of round: its usage and the
// proxy's function calls, with the items to append before their outputs,
// and whether it stopped short. ans is nil when the round is the client's
// answer; ok is false when raw is not a response object.
func (r *Request) ReadAnswer(raw []byte, rnd int, mine func(name string) bool) (ans *wire.Answer, usage json.RawMessage, ok bool) {
	if usage, status, ok := noCalls(raw); ok {
		r.failed = status == "failed"
		return nil, usage, true
	}
	return r.decodeAnswer(raw, rnd, mine)
}

// noCalls reads the commonest response, one without a call item of any
// kind, without decoding it: its usage and status, and ok when decoding it
// as response would have succeeded. Anything it does not recognise at a
// glance (a repeated member, a name encoding/json would match only by
// case, a member of the wrong type, an item's type that is not a string)
// is left to the decoder, so both read every response alike.
func noCalls(raw []byte) (usage json.RawMessage, status string, ok bool) {
	top, ok := jsonspan.PlainObject(raw, "id", "status", "output", "usage")
	if !ok {
		return nil, "", false
	}
	if _, ok := jsonspan.StringField(raw, top, "id"); !ok {
		return nil, "", false
	}
	if status, ok = jsonspan.StringField(raw, top, "status"); !ok {
		return nil, "", false
	}
	os, ok := jsonspan.Value(top, "output")
	if !ok || raw[os.Start] != '[' {
		return nil, "", false // null or absent: not a response (see decodeAnswer)
	}
	noCall := func(typ string) bool { _, call := outputTypes[typ]; return !call }
	if !jsonspan.ObjectTypes(raw[os.Start:os.End], noCall) {
		return nil, "", false
	}
	if s, ok := jsonspan.Value(top, "usage"); ok {
		usage = json.RawMessage(raw[s.Start:s.End])
	}
	return usage, status, true
}

// decodeAnswer is ReadAnswer by decoding the response.
func (r *Request) decodeAnswer(raw []byte, rnd int, mine func(name string) bool) (ans *wire.Answer, usage json.RawMessage, ok bool) {
	var resp response
	if json.Unmarshal(raw, &resp) != nil {
		return nil, nil, false
	}
	r.failed = resp.Status == "failed"
	if resp.Output == nil {
		return nil, nil, false
	}
	items := make([]item, len(resp.Output))
	rd := ownership.Round{Mine: mine, Whole: true, NoHold: r.conversation != ""}
	for i, raw := range resp.Output {
		_ = json.Unmarshal(raw, &items[i])
		rd.ProxyAhead = rd.ProxyAhead || (items[i].Type == "function_call" && mine(items[i].owner()))
	}
	owners := make([]ownership.Owner, len(resp.Output))
	var calls []wire.ToolCall
	for i, it := range items {
		o, resolved, shown := rd.Add(i, kind(it.Type), it.owner())
		owners[i] = o
		for _, j := range resolved {
			owners[j] = ownership.Client
			if !shown {
				owners[j] = o
			}
		}
		if o == ownership.Proxy {
			calls = append(calls, wire.ToolCall{ID: callID(it, rnd, len(calls)), Name: it.Name, Arguments: json.RawMessage(orEmptyObject(it.Arguments))})
		}
	}
	for _, j := range rd.HeldBack() {
		owners[j] = ownership.Held
	}
	if !rd.Loops() {
		if rd.ProxyCalls > 0 { // late (see ownership.Round.NoHold): the proxy's calls are dropped
			return &wire.Answer{Calls: calls, ID: resp.ID, Late: true, Truncated: truncated(resp.Status)}, resp.Usage, true
		}
		return nil, resp.Usage, true
	}
	// The items the next request carries: all but the held client calls
	// (with ids given to calls that had none); the client will see the
	// visible ones in the final response.
	var turn [][]byte
	r.pending = r.pending[:0]
	k := 0
	for i, raw := range resp.Output {
		switch owners[i] {
		case ownership.Held:
			continue
		case ownership.Proxy, ownership.Pending:
			if items[i].Type == "function_call" {
				if items[i].CallID == "" {
					raw, _ = jsonspan.Set(raw, "call_id", wire.Quote(calls[k].ID))
				}
				k++
			}
		default:
			r.pending = append(r.pending, raw)
		}
		if r.resent(raw) {
			turn = append(turn, raw)
		}
	}
	ans = &wire.Answer{Calls: calls, Turn: bytes.Join(turn, []byte{','}), ID: resp.ID, Shown: len(r.pending) > 0, Truncated: truncated(resp.Status)}
	if r.conversation != "" {
		for _, it := range items {
			ans.OutputIDs = append(ans.OutputIDs, it.ID)
		}
	}
	return ans, resp.Usage, true
}

// resent reports whether an output item of a round that loops goes back
// as input in the next round. Not in a conversation, which holds the
// round's items already (see state.go); and not a reasoning item without
// encrypted_content (the client did not include
// reasoning.encrypted_content) of a response that was not stored (store:
// false): it refers to nothing the API kept, which it rejects ("Items are
// not persisted when store is set to false"), and the next round reasons
// afresh.
func (r *Request) resent(raw []byte) bool {
	if r.conversation != "" {
		return false
	}
	if !r.unstored || gjson.GetBytes(raw, "type").String() != "reasoning" {
		return true
	}
	return gjson.GetBytes(raw, "encrypted_content").String() != ""
}

// kind maps an output item type to what the ownership rules need.
func kind(typ string) ownership.Kind {
	if typ == "reasoning" {
		return ownership.Reasoning
	}
	if _, ok := outputTypes[typ]; ok { // a call, answered with an output item
		return ownership.Call
	}
	return ownership.Other
}

func orEmptyObject(args string) string {
	if args == "" {
		return "{}"
	}
	return args
}

// FollowUp returns the request for the next round: the round's items (but
// the held client calls) and one function_call_output per result are
// appended to input, and tools is set to ts. In a conversation, which
// already holds the input and the round's items, the input is only the
// outputs (see state.go); what the round added to it is noted (see
// takeback.go).
func (r *Request) FollowUp(body []byte, ans *wire.Answer, results []wire.ToolResult, ts wire.ToolSet) ([]byte, error) {
	r.noteAdded(body, ans)
	if len(results) == 0 {
		return body, nil
	}
	ordered, err := ans.InCallOrder(results)
	if err != nil {
		return nil, fmt.Errorf("responses: %w", err)
	}
	var outputs [][]byte
	for _, res := range ordered {
		outputs = append(outputs, functionOutput(res.CallID, res.Content))
	}
	ms, err := jsonspan.Members(body)
	if err != nil {
		return nil, fmt.Errorf("responses: follow-up body: %w", err)
	}
	// The round's items and the outputs are appended to the input, with or
	// without previous_response_id: chaining from the round's response
	// instead would fail when it was not stored (store: false) and would
	// leave the client's calls of that round, stored with it, unanswered.
	// The client's previous_response_id, if any, stays as sent.
	items := outputs
	if len(ans.Turn) > 0 {
		items = append([][]byte{ans.Turn}, outputs...)
	}
	var out []byte
	in, ok := jsonspan.Value(ms, "input")
	switch {
	case !ok || jsonspan.IsNull(body[in.Start:in.End]):
		out, err = jsonspan.Set(body, "input", jsonspan.Array(items))
	case r.conversation != "":
		// The conversation holds the input and the round's items already.
		out = jsonspan.Splice(body, in, jsonspan.Array(items))
	case body[in.Start] == '"':
		out = jsonspan.Splice(body, in, jsonspan.Array(append([][]byte{userMessage(body[in.Start:in.End])}, items...)))
	default:
		var arr []byte
		if arr, err = jsonspan.Append(body[in.Start:in.End], items...); err == nil {
			out = jsonspan.Splice(body, in, arr)
		}
	}
	if err != nil {
		return nil, err
	}
	if ts.Changed() {
		r.rewrote("tools")
	}
	if out, err = jsonspan.SetTools(out, ts, r.toolsJSON); err != nil {
		return nil, err
	}
	if r.view.ToolChoice.ServedOnly(ts, len(r.view.Tools)) {
		r.rewrote("tool_choice")
		if out, err = openai.RelaxChoice(out); err != nil {
			return nil, err
		}
	}
	// What the earlier rounds left of the client's limits; when too little
	// is left the round is the client's answer, whose items are its own.
	if out, err = r.carryBudgets(out, ans); err != nil {
		return nil, err
	}
	// The round's visible items are the client's from now on.
	r.visible = append(r.visible, r.pending...)
	r.pending = nil
	return out, nil
}

// proxyItems says which of an answer's output items are the proxy's, none
// of them to be shown once the answer is the client's: its calls (mine)
// and the reasoning before them.
func proxyItems(items []json.RawMessage, mine func(name string) bool) []bool {
	rd := ownership.Round{Mine: mine, Final: true}
	hide := make([]bool, len(items))
	for i, raw := range items {
		var it item
		_ = json.Unmarshal(raw, &it)
		o, resolved, shown := rd.Add(i, kind(it.Type), it.owner())
		hide[i] = o == ownership.Proxy
		for _, j := range resolved {
			hide[j] = !shown
		}
	}
	return hide
}

// Final patches the response the client gets: the output items of earlier
// rounds that were the client's come first, the proxy's calls (and the
// reasoning before them) are removed when strip is set, usage (when
// non-nil) replaces the response's, the echoed request parameters the
// proxy changed are the client's again (see echo.go), and a response whose
// max_output_tokens was spent before a follow-up ends as the API ends one
// at that limit (see spentEdits).
func (r *Request) Final(raw []byte, rounds int, usage json.RawMessage, strip func(name string) bool) ([]byte, error) {
	ms, err := jsonspan.Members(raw)
	if err != nil {
		return nil, err
	}
	edits := r.echoEdits(ms)
	if s, ok := jsonspan.Value(ms, "output"); ok && (len(r.visible) > 0 || strip != nil) {
		var items []json.RawMessage
		if err := json.Unmarshal(raw[s.Start:s.End], &items); err != nil {
			return nil, err
		}
		kept := append([]json.RawMessage(nil), r.visible...)
		if r.jsonFormat && hasMessage(items) {
			// Each round's message is a whole JSON value: the SDKs' parse
			// helpers read the first message, and output_text joins them
			// all. The last round's is the answer.
			kept = slices.DeleteFunc(kept, isMessage)
		}
		if strip != nil {
			for i, hidden := range proxyItems(items, strip) {
				if !hidden {
					kept = append(kept, items[i])
				}
			}
		} else {
			kept = append(kept, items...)
		}
		if strip != nil && !answered(kept) { // the proxy's calls were all it had
			top := gjson.GetManyBytes(raw, "id", "status")
			kept = append(kept, noAnswerItem(top[0].Str, r.spent() || truncated(top[1].Str), "completed"))
		}
		els := make([][]byte, len(kept))
		for i, k := range kept {
			els[i] = k
		}
		edits = append(edits, jsonspan.Edit{At: s, With: jsonspan.Array(els)})
	}
	if usage != nil {
		edits = append(edits, jsonspan.SetEdit(raw, ms, "usage", usage))
	}
	if r.spent() {
		edits = append(edits, spentEdits(raw, ms)...)
	}
	if len(edits) == 0 {
		return raw, nil
	}
	return jsonspan.Apply(raw, edits...), nil
}

// hasMessage reports whether output items hold a message.
func hasMessage(items []json.RawMessage) bool { return slices.ContainsFunc(items, isMessage) }

func isMessage(it json.RawMessage) bool { return gjson.GetBytes(it, "type").Str == "message" }
