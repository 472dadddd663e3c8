package responses

// State stored upstream. A Responses request can continue a response the
// API kept (previous_response_id) or a conversation (the Conversations API's
// "conversation" parameter). Two things follow for the proxy's tool loop:
//
//   - in a conversation, each response's input and output items are added
//     to it once the response completes, so a hidden round's follow-up
//     sends only what is new: the outputs of the round's calls. A client
//     call cannot be held back for a later round there (the conversation
//     would keep it unanswered), so a round with client calls is the
//     client's and the proxy's calls in it are dropped
//     (ownership.Round.NoHold);
//   - the proxy's calls removed from an answer the client got (a client
//     call was streamed before them, or the round limit was reached) stay
//     in the stored response or conversation without outputs, and the API
//     refuses to continue it ("No tool output found for function call").
//     When the upstream refuses a request that continues stored state, the
//     proxy reads that state (StatePath) and answers those calls in the
//     request's input (AnswerDropped), once. Nothing is kept in the proxy,
//     so this works across replicas and restarts, and costs nothing on
//     requests the upstream accepts.

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// notRunOutput is the output given to a call the proxy dropped from a turn
// that stored state still holds: the model reads it as that call's result.
const notRunOutput = "[skillrouter: this call was not run. Call the tool again if it is still needed.]"

// stateItems is how many of a conversation's latest items the proxy reads
// to find its unanswered calls: they are at most a turn or two old.
const stateItems = 100

// conversationID returns the id of the "conversation" parameter: a string,
// or an object with an "id"; "" when absent or null.
func conversationID(body []byte, ms []jsonspan.Member) (string, error) {
	s, ok := jsonspan.Value(ms, "conversation")
	if !ok {
		return "", nil
	}
	v := gjson.ParseBytes(body[s.Start:s.End])
	switch {
	case v.Type == gjson.Null:
		return "", nil
	case v.Type == gjson.String:
		return v.Str, nil
	case v.IsObject() && v.Get("id").Type == gjson.String:
		return v.Get("id").Str, nil
	}
	return "", wire.TypeError("conversation", "a string or an object with an id", body[s.Start:s.End])
}

// StateRefs names the state stored upstream that the request continues
// (the previous response, the conversation; "" when none) and whether its
// own answer is stored (store is not false).
func (r *Request) StateRefs() (previous, conversation string, stored bool) {
	return r.previousID, r.conversation, !r.unstored
}

// WithPrevious returns the request's body continuing from response id
// instead of the one it names (see the proxy's answer memory); the body
// is otherwise the client's.
func (r *Request) WithPrevious(id string) ([]byte, error) {
	return jsonspan.Set(r.body, "previous_response_id", wire.Quote(id))
}

// StatePath returns the path (under the client's /v1, not escaped) and
// query at which the state the request continues can be read: the previous
// response, or the latest items of the conversation, newest first. path is
// "" when the request continues no stored state, or names it with an id
// that is not one path segment.
func (r *Request) StatePath() (path, query string) {
	switch {
	case r.previousID != "" && wire.Segment(r.previousID):
		return "/v1/responses/" + r.previousID, ""
	case r.conversation != "" && wire.Segment(r.conversation):
		return "/v1/conversations/" + r.conversation + "/items", "order=desc&limit=" + strconv.Itoa(stateItems)
	}
	return "", ""
}

// AnswerDropped returns body with an output put first in its input for
// each of the proxy's calls (mine) that state holds and neither state nor
// body answers; state is what StatePath reads: a response object (its
// "output") or a page of conversation items (its "data"). n is how many
// calls were answered; with none, body is returned unchanged.
func (r *Request) AnswerDropped(body, state []byte, mine func(name string) bool) (out []byte, n int, err error) {
	st := gjson.ParseBytes(state)
	items := st.Get("output")
	if !items.IsArray() {
		items = st.Get("data")
	}
	answered := map[string]bool{}
	var calls []string
	note := func(it gjson.Result) {
		typ := it.Get("type").Str
		id := it.Get("call_id").Str
		switch {
		case id == "":
		case mine(ownName(typ, it.Get("name").Str, it.Get("namespace").Str)):
			calls = append(calls, id)
		case isOutput(typ):
			answered[id] = true
		}
	}
	items.ForEach(func(_, it gjson.Result) bool { note(it); return true })
	gjson.GetBytes(body, "input").ForEach(func(_, it gjson.Result) bool { note(it); return true })
	var outputs [][]byte
	seen := map[string]bool{}
	for _, id := range calls {
		if answered[id] || seen[id] {
			continue
		}
		seen[id] = true
		outputs = append(outputs, functionOutput(id, notRunOutput))
	}
	if len(outputs) == 0 {
		return body, 0, nil
	}
	out, err = prependInput(body, outputs)
	return out, len(outputs), err
}

// outputTypes maps each kind of call a client runs to the type of the item
// that answers it. Only function calls can be the proxy's.
var outputTypes = map[string]string{
	"function_call":    "function_call_output",
	"custom_tool_call": "custom_tool_call_output",
	"computer_call":    "computer_call_output",
	"local_shell_call": "local_shell_call_output",
	"shell_call":       "shell_call_output",
	"apply_patch_call": "apply_patch_call_output",
}

// isOutput reports whether an item type is the output of a call.
func isOutput(typ string) bool {
	for _, out := range outputTypes {
		if typ == out {
			return true
		}
	}
	return false
}

// functionOutput renders the function_call_output item answering a call.
func functionOutput(callID, text string) []byte {
	return wire.Marshal(struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}{"function_call_output", callID, text})
}

// prependInput puts items first in body's input; a string input becomes
// the user message it stands for, after them.
func prependInput(body []byte, items [][]byte) ([]byte, error) {
	ms, err := jsonspan.Members(body)
	if err != nil {
		return nil, err
	}
	in, ok := jsonspan.Value(ms, "input")
	if !ok || jsonspan.IsNull(body[in.Start:in.End]) {
		return jsonspan.Set(body, "input", jsonspan.Array(items))
	}
	raw := body[in.Start:in.End]
	if raw[0] == '"' {
		return jsonspan.Splice(body, in, jsonspan.Array(append(items, userMessage(raw)))), nil
	}
	els, err := jsonspan.Elements(raw)
	if err != nil {
		return nil, err
	}
	for _, e := range els {
		items = append(items, raw[e.Start:e.End])
	}
	return jsonspan.Splice(body, in, jsonspan.Array(items)), nil
}

// userMessage is the message item a string input stands for.
func userMessage(quoted []byte) []byte {
	return append(append([]byte(`{"role":"user","content":`), quoted...), '}')
}

// HiddenPath returns the path (under the client's /v1, not escaped) at
// which the response a round that loops (ans) left stored upstream can be
// deleted once the request is over, or "" when it must stay or there is
// none. Nothing of the request's later rounds chains from it: each
// follow-up keeps the client's previous_response_id and carries the
// round's items in its input (see FollowUp). It stays when it was not
// stored (store: false); in a conversation, which holds the round's items
// (the follow-up sends only the outputs) and shows them to the client
// anyway; when the client got items of it (ans.Shown: a preamble, reasoning,
// a built-in call), which a client resends by id next turn (the Agents
// SDK, store left true) and the API looks up in the stored response; and
// when the follow-up refers to one of its items by id alone: a reasoning
// item without encrypted_content, whose content the API reads from the
// stored response, for the follow-up and for the chain of every later
// turn.
func (r *Request) HiddenPath(ans *wire.Answer) string {
	if r.unstored || r.conversation != "" || ans.Shown || ans.ID == "" || !wire.Segment(ans.ID) {
		return ""
	}
	byID := false
	gjson.ParseBytes(append(append([]byte{'['}, ans.Turn...), ']')).ForEach(func(_, it gjson.Result) bool {
		byID = it.Get("type").Str == "reasoning" && it.Get("encrypted_content").Str == ""
		return !byID
	})
	if byID {
		return ""
	}
	return "/v1/responses/" + ans.ID
}
