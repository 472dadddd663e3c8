package responses

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// budgets are the client's limits on the whole response (see
// wire.Budget), read from its body once:
//
//   - max_output_tokens, "an upper bound for the number of tokens that can
//     be generated for a response": the API refuses a value below 16
//     ("integer below minimum value. Expected a value >= 16"), so a
//     follow-up with less left is not sent: the response ends incomplete,
//     reason max_output_tokens;
//   - max_tool_calls, "the maximum number of total calls to built-in tools
//     that can be processed in a response": each round's built-in calls
//     (builtinCall) are taken from it. At the API's limit "further
//     attempts to call a tool by the model will be ignored" and the
//     response goes on, so a follow-up with none left goes on without the
//     built-in tools (and without max_tool_calls, whose least value is 1).
type budgets struct {
	output, toolCalls wire.Budget
	spent             bool // too little output was left for a follow-up (see Final)
}

func (r *Request) limits() *budgets {
	if r.budget == nil {
		r.budget = &budgets{
			output:    wire.NewBudget(jsonspan.Result(r.body, r.members, "max_output_tokens"), 16),
			toolCalls: wire.NewBudget(jsonspan.Result(r.body, r.members, "max_tool_calls"), 1),
		}
	}
	return r.budget
}

// builtinCalls are the output items of calls to built-in tools, which the
// upstream runs itself and max_tool_calls counts (the calls a client runs,
// function_call and the like, end the response: see outputTypes).
var builtinCalls = map[string]bool{
	"web_search_call": true, "file_search_call": true, "code_interpreter_call": true,
	"image_generation_call": true, "mcp_call": true, "tool_search_call": true,
}

// builtinTools are the tool types whose calls are builtinCalls
// (web_search, web_search_preview and their dated versions, ...).
var builtinTools = []string{"web_search", "file_search", "code_interpreter", "image_generation", "mcp", "tool_search"}

// countBuiltin counts the built-in tool calls among a round's output items.
func countBuiltin(items [][]byte) int64 {
	var n int64
	for _, it := range items {
		if builtinCalls[gjson.GetBytes(it, "type").Str] {
			n++
		}
	}
	return n
}

// withoutBuiltin returns the entries of the array tools that are not
// built-in tools, and whether any was.
func withoutBuiltin(tools gjson.Result) (kept [][]byte, removed bool) {
	all := tools.Array()
	for _, t := range all {
		if !builtinTool([]byte(t.Raw)) {
			kept = append(kept, []byte(t.Raw))
		}
	}
	return kept, len(kept) < len(all)
}

// builtinTool reports whether a tool definition is a built-in tool's.
func builtinTool(tool []byte) bool {
	typ := gjson.GetBytes(tool, "type").Str
	for _, b := range builtinTools {
		if typ == b || strings.HasPrefix(typ, b+"_") {
			return true
		}
	}
	return false
}

// Spent reports whether too little of max_output_tokens is left after ans
// for a follow-up; Final then ends the response incomplete.
func (r *Request) Spent(ans *wire.Answer) bool {
	b := r.limits()
	if !b.output.CarriesAfter(ans.Output) {
		b.spent = true
	}
	return b.spent
}

// carryBudgets takes what the round used (ans) and sets what is left in
// the follow-up body; wire.ErrBudgetSpent when the output left is too
// little for a follow-up.
func (r *Request) carryBudgets(body []byte, ans *wire.Answer) ([]byte, error) {
	b := r.limits()
	if !wire.SpendOutput(ans.Output, &b.output) {
		b.spent = true
		return nil, wire.ErrBudgetSpent
	}
	b.toolCalls.Spend(ans.BuiltinCalls)
	out, err := jsonspan.SetBudget(body, "max_output_tokens", b.output)
	if err != nil {
		return nil, err
	}
	if b.output.Set {
		r.rewrote("max_output_tokens")
	}
	if !b.toolCalls.Set {
		return out, nil
	}
	r.rewrote("max_tool_calls")
	if b.toolCalls.Carries() {
		return jsonspan.SetBudget(out, "max_tool_calls", b.toolCalls)
	}
	if out, err = jsonspan.Remove(out, "max_tool_calls"); err != nil {
		return nil, err
	}
	tools := gjson.GetBytes(out, "tools")
	if !tools.IsArray() {
		return out, nil
	}
	kept, removed := withoutBuiltin(tools)
	if !removed {
		return out, nil
	}
	r.rewrote("tools")
	if out, err = jsonspan.Set(out, "tools", jsonspan.Array(kept)); err != nil {
		return nil, err
	}
	return r.choiceWithout(out)
}

// choiceWithout keeps tool_choice valid once the built-in tools are gone:
// the API refuses a choice naming a tool the request does not offer. A
// choice forcing a built-in tool becomes "auto" (the API ignores further
// calls at the limit and the response goes on); allowed_tools loses its
// built-in entries, and becomes "none" when no other is left (the client
// allowed nothing else).
func (r *Request) choiceWithout(body []byte) ([]byte, error) {
	tc := gjson.GetBytes(body, "tool_choice")
	if !tc.IsObject() {
		return body, nil
	}
	var choice []byte
	switch {
	case tc.Get("type").Str == "allowed_tools":
		kept, removed := withoutBuiltin(tc.Get("tools"))
		if !removed {
			return body, nil
		}
		choice = []byte(`"none"`)
		if len(kept) > 0 {
			c, err := jsonspan.Set([]byte(tc.Raw), "tools", jsonspan.Array(kept))
			if err != nil {
				return nil, err
			}
			choice = c
		}
	case builtinTool([]byte(tc.Raw)):
		choice = []byte(`"auto"`)
	default:
		return body, nil
	}
	r.rewrote("tool_choice")
	return jsonspan.Set(body, "tool_choice", choice)
}

// spent reports whether the response must end at its output-token limit
// (see carryBudgets).
func (r *Request) spent() bool { return r.budget != nil && r.budget.spent }

// fits reports whether a round of a stream that used output tokens could
// loop: a follow-up could carry what is left (see wire.Budget).
func (r *Request) fits(output int64) bool { return r.limits().output.CarriesAfter(output) }

// Used notes on ans what the non-streaming response raw (its round) used of
// the client's limits: output tokens and built-in tool calls.
func Used(ans *wire.Answer, raw []byte) {
	res := gjson.GetManyBytes(raw, "usage.output_tokens", "output")
	ans.Output = res[0].Int()
	var items [][]byte
	for _, it := range res[1].Array() {
		items = append(items, []byte(it.Raw))
	}
	ans.BuiltinCalls = countBuiltin(items)
}

// incomplete is how the API ends a response at max_output_tokens.
var (
	incompleteStatus  = []byte(`"incomplete"`)
	incompleteDetails = []byte(`{"reason":"max_output_tokens"}`)
)

// spentEdits end a response object (members ms) at max_output_tokens.
func spentEdits(resp []byte, ms []jsonspan.Member) []jsonspan.Edit {
	return []jsonspan.Edit{jsonspan.SetEdit(resp, ms, "status", incompleteStatus),
		jsonspan.SetEdit(resp, ms, "incomplete_details", incompleteDetails)}
}
