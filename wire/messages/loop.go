package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
	"github.com/skillrouter/skillrouter/wire/internal/ownership"
)

// message is what the tool loop reads of a message answer.
type message struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	Content    []json.RawMessage `json:"content"`
	StopReason *string           `json:"stop_reason"`
	Usage      json.RawMessage   `json:"usage"`
	Container  *struct {
		ID string `json:"id"`
	} `json:"container"`
}

// container is the id of the code execution container the message ran in,
// "" for none.
func (m *message) container() string {
	if m.Container == nil {
		return ""
	}
	return m.Container.ID
}

// answers reports whether a block of the client's message answers the
// user: text or a tool_use (with thinking alone, or server tool blocks,
// the user sees no answer; wire.NoAnswerText says why).
func answers(typ string) bool { return typ == "text" || typ == "tool_use" }

// setContainer names the code execution container id in a follow-up
// request: the next round must run in the container the answer's code
// ran in (its files live there; with programmatic tool calling the API
// refuses pending calls without it). A client's container object (its
// skills) keeps its other members.
func setContainer(body []byte, id string) ([]byte, error) {
	ms, err := jsonspan.Members(body)
	if err != nil {
		return nil, fmt.Errorf("messages: follow-up container: %w", err)
	}
	if s, ok := jsonspan.Value(ms, "container"); ok && body[s.Start] == '{' {
		obj, err := jsonspan.Set(body[s.Start:s.End], "id", wire.Quote(id))
		if err != nil {
			return nil, fmt.Errorf("messages: follow-up container: %w", err)
		}
		return jsonspan.Splice(body, s, obj), nil
	}
	return jsonspan.Apply(body, jsonspan.SetEdit(body, ms, "container", wire.Quote(id))), nil
}

// truncated reports whether a message stopped short, by its stop_reason:
// "max_tokens", "model_context_window_exceeded" (the answer filled the
// context window), or "refusal" (the API's classifiers stopped it; another
// round on that turn would be refused again; see wire.Answer.Truncated).
func truncated(stopReason string) bool {
	return stopReason == "max_tokens" || stopReason == "model_context_window_exceeded" || stopReason == "refusal"
}

// stopReason is a message's stop_reason, "" when it has none.
func (m *message) stopReason() string {
	if m.StopReason == nil {
		return ""
	}
	return *m.StopReason
}

// kind maps a content block type to what the ownership rules need:
// thinking is never hidden with the proxy's call but waits for the next
// block the client is shown, possibly a later round's (ownership.Round).
func kind(typ string) ownership.Kind {
	switch typ {
	case "tool_use":
		return ownership.Call
	case "thinking", "redacted_thinking":
		return ownership.Thinking
	}
	return ownership.Other
}

// ReadAnswer reads a non-streaming message of round: its usage and the
// proxy's tool_use blocks, with the assistant message to append before
// their results, and whether it stopped short. ans is nil when the round
// is the client's answer; ok is false when raw is not a message.
func (r *Request) ReadAnswer(raw []byte, rnd int, mine func(name string) bool) (ans *wire.Answer, usage json.RawMessage, ok bool) {
	if usage, ok := noCalls(raw); ok {
		return nil, usage, true
	}
	return r.decodeAnswer(raw, rnd, mine)
}

// noCalls reads the commonest message, one without a tool_use block,
// without decoding it: its usage, and ok when decoding it as message
// would have succeeded. Anything it does not recognise at a glance (a
// repeated member, a name encoding/json would match only by case, a
// member of the wrong type, a container, a block's type that is not a
// string) is left to the decoder, so both read every message alike.
func noCalls(raw []byte) (usage json.RawMessage, ok bool) {
	top, ok := jsonspan.PlainObject(raw, "id", "type", "content", "stop_reason", "usage", "container")
	if !ok {
		return nil, false
	}
	typ, ok := jsonspan.StringField(raw, top, "type")
	if !ok || typ != "message" {
		return nil, false
	}
	for _, key := range []string{"id", "stop_reason"} {
		if _, ok := jsonspan.StringField(raw, top, key); !ok {
			return nil, false
		}
	}
	if s, ok := jsonspan.Value(top, "container"); ok && !jsonspan.IsNull(raw[s.Start:s.End]) {
		return nil, false
	}
	if cs, ok := jsonspan.Value(top, "content"); ok && !jsonspan.IsNull(raw[cs.Start:cs.End]) {
		noCall := func(typ string) bool { return kind(typ) != ownership.Call }
		if !jsonspan.ObjectTypes(raw[cs.Start:cs.End], noCall) {
			return nil, false
		}
	}
	if s, ok := jsonspan.Value(top, "usage"); ok {
		usage = json.RawMessage(raw[s.Start:s.End])
	}
	return usage, true
}

// decodeAnswer is ReadAnswer by decoding the message.
func (r *Request) decodeAnswer(raw []byte, rnd int, mine func(name string) bool) (ans *wire.Answer, usage json.RawMessage, ok bool) {
	var msg message
	if json.Unmarshal(raw, &msg) != nil || msg.Type != "message" {
		return nil, nil, false
	}
	blocks := make([]block, len(msg.Content))
	rd := ownership.Round{Mine: mine, Whole: true}
	for i, c := range msg.Content {
		_ = json.Unmarshal(c, &blocks[i])
		rd.ProxyAhead = rd.ProxyAhead || (blocks[i].Type == "tool_use" && mine(blocks[i].Name))
	}
	owners := make([]ownership.Owner, len(blocks))
	var calls []wire.ToolCall
	for i, b := range blocks {
		o, resolved, _ := rd.Add(i, kind(b.Type), b.Name)
		owners[i] = o
		for _, j := range resolved {
			owners[j] = ownership.Client // thinking, shown with block i
		}
		if o == ownership.Proxy {
			id := wire.CallID(b.ID, "toolu", rnd, len(calls))
			input := b.Input
			if len(input) == 0 || jsonspan.IsNull(input) {
				input = json.RawMessage("{}")
			}
			calls = append(calls, wire.ToolCall{ID: id, Name: b.Name, Arguments: input})
		}
	}
	if !rd.Loops() {
		return nil, msg.Usage, true
	}
	// The assistant turn keeps every block (thinking with its signature, as
	// the API requires before tool results) but the held client calls. The
	// client is shown the thinking carried from earlier rounds (unless this
	// round opens with its own) and this round's blocks but the proxy's
	// calls; thinking not followed by such a block waits for the next round.
	var content [][]byte
	r.pending = r.pending[:0]
	waiting := r.carried(blocks, func(i int) bool { return owners[i] != ownership.Proxy && owners[i] != ownership.Held })
	k := 0
	for i, c := range msg.Content {
		switch owners[i] {
		case ownership.Held:
			continue
		case ownership.Proxy:
			if blocks[i].ID == "" {
				c, _ = jsonspan.Set(c, "id", wire.Quote(calls[k].ID))
			}
			k++
		case ownership.Pending:
			waiting = append(waiting, c)
		default:
			r.pending = append(r.pending, waiting...)
			waiting = nil
			r.pending = append(r.pending, c)
		}
		content = append(content, c)
	}
	r.pendingWaiting = waiting
	turn := append(append([]byte(`{"role":"assistant","content":`), jsonspan.Array(content)...), '}')
	return &wire.Answer{Calls: calls, Turn: turn, ID: msg.ID, Truncated: truncated(msg.stopReason()),
		Container: msg.container(), Output: wire.UsageCount(msg.Usage, "output_tokens")}, msg.Usage, true
}

// carried returns the thinking of earlier rounds still waiting, which a
// round that thinks before its first block shown (shown) drops
// (ownership.KeepsCarried).
func (r *Request) carried(blocks []block, shown func(i int) bool) []json.RawMessage {
	ks := make([]ownership.Kind, len(blocks))
	for i, b := range blocks {
		ks[i] = kind(b.Type)
	}
	if !ownership.KeepsCarried(ks, shown) {
		return nil
	}
	return slices.Clone(r.waiting)
}

// FollowUp returns the request for the next round: the answer's assistant
// message, then a user message with one tool_result block per result, in
// the order of the calls, with tools set to ts.
func (r *Request) FollowUp(body []byte, ans *wire.Answer, results []wire.ToolResult, ts wire.ToolSet) ([]byte, error) {
	if len(results) == 0 {
		return body, nil
	}
	ordered, err := ans.InCallOrder(results)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	budget := r.maxTokens()
	if !wire.SpendOutput(ans.Output, budget) {
		r.spent = true
		return nil, wire.ErrBudgetSpent
	}
	var blocks [][]byte
	for _, res := range ordered {
		blocks = append(blocks, wire.Marshal(struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			Content   string `json:"content"`
			IsError   bool   `json:"is_error,omitempty"`
		}{"tool_result", res.CallID, res.Content, res.Failed}))
	}
	ms, err := jsonspan.Members(body)
	if err != nil {
		return nil, fmt.Errorf("messages: follow-up body: %w", err)
	}
	at, ok := jsonspan.Value(ms, "messages")
	if !ok {
		return nil, errors.New("messages: follow-up body has no messages")
	}
	user := append(append([]byte(`{"role":"user","content":`), jsonspan.Array(blocks)...), '}')
	msgs, err := jsonspan.Append(body[at.Start:at.End], ans.Turn, user)
	if err != nil {
		return nil, err
	}
	out := jsonspan.Splice(body, at, msgs)
	// What the earlier rounds left of the client's max_tokens.
	if out, err = jsonspan.SetBudget(out, "max_tokens", *budget); err != nil {
		return nil, err
	}
	if budget.Set {
		if out, err = r.thinkingBudget(out, budget.Left); err != nil {
			return nil, err
		}
	}
	if ans.Container != "" {
		if out, err = setContainer(out, ans.Container); err != nil {
			return nil, err
		}
	}
	r.visible = append(r.visible, r.pending...)
	r.waiting, r.pending, r.pendingWaiting = r.pendingWaiting, nil, nil
	r.countUses(ans.Turn)
	if out, err = jsonspan.SetTools(out, ts, r.toolsJSON); err != nil {
		return nil, err
	}
	if r.view.ToolChoice.ServedOnly(ts, len(r.view.Tools)) {
		return relaxChoice(out)
	}
	return out, nil
}

// relaxChoice sets a follow-up's tool_choice to {"type":"auto"} (keeping
// disable_parallel_tool_use): the tool it forced was the proxy's and has
// been answered (wire.ToolChoice.ServedOnly).
func relaxChoice(body []byte) ([]byte, error) {
	return jsonspan.EditValue(body, "tool_choice", func(raw []byte) ([]byte, error) {
		c, err := jsonspan.Set(raw, "type", []byte(`"auto"`))
		if err != nil {
			return raw, nil // not an object: left for the upstream to judge
		}
		return jsonspan.Remove(c, "name")
	})
}

// Final patches the message the client gets: the blocks of earlier rounds
// that were the client's come first, the proxy's tool_use blocks are
// removed when strip is set (a stop_reason "tool_use" becomes "end_turn"
// when no tool_use is left, or "max_tokens" when the client's max_tokens
// was spent before a follow-up (wire.ErrBudgetSpent); "max_tokens" and
// "refusal" stay), and usage (when non-nil) replaces the message's.
func (r *Request) Final(raw []byte, rounds int, usage json.RawMessage, strip func(name string) bool) ([]byte, error) {
	ms, err := jsonspan.Members(raw)
	if err != nil {
		return nil, err
	}
	out := raw
	var msg message
	_ = json.Unmarshal(raw, &msg)
	if s, ok := jsonspan.Value(ms, "content"); ok && (len(r.visible) > 0 || len(r.waiting) > 0 || strip != nil) {
		var content []json.RawMessage
		if err := json.Unmarshal(raw[s.Start:s.End], &content); err != nil {
			return nil, err
		}
		blocks := make([]block, len(content))
		for i, c := range content {
			_ = json.Unmarshal(c, &blocks[i])
		}
		var kept [][]byte
		// Under a JSON output format each round's text is a whole JSON
		// value: the SDK's parse reads the first text block. The last
		// round's is the answer when it has one.
		dropText := r.jsonFormat && slices.ContainsFunc(blocks, func(b block) bool { return b.Type == "text" })
		for _, v := range r.visible {
			if dropText && gjson.GetBytes(v, "type").Str == "text" {
				continue
			}
			kept = append(kept, v)
		}
		for _, v := range r.carried(blocks, func(i int) bool {
			return blocks[i].Type != "tool_use" || strip == nil || !strip(blocks[i].Name)
		}) {
			kept = append(kept, v)
		}
		toolUses, answered := 0, false
		for i, c := range content {
			b := blocks[i]
			if b.Type == "tool_use" && strip != nil && strip(b.Name) {
				continue
			}
			if b.Type == "tool_use" {
				toolUses++
			}
			kept = append(kept, c)
		}
		for _, c := range kept {
			answered = answered || answers(gjson.GetBytes(c, "type").String())
		}
		if !answered && strip != nil {
			kept = append(kept, textBlock(wire.Quote(wire.NoAnswerText(r.spent || truncated(msg.stopReason())))))
		}
		out = jsonspan.Splice(raw, s, jsonspan.Array(kept))
		if strip != nil && toolUses == 0 && msg.stopReason() == "tool_use" {
			stop := `"end_turn"`
			if r.spent {
				stop = `"max_tokens"`
			}
			if out, err = jsonspan.Set(out, "stop_reason", []byte(stop)); err != nil {
				return nil, err
			}
		}
	}
	if usage != nil {
		if out, err = jsonspan.Set(out, "usage", usage); err != nil {
			return nil, err
		}
	}
	return out, nil
}
