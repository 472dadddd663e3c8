package messages

import (
	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

// maxTokens is the budget of the client's max_tokens over the whole
// message (see wire.Budget), read from the client's body once. The API
// requires max_tokens of at least 1, and with extended thinking
// (thinking.type "enabled") a budget_tokens below it: a follow-up that
// cannot keep budget_tokens < max_tokens is not sent (the proxy does not
// lower the client's thinking budget).
func (r *Request) maxTokens() *wire.Budget {
	if r.budget == nil {
		min := int64(1)
		if t := gjson.GetBytes(r.body, "thinking"); t.Get("type").Str == "enabled" {
			min = max(min, t.Get("budget_tokens").Int()+1)
		}
		b := wire.NewBudget(gjson.GetBytes(r.body, "max_tokens"), min)
		r.budget = &b
	}
	return r.budget
}

// Spent reports whether too little of max_tokens is left after ans for a
// follow-up; Final then ends the message at max_tokens.
func (r *Request) Spent(ans *wire.Answer) bool {
	if !r.maxTokens().CarriesAfter(ans.Output) {
		r.spent = true
	}
	return r.spent
}
