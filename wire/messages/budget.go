package messages

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// maxTokens is the budget of the client's max_tokens over the whole
// message (see wire.Budget), read from the client's body once. The API
// requires max_tokens of at least 1, and with extended thinking
// (thinking.type "enabled") a budget_tokens of at least 1,024 and (unless
// interleaved thinking is on) below max_tokens: a follow-up keeps
// budget_tokens below what is left by lowering it when it must
// (thinkingBudget), so it is not sent only when less than 1,025 tokens are
// left. Claude Code sends budget_tokens one below max_tokens: a floor of
// budget_tokens+1 would have stopped every hidden round.
func (r *Request) maxTokens() *wire.Budget {
	if r.budget == nil {
		min := int64(1)
		if r.thinking() > 0 && !r.interleaved {
			min = minThinkingBudget + 1
		}
		b := wire.NewBudget(jsonspan.Result(r.body, r.members, "max_tokens"), min)
		r.budget = &b
	}
	return r.budget
}

// minThinkingBudget is the least thinking.budget_tokens the API takes.
const minThinkingBudget = 1024

// thinking is the client's thinking.budget_tokens with extended thinking
// enabled; 0 without.
func (r *Request) thinking() int64 {
	t := jsonspan.Raw(r.body, r.members, "thinking")
	ms, err := jsonspan.Members(t)
	if err != nil {
		return 0 // absent, null or not an object
	}
	if typ, _ := jsonspan.StringField(t, ms, "type"); typ != "enabled" {
		return 0
	}
	return jsonspan.Result(t, ms, "budget_tokens").Int()
}

// thinkingBudget lowers the follow-up's thinking.budget_tokens below what
// is left of max_tokens (left) when it is not: the budget counts over the
// whole turn anyway, and the API refuses budget_tokens >= max_tokens,
// unless interleaved thinking is on: the budget then stays as the client
// sent it, since a change of thinking parameters invalidates the message
// cache, and every hidden round would write the conversation to the
// cache again (1.25 times the input price) instead of reading it (0.1).
func (r *Request) thinkingBudget(body []byte, left int64) ([]byte, error) {
	if b := r.thinking(); b == 0 || b < left || r.interleaved {
		return body, nil
	}
	return jsonspan.SetIn(body, "thinking", "budget_tokens", []byte(strconv.FormatInt(max(left-1, minThinkingBudget), 10)))
}

// Spent reports whether too little of max_tokens is left after ans for a
// follow-up; Final then ends the message at max_tokens.
func (r *Request) Spent(ans *wire.Answer) bool {
	if !r.maxTokens().CarriesAfter(ans.Output) {
		r.spent = true
	}
	return r.spent
}

// countUses adds the server tool calls of a looping round's assistant turn
// (its server_tool_use blocks, by tool name) to r.uses: a server tool's
// max_uses bounds its calls over the whole message, as the API counts
// them within one request.
func (r *Request) countUses(turn []byte) {
	for _, b := range gjson.GetBytes(turn, "content").Array() {
		if b.Get("type").Str != "server_tool_use" {
			continue
		}
		if r.uses == nil {
			r.uses = map[string]int64{}
		}
		r.uses[b.Get("name").Str]++
	}
}

// withUses returns the client's tools with each max_uses lowered by the
// calls earlier rounds made of that tool; a tool with none left is nil
// (not sent, as Responses leaves built-in tools out at max_tool_calls).
// A tool_choice cannot force it: a forced server tool gets no proxy tools,
// so no round loops.
func (r *Request) withUses() [][]byte {
	if len(r.uses) == 0 {
		return r.clientTools
	}
	tools := make([][]byte, len(r.clientTools))
	for i, t := range r.clientTools {
		tools[i] = t
		res := gjson.GetManyBytes(t, "name", "max_uses")
		used := r.uses[res[0].Str]
		if used == 0 || res[1].Type != gjson.Number {
			continue
		}
		left := res[1].Int() - used
		if left < 1 {
			tools[i] = nil
			continue
		}
		if out, err := jsonspan.Set(t, "max_uses", strconv.AppendInt(nil, left, 10)); err == nil {
			tools[i] = out
		}
	}
	return tools
}

// SetBetas tells the request which beta features the client's
// anthropic-beta headers turn on (each header a comma-separated list);
// call it before anything reads the budget. Interleaved thinking lets
// thinking.budget_tokens exceed max_tokens (the budget covers the whole
// turn), so hidden rounds leave it alone (see thinkingBudget) and run down
// to the last token of max_tokens. Claude Code sends it on every request.
func (r *Request) SetBetas(headers []string) {
	for _, h := range headers {
		for b := range strings.SplitSeq(h, ",") {
			if strings.HasPrefix(strings.TrimSpace(b), "interleaved-thinking-") {
				r.interleaved = true
			}
		}
	}
}
