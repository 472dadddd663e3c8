package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
	"github.com/skillrouter/skillrouter/wire/internal/openai"
)

// toolCall is one complete tool call of an assistant message.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	Extra extra `json:"-"` // members not read here, kept (see extra)
}

func (c *toolCall) UnmarshalJSON(b []byte) error {
	type plain toolCall
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	var err error
	c.Extra, err = readExtra(b, "id", "type", "function", "index")
	return err
}

func (c toolCall) MarshalJSON() ([]byte, error) {
	type plain toolCall
	b, err := json.Marshal(plain(c))
	return c.Extra.appendTo(b), err
}

// completion is what the tool loop reads of a non-streaming answer.
type completion struct {
	ID      string `json:"id"`
	Choices []struct {
		Message      json.RawMessage `json:"message"` // kept for the follow-up (see assistantTurn)
		FinishReason string          `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

func callID(id string, round, i int) string { return wire.CallID(id, "call", round, i) }

// truncated reports whether an answer stopped short, by its finish_reason:
// the output-token limit ("length") or a content filter (see
// wire.Answer.Truncated).
func truncated(finishReason string) bool {
	return finishReason == "length" || finishReason == "content_filter"
}

// ReadAnswer reads a non-streaming answer of round: its usage, and the
// proxy's calls in choice 0 (those mine claims) with the assistant turn to
// append before their results, and whether it stopped short. ans is nil
// when there is no call of the proxy's; ok is false when raw is not a chat
// completion with choices.
func (r *Request) ReadAnswer(raw []byte, round int, mine func(name string) bool) (ans *wire.Answer, usage json.RawMessage, ok bool) {
	if usage, ok := noCalls(raw); ok {
		return nil, usage, true
	}
	return r.decodeAnswer(raw, round, mine)
}

// decodeAnswer is ReadAnswer by decoding the answer.
func (r *Request) decodeAnswer(raw []byte, round int, mine func(name string) bool) (ans *wire.Answer, usage json.RawMessage, ok bool) {
	var cmp completion
	if json.Unmarshal(raw, &cmp) != nil || len(cmp.Choices) == 0 {
		return nil, nil, false
	}
	var msg struct {
		ToolCalls []toolCall `json:"tool_calls"`
	}
	if json.Unmarshal(cmp.Choices[0].Message, &msg) != nil {
		return nil, nil, false
	}
	var calls []toolCall
	for i, tc := range msg.ToolCalls {
		if mine(tc.Function.Name) {
			tc.ID = callID(tc.ID, round, i)
			calls = append(calls, tc)
		}
	}
	if len(calls) == 0 {
		return nil, cmp.Usage, true
	}
	r.roundLogprobs = gjson.GetBytes(cmp.Choices[0].Logprobs, "content").Array()
	ans = answerOf(cmp.Choices[0].Message, calls)
	ans.ID = cmp.ID
	ans.Truncated = truncated(cmp.Choices[0].FinishReason)
	ans.Output = wire.UsageCount(cmp.Usage, "completion_tokens")
	return ans, cmp.Usage, true
}

// noCalls reads the commonest answer, one whose first choice's message has
// no tool_calls, without decoding it: its usage, and ok when decoding it
// as completion would have succeeded with no calls. Anything it does not
// recognise at a glance (a repeated member, a name encoding/json would
// match only by case, a member of the wrong type, tool_calls of any
// value) is left to the decoder, so both read every answer alike.
func noCalls(raw []byte) (usage json.RawMessage, ok bool) {
	top, ok := jsonspan.PlainObject(raw, "id", "choices", "usage")
	if !ok {
		return nil, false
	}
	if _, ok := jsonspan.StringField(raw, top, "id"); !ok {
		return nil, false
	}
	cs, ok := jsonspan.Value(top, "choices")
	if !ok {
		return nil, false
	}
	choices, err := jsonspan.Elements(raw[cs.Start:cs.End])
	if err != nil || len(choices) == 0 {
		return nil, false
	}
	var first []byte // the first choice's message
	for i, e := range choices {
		c := raw[cs.Start+e.Start : cs.Start+e.End]
		ms, err := jsonspan.Members(c)
		if err != nil || !jsonspan.Unambiguous(ms, "message", "finish_reason") {
			return nil, false
		}
		if _, ok := jsonspan.StringField(c, ms, "finish_reason"); !ok {
			return nil, false
		}
		if i == 0 {
			s, ok := jsonspan.Value(ms, "message")
			if !ok {
				return nil, false
			}
			first = c[s.Start:s.End]
		}
	}
	msg, err := jsonspan.Members(first)
	if err != nil || !jsonspan.Unambiguous(msg, "tool_calls") {
		return nil, false
	}
	if _, ok := jsonspan.Value(msg, "tool_calls"); ok {
		return nil, false
	}
	if s, ok := jsonspan.Value(top, "usage"); ok {
		usage = json.RawMessage(raw[s.Start:s.End])
	}
	return usage, true
}

// answerOf builds the Answer for the proxy's calls; msg is the assistant
// message that holds them (see assistantTurn).
func answerOf(msg []byte, calls []toolCall) *wire.Answer {
	ans := &wire.Answer{}
	for i := range calls {
		c := &calls[i]
		if c.Type == "" {
			c.Type = "function"
		}
		if c.Function.Arguments == "" {
			c.Function.Arguments = "{}"
		}
		ans.Calls = append(ans.Calls, wire.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
	}
	ans.Turn = assistantTurn(msg, calls)
	return ans
}

// assistantTurn is the assistant message the follow-up appends: the
// answer's message as the upstream gave it, with tool_calls holding the
// proxy's calls only. Its other fields go back as they came: DeepSeek's
// thinking mode refuses a tool-call message without its reasoning_content
// ("Missing `reasoning_content` field in the assistant message"), vLLM's
// reasoning parsers use the same field or reasoning, OpenRouter wants its
// reasoning_details back unchanged to continue the model's reasoning, and
// fields unknown to the proxy are the upstream's business. What only an answer has is not
// sent back: annotations (url_citation, which no request message takes)
// go, audio becomes the {"id"} a request takes. A missing role or content
// is added (content null).
func assistantTurn(msg []byte, calls []toolCall) []byte {
	if ms, err := jsonspan.Members(msg); err != nil || len(ms) == 0 {
		msg = []byte(`{}`) // no object: only what the proxy knows
	}
	if out, err := jsonspan.Remove(msg, "annotations"); err == nil {
		msg = out
	}
	set := func(key string, value []byte) {
		if out, err := jsonspan.Set(msg, key, value); err == nil {
			msg = out
		}
	}
	if r := gjson.GetBytes(msg, "role"); !r.Exists() {
		set("role", []byte(`"assistant"`))
	}
	if c := gjson.GetBytes(msg, "content"); !c.Exists() {
		set("content", []byte("null"))
	}
	if id := gjson.GetBytes(msg, "audio.id"); id.Type == gjson.String {
		set("audio", wire.Marshal(map[string]string{"id": id.Str}))
	}
	set("tool_calls", wire.Marshal(calls))
	return msg
}

// FollowUp returns the request for the next round: body plus the answer's
// assistant message (see assistantTurn) and one tool message
// per result, in the order of the calls, with tools set to ts (skills a
// load_skill activated may add tier-3 tools and put back gated client tools
// they enable). A result for a call the answer does not hold is an error
// (the upstream would reject the request).
func (r *Request) FollowUp(body []byte, ans *wire.Answer, results []wire.ToolResult, ts wire.ToolSet) ([]byte, error) {
	if len(results) == 0 {
		return body, nil
	}
	if !wire.SpendOutput(ans.Output, &r.maxCompletion, &r.maxTokens) {
		r.spent = true
		return nil, wire.ErrBudgetSpent
	}
	ms, err := jsonspan.Members(body)
	if err != nil {
		return nil, fmt.Errorf("chat: follow-up body: %w", err)
	}
	at, ok := jsonspan.Value(ms, "messages")
	if !ok {
		return nil, errors.New("chat: follow-up body has no messages")
	}
	ordered, err := ans.InCallOrder(results)
	if err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	elems := [][]byte{ans.Turn}
	for _, res := range ordered {
		elems = append(elems, wire.Marshal(struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}{"tool", res.CallID, res.Content}))
	}
	msgs, err := jsonspan.Append(body[at.Start:at.End], elems...)
	if err != nil {
		return nil, err
	}
	out := jsonspan.Splice(body, at, msgs)
	// What the earlier rounds left of the client's caps (see wire.Budget).
	if out, err = jsonspan.SetBudget(out, "max_completion_tokens", r.maxCompletion); err != nil {
		return nil, err
	}
	if out, err = jsonspan.SetBudget(out, "max_tokens", r.maxTokens); err != nil {
		return nil, err
	}
	if tools := r.toolsJSON(ts); tools != nil {
		if out, err = jsonspan.Set(out, "tools", tools); err != nil {
			return nil, err
		}
	}
	if r.view.ToolChoice.ServedOnly(ts, len(r.view.Tools)) {
		if out, err = openai.RelaxChoice(out); err != nil {
			return nil, err
		}
	}
	if t := gjson.GetBytes(ans.Turn, "content"); t.Type == gjson.String {
		r.earlier += t.Str // the round loops: shown to a streaming client as it came
		for _, lp := range r.roundLogprobs {
			r.earlierLogprobs = append(r.earlierLogprobs, []byte(lp.Raw))
		}
	}
	return out, nil
}

// fits reports whether a round that used output tokens could loop: a
// follow-up could carry what is left of the caps (see wire.Budget).
// Spent reports whether too little of the client's cap is left after ans
// for a follow-up; Final then ends the answer "length".
func (r *Request) Spent(ans *wire.Answer) bool {
	if !r.fits(ans.Output) {
		r.spent = true
	}
	return r.spent
}

func (r *Request) fits(output int64) bool {
	return r.maxCompletion.CarriesAfter(output) && r.maxTokens.CarriesAfter(output)
}

// Final patches the last answer of the request's tool loop (see final);
// when the client's output-token cap was spent before the follow-up it
// would have needed (wire.ErrBudgetSpent), it ends as the API ends an
// answer at that cap: finish_reason "length".
func (r *Request) Final(raw []byte, usage json.RawMessage, strip func(name string) bool) ([]byte, error) {
	earlier := r.earlier
	if r.jsonFormat && gjson.GetBytes(raw, "choices.0.message.content").Str != "" {
		// Under a JSON response_format each round's text is a whole JSON
		// value: put together they would parse as none. The last round's
		// is the answer when it has one.
		earlier = ""
	}
	return final(raw, usage, strip, r.spent, earlier, r.earlierLogprobs)
}

// final patches the last answer of a tool loop in place (the answer's
// members keep their order): usage (when non-nil) replaces the answer's,
// and when strip is set the proxy's own calls are removed from choice 0 (a
// finish_reason "tool_calls" becomes "stop" if no call is left, "length"
// when spent; "length" and "content_filter" stay). earlier is the text of
// the answers that looped, which a streaming client was shown as it came:
// it goes before choice 0's, and their logprobs (earlierLogprobs, the
// content tokens) before its logprobs.
func final(raw []byte, usage json.RawMessage, strip func(name string) bool, spent bool, earlier string, earlierLogprobs [][]byte) ([]byte, error) {
	out := raw
	if _, err := jsonspan.Members(raw); err != nil {
		return nil, err
	}
	if usage != nil {
		var err error
		if out, err = jsonspan.Set(out, "usage", usage); err != nil {
			return nil, err
		}
	}
	if earlier == "" && strip == nil {
		return out, nil
	}
	return editChoice0(out, func(choice []byte) ([]byte, error) {
		cms, err := jsonspan.Members(choice)
		if err != nil {
			return nil, err
		}
		at, ok := jsonspan.Value(cms, "message")
		if !ok {
			return choice, nil
		}
		msg := choice[at.Start:at.End]
		if earlier != "" {
			if msg, ok = prependText(msg, earlier); ok && len(earlierLogprobs) > 0 {
				if choice, err = prependLogprobs(choice, earlierLogprobs); err != nil {
					return nil, err
				}
				if cms, err = jsonspan.Members(choice); err != nil {
					return nil, err
				}
			}
		}
		if strip != nil {
			var finish string
			msg, finish, err = stripCalls(msg, strip, spent, jsonspan.Result(choice, cms, "finish_reason").Str)
			if err != nil {
				return nil, err
			}
			if finish != "" {
				if choice, err = jsonspan.Set(choice, "finish_reason", wire.Quote(finish)); err != nil {
					return nil, err
				}
			}
		}
		return jsonspan.Set(choice, "message", msg)
	})
}

// stripCalls removes the calls strip claims from a message's tool_calls.
// When none is left, tool_calls goes, finish is the finish_reason the
// answer gets ("" to keep finishReason), and a message left with no text
// says so (see wire.EmptyAnswerText).
func stripCalls(msg []byte, strip func(name string) bool, spent bool, finishReason string) (out []byte, finish string, err error) {
	ms, err := jsonspan.Members(msg)
	if err != nil {
		return nil, "", err
	}
	var calls []json.RawMessage
	_ = json.Unmarshal(jsonspan.Raw(msg, ms, "tool_calls"), &calls)
	kept := calls[:0]
	for _, c := range calls {
		var tc toolCall
		if json.Unmarshal(c, &tc) == nil && strip(tc.Function.Name) {
			continue
		}
		kept = append(kept, c)
	}
	if len(kept) > 0 {
		out, err = jsonspan.Set(msg, "tool_calls", wire.Marshal(kept))
		return out, "", err
	}
	if out, err = jsonspan.Remove(msg, "tool_calls"); err != nil {
		return nil, "", err
	}
	switch {
	case spent:
		finish, finishReason = "length", "length"
	case finishReason == "tool_calls":
		finish = "stop"
	}
	if len(calls) > 0 {
		cms, err := jsonspan.Members(out)
		if err != nil {
			return nil, "", err
		}
		if c := jsonspan.Result(out, cms, "content"); c.Type != gjson.String || c.Str == "" {
			if out, err = jsonspan.Set(out, "content", wire.Quote(wire.NoAnswerText(truncated(finishReason)))); err != nil {
				return nil, "", err
			}
		}
	}
	return out, finish, nil
}

// editChoice0 replaces choice 0 of a completion with what edit makes of it.
func editChoice0(raw []byte, edit func(choice []byte) ([]byte, error)) ([]byte, error) {
	return jsonspan.EditValue(raw, "choices", func(cs []byte) ([]byte, error) {
		els, err := jsonspan.Elements(cs)
		if err != nil || len(els) == 0 {
			return cs, err
		}
		choice, err := edit(cs[els[0].Start:els[0].End])
		if err != nil {
			return nil, err
		}
		return jsonspan.Splice(cs, els[0], choice), nil
	})
}

// HiddenPath returns where the completion a round that loops (ans) left
// stored upstream can be deleted once the request is over: with store,
// every answer is kept (listed with GET /v1/chat/completions, distillation
// data), the hidden rounds' too, which hold the catalog and skill bodies
// and which the client has no id for. "" without store, or without an id
// that is one path segment.
func (r *Request) HiddenPath(ans *wire.Answer) string {
	if !r.store || !wire.Segment(ans.ID) {
		return ""
	}
	return "/v1/chat/completions/" + ans.ID
}

// prependText puts text before the content of a message (a string, or
// none); content of another shape is left alone (ok false).
func prependText(msg []byte, text string) (out []byte, ok bool) {
	ms, err := jsonspan.Members(msg)
	if err != nil {
		return msg, false
	}
	c := jsonspan.Result(msg, ms, "content")
	switch c.Type {
	case gjson.String:
		text += c.Str
	case gjson.Null:
	default:
		return msg, false
	}
	out, err = jsonspan.Set(msg, "content", wire.Quote(text))
	if err != nil {
		return msg, false
	}
	return out, true
}

// prependLogprobs puts the looping rounds' content logprobs (earlier, in
// order) before those of a choice whose logprobs has a content array, so
// that they cover the text prependText joined.
func prependLogprobs(choice []byte, earlier [][]byte) ([]byte, error) {
	ms, err := jsonspan.Members(choice)
	if err != nil {
		return nil, err
	}
	lp := jsonspan.Raw(choice, ms, "logprobs")
	lms, err := jsonspan.Members(lp)
	if err != nil {
		// null or absent in the last round, where the earlier ones had
		// them (the client asked): theirs alone.
		return jsonspan.Set(choice, "logprobs", append(append([]byte(`{"content":`), jsonspan.Array(earlier)...), `,"refusal":null}`...))
	}
	cur, ok := jsonspan.Value(lms, "content")
	if !ok || lp[cur.Start] != '[' {
		// No content tokens in the last round (null beside a refusal's):
		// the earlier rounds' are the text's.
		lp, err = jsonspan.Set(lp, "content", jsonspan.Array(earlier))
		if err != nil {
			return nil, err
		}
		return jsonspan.Set(choice, "logprobs", lp)
	}
	all := slices.Clone(earlier)
	els, err := jsonspan.Elements(lp[cur.Start:cur.End])
	if err != nil {
		return nil, err
	}
	for _, e := range els {
		all = append(all, lp[cur.Start+e.Start:cur.Start+e.End])
	}
	lp, err = jsonspan.Set(lp, "content", jsonspan.Array(all))
	if err != nil {
		return nil, err
	}
	return jsonspan.Set(choice, "logprobs", lp)
}
