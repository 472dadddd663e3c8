package wire

import (
	"encoding/json"
	"errors"
	"math"

	"github.com/tidwall/gjson"
)

// Budget is what is left of one of the client's limits on a whole answer
// across the proxy's hidden rounds: an output-token cap (Chat
// max_completion_tokens and max_tokens, Responses max_output_tokens,
// Messages max_tokens) or Responses max_tool_calls. The client asked for
// one answer within the limit; each hidden round is a request of its own
// upstream, so a follow-up sent with the whole limit again could generate
// (and bill) up to rounds+1 times it, and the answer would report usage
// above the limit it echoes. The rule, the same for every API: a follow-up
// carries what the earlier rounds left (Left), and when what is left is
// below the least value the API accepts (Min) the follow-up is not sent.
// A round that reports no usage takes nothing: the proxy cannot know what
// it used, and refusing to go on would end answers from upstreams that
// never report usage.
type Budget struct {
	Set  bool  // the client set the limit
	Left int64 // what is left of it
	Min  int64 // the least value a request may carry
}

// NewBudget is the budget of a limit the client sent as v (a JSON number;
// absent, null or below 1 — llama.cpp's and LM Studio's -1 — no limit)
// that a request must carry as at least min.
func NewBudget(v gjson.Result, min int64) Budget {
	if v.Type != gjson.Number || v.Int() < 1 {
		return Budget{}
	}
	return Budget{Set: true, Left: v.Int(), Min: min}
}

// CheckCap validates a client's output-token cap (Chat max_tokens and
// max_completion_tokens, Responses max_output_tokens, Messages
// max_tokens): absent or null, or a whole number, at least least. A cap
// no server takes is refused here: a lenient one (a local server) would
// otherwise run the tool loop on it. Chat's least is none: llama.cpp and
// LM Studio take -1 for "no limit", and clients made for them send it.
func CheckCap(param string, v gjson.Result, least int64) *Error {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return nil
	case v.Type != gjson.Number:
		return TypeError(param, "an integer", []byte(v.Raw))
	case v.Num != math.Trunc(v.Num):
		return BadRequest("invalid_type", param, "'%s' must be an integer, got %s", param, Clip(v.Raw))
	case v.Num < float64(least):
		return BadRequest("integer_below_min_value", param, "'%s' must be at least %d, got %s", param, least, Clip(v.Raw))
	}
	return nil
}

// Spend takes what a round used (0 when it reported nothing, see Budget).
func (b *Budget) Spend(used int64) {
	if b.Set && used > 0 {
		b.Left -= used
	}
}

// Carries reports whether a follow-up can go with what is left: no limit,
// or at least Min.
func (b *Budget) Carries() bool { return !b.Set || b.Left >= b.Min }

// ErrBudgetSpent is FollowUp's answer when what is left of the client's
// output-token cap is too little for a valid follow-up: the round's answer
// is the client's, ended as the API ends an answer at its output-token
// limit (Chat finish_reason "length", Responses status "incomplete" with
// reason "max_output_tokens", Messages stop_reason "max_tokens"), with the
// proxy's calls removed (see Answer.Truncated).
var ErrBudgetSpent = errors.New("the client's output-token limit is spent")

// UsageCount is the count named key in a round's usage object (Chat
// completion_tokens, Responses and Messages output_tokens); 0 when the
// round reported none.
func UsageCount(usage json.RawMessage, key string) int64 {
	if len(usage) == 0 {
		return 0
	}
	return gjson.GetBytes(usage, key).Int()
}

// SpendOutput takes the output tokens a round used from each of the
// answer's output-token budgets and reports whether a follow-up can carry
// them all (see Budget).
func SpendOutput(used int64, bs ...*Budget) bool {
	ok := true
	for _, b := range bs {
		b.Spend(used)
		ok = ok && b.Carries()
	}
	return ok
}

// CarriesAfter reports whether a follow-up could still carry the budget
// once used is spent, without spending it: a stream decides at a round's
// last event whether the round loops (see Spend for what FollowUp takes).
func (b Budget) CarriesAfter(used int64) bool {
	b.Spend(used)
	return b.Carries()
}
