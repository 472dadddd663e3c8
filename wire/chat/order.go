package chat

import (
	"slices"
	"strings"

	"github.com/skillrouter/skillrouter/wire"
)

// By default each skill envelope is a message of its own after the last
// message (see Render). Some upstreams refuse that order: Mistral's API and
// every server that validates with mistral-common (vLLM serving Mistral and
// Devstral models) refuse a user, system or developer message after a tool
// message ("Unexpected role 'user' after role 'tool'"), which every step of
// an agent's tool loop would send, and strict chat templates (Mistral's,
// Gemma's, Llama 2's) refuse two user messages in a row ("Conversation
// roles must alternate user/assistant/user/assistant/..."). For those the
// envelopes' text goes inside the last user message instead: the merged
// placement.

// MergeEnvelopes makes Render put the envelopes inside the last user
// message, whatever the plan's EnvelopeRole: a string content gets "\n\n"
// and the envelopes joined by "\n\n", an array content one text part per
// envelope, every other byte as sent. A request without a user message
// gets them as messages of their own all the same: there is nothing to
// merge them into. Called before Render, for an upstream known to refuse
// the default placement.
func (r *Request) MergeEnvelopes() { r.merge = true }

// mergeInto is the message the envelopes of p go inside: the last user
// message when MergeEnvelopes was called and p has envelopes, else -1.
func (r *Request) mergeInto(p *wire.Plan) int {
	if !r.merge || len(p.Envelopes) == 0 {
		return -1
	}
	return r.lastUser()
}

// lastUser is the index of the last user message, -1 when there is none.
func (r *Request) lastUser() int {
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.msgs[i].role == "user" {
			return i
		}
	}
	return -1
}

// EnvelopeOrderRefused reports whether refusal, the body of an upstream's
// refusal (400, 422) of the request Render made, plausibly refuses the
// envelopes' messages for their place: Render put at least one in a
// message of its own, a user message exists to merge them into, the
// refusal names a role-order rule ("Unexpected role",
// "invalid_request_message_order": mistral-common; "roles must
// alternate": a chat template), as JSON or as text, not counting what it
// echoes of the request ("input", "input_value"), and the client's
// messages alone keep the rule it names (else the refusal is the client's
// request's own, and sending it again would only double it).
func (r *Request) EnvelopeOrderRefused(refusal []byte) bool {
	if !r.separate || r.lastUser() < 0 {
		return false
	}
	return refusalNames(refusal, namesRoleOrder) && r.keepsRoleOrder() ||
		refusalNames(refusal, namesAlternation) && r.alternates()
}

// WithEnvelopesMerged renders the request again with the envelopes inside
// the last user message (see MergeEnvelopes), asking for usage when the
// request still does (see WithoutUsageAsk): the first round's body for an
// upstream that refused the default placement. False when Render put no
// envelope in a message of its own, or there is no user message.
func (r *Request) WithEnvelopesMerged() ([]byte, bool) {
	if !r.separate || r.lastUser() < 0 {
		return nil, false
	}
	merge := r.merge
	r.merge = true
	out, separate, err := r.render(r.plan)
	if err == nil && r.askedUsage {
		out, err = withUsage(out)
	}
	if err != nil || separate {
		r.merge = merge
		return nil, false
	}
	r.separate = false
	return out, true
}

func namesRoleOrder(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "unexpected role") || strings.Contains(s, "invalid_request_message_order")
}

func namesAlternation(s string) bool {
	return strings.Contains(strings.ToLower(s), "roles must alternate")
}

// orderRole is a message's role as mistral-common orders them: developer
// is a system message, a legacy function result a tool message.
func orderRole(role string) string {
	switch role {
	case "developer":
		return "system"
	case "function":
		return "tool"
	}
	return role
}

// follows is mistral-common's order rule (validator.py,
// _validate_message_order): the roles that may come after each role.
var follows = map[string][]string{
	"system":    {"user", "assistant", "system"},
	"user":      {"assistant", "system", "user"},
	"assistant": {"assistant", "user", "tool"},
	"tool":      {"assistant", "tool"},
}

// keepsRoleOrder reports whether the client's messages, as sent, keep
// mistral-common's order rule.
func (r *Request) keepsRoleOrder() bool {
	for i := 1; i < len(r.msgs); i++ {
		prev, cur := orderRole(r.msgs[i-1].role), orderRole(r.msgs[i].role)
		if !slices.Contains(follows[prev], cur) {
			return false
		}
	}
	return true
}

// alternates reports whether the client's messages, as sent, alternate
// user and assistant as strict chat templates check it: system, developer
// and tool messages and assistant messages with tool calls left out (the
// templates that take tools leave them out; those that do not would refuse
// them anyway). Leaving out more than some templates do only means a
// refusal of the client's own alternation is sent again once.
func (r *Request) alternates() bool {
	prev := ""
	for _, m := range r.msgs {
		if m.role != "user" && (m.role != "assistant" || m.calls) {
			continue
		}
		if m.role == prev {
			return false
		}
		prev = m.role
	}
	return true
}
