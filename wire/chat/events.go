package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

var errNotCompletion = errors.New("chat: not a chat.completion with choices")

// messageStreamed are the members of an answer's message that Events gives
// their own chunks; any other goes in one chunk of its own, as it is.
var messageStreamed = []string{"role", "content", "refusal", "tool_calls", "function_call", "reasoning_content", "reasoning"}

// Events renders a chat.completion, a whole answer, as the
// chat.completion.chunk events of the stream that carries it, ending with
// data: [DONE]. Each choice in turn gets a chunk with the role; one with
// each reasoning text (reasoning_content, reasoning), the message's other
// members (annotations, audio, ...), the content, the refusal and a legacy
// function_call; one per tool call, whole (index, id, type, function and
// any extra member); and the finish (finish_reason, logprobs and the
// choice's other members; "stop" when the answer has none). Then, with
// includeUsage (stream_options.include_usage), the usage chunk with no
// choices. Every chunk has the completion's top-level members (id,
// created, model, system_fingerprint, ...), object chat.completion.chunk.
// An SDK that accumulates the chunks gets the completion back.
//
// The proxy streams with it an upstream's JSON answer to a streamed
// request (an upstream that ignores stream:true), through the same
// translator as a stream.
func Events(completion []byte, includeUsage bool) ([]byte, error) {
	if !json.Valid(completion) {
		return nil, errNotCompletion
	}
	ms, err := jsonspan.Members(completion)
	if err != nil {
		return nil, errNotCompletion
	}
	cs, ok := jsonspan.Value(ms, "choices")
	if !ok {
		return nil, errNotCompletion
	}
	choices, err := jsonspan.Elements(completion[cs.Start:cs.End])
	if err != nil || len(choices) == 0 {
		return nil, errNotCompletion
	}
	base, err := jsonspan.Set(jsonspan.Apply(completion, jsonspan.Removals(ms, "choices", "usage")...), "object", []byte(`"chat.completion.chunk"`))
	if err != nil {
		return nil, errNotCompletion
	}
	var out []byte
	emit := func(choices []byte) error {
		chunk, err := jsonspan.Set(base, "choices", choices)
		if err != nil {
			return errNotCompletion
		}
		out = wire.AppendEvent(out, "", chunk)
		return nil
	}
	list := completion[cs.Start:cs.End]
	for i, c := range choices {
		if err := choiceEvents(list[c.Start:c.End], i, emit); err != nil {
			return nil, err
		}
	}
	if u, ok := jsonspan.Value(ms, "usage"); ok && includeUsage && !jsonspan.IsNull(completion[u.Start:u.End]) {
		chunk, err := jsonspan.Set(base, "choices", []byte("[]"))
		if err == nil {
			chunk, err = jsonspan.Set(chunk, "usage", completion[u.Start:u.End])
		}
		if err != nil {
			return nil, errNotCompletion
		}
		out = wire.AppendEvent(out, "", chunk)
	}
	return append(out, "data: [DONE]\n\n"...), nil
}

// emptyContainer reports whether v is [] or {} (whitespace aside): a
// message's empty annotations get no chunk, as a stream never sends one
// (and a hidden round's would reach the client).
func emptyContainer(v []byte) bool {
	v = bytes.TrimSpace(v)
	if len(v) < 2 || v[0] != '[' && v[0] != '{' {
		return false
	}
	return len(bytes.TrimSpace(v[1:len(v)-1])) == 0
}

// choiceEvents emits the chunks of choice number i (see Events).
func choiceEvents(choice []byte, i int, emit func(choices []byte) error) error {
	cms, err := jsonspan.Members(choice)
	if err != nil {
		return errNotCompletion
	}
	idx := []byte(strconv.Itoa(i))
	if v, ok := jsonspan.Value(cms, "index"); ok {
		idx = choice[v.Start:v.End]
	}
	delta := func(d []byte) error {
		return emit(slices.Concat([]byte(`[{"index":`), idx, []byte(`,"delta":`), d, []byte(`,"finish_reason":null}]`)))
	}
	var msg []byte
	var mms []jsonspan.Member
	if v, ok := jsonspan.Value(cms, "message"); ok && choice[v.Start] == '{' {
		msg = choice[v.Start:v.End]
		if mms, err = jsonspan.Members(msg); err != nil {
			return errNotCompletion
		}
	}
	// member is the value of a member of the message, unless absent, null or "".
	member := func(key string) ([]byte, bool) {
		v, ok := jsonspan.Value(mms, key)
		if !ok {
			return nil, false
		}
		raw := msg[v.Start:v.End]
		return raw, !jsonspan.IsNull(raw) && string(raw) != `""`
	}
	role := []byte(`"assistant"`)
	if r, ok := member("role"); ok {
		role = r
	}
	one := func(key string, value []byte) []byte {
		return slices.Concat([]byte("{"), wire.Quote(key), []byte(":"), value, []byte("}"))
	}
	if err := delta(one("role", role)); err != nil {
		return err
	}
	for _, key := range []string{"reasoning_content", "reasoning"} {
		if v, ok := member(key); ok {
			if err := delta(one(key, v)); err != nil {
				return err
			}
		}
	}
	var others [][]byte
	for _, m := range mms {
		if v := msg[m.Value.Start:m.Value.End]; !slices.Contains(messageStreamed, m.Key) && !jsonspan.IsNull(v) && !emptyContainer(v) {
			others = append(others, slices.Concat(wire.Quote(m.Key), []byte(":"), v))
		}
	}
	if len(others) > 0 {
		if err := delta(slices.Concat([]byte("{"), bytes.Join(others, []byte(",")), []byte("}"))); err != nil {
			return err
		}
	}
	for _, key := range []string{"content", "refusal", "function_call"} {
		if v, ok := member(key); ok {
			if err := delta(one(key, v)); err != nil {
				return err
			}
		}
	}
	if v, ok := member("tool_calls"); ok {
		calls, err := jsonspan.Elements(v)
		if err != nil {
			return errNotCompletion
		}
		for j, c := range calls {
			call, err := jsonspan.Set(v[c.Start:c.End], "index", []byte(strconv.Itoa(j)))
			if err != nil {
				return errNotCompletion
			}
			if err := delta(one("tool_calls", jsonspan.Array([][]byte{call}))); err != nil {
				return err
			}
		}
	}
	// The finish: the choice's members but its index and message.
	finish := slices.Concat([]byte(`{"index":`), idx, []byte(`,"delta":{}`))
	reason := false
	for _, m := range cms {
		if m.Key == "index" || m.Key == "message" {
			continue
		}
		v := choice[m.Value.Start:m.Value.End]
		if m.Key == "finish_reason" {
			if jsonspan.IsNull(v) || string(v) == `""` {
				continue
			}
			reason = true
		}
		finish = slices.Concat(finish, []byte(","), wire.Quote(m.Key), []byte(":"), v)
	}
	if !reason { // delivered whole, the answer is finished
		finish = append(finish, `,"finish_reason":"stop"`...)
	}
	return emit(slices.Concat([]byte("["), finish, []byte("}]")))
}
