package chat

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// Stream translates the upstream's chat.completion.chunk events of one
// request, round after round, into what the client sees: every event is
// passed on as it arrives except the deltas of the proxy's own tool calls
// and the finish, usage and [DONE] events of rounds that loop.
//
//   - Tool-call deltas arrive split across chunks (index, id and name first,
//     then argument fragments). They are accumulated by index; once a call's
//     name is known it is either the proxy's (withheld) or the client's
//     (relayed from then on, with its index renumbered so the client sees
//     0, 1, ... without gaps).
//   - A client call that starts after a proxy call in the same turn is held
//     back and dropped when the turn loops. If a client call has already
//     been relayed when a proxy call starts ("late" proxy call), the turn
//     belongs to the client: the proxy's calls in it are dropped.
//   - In a turn that loops, the finish_reason "tool_calls" chunk, the usage
//     chunk and data: [DONE] are suppressed; the next round's events follow
//     with their completion id replaced by the first round's, so the client
//     reads one completion. With stream_options.include_usage the final
//     usage chunk carries the last round's usage (see wire.Usage); usage
//     the proxy asked for itself (see Request.Render) is read and never
//     relayed.
type Stream struct {
	// failure is the message of the last upstream error met in the stream.
	failure   string
	mine      func(name string) bool // the proxy's tools
	req       *Request               // the client's output-token caps (see Request.fits)
	n         int                    // the answers asked for (n)
	textShown bool                   // some round's text went to the client
	roleSent  bool                   // a delta with a role went to the client
	// relayFinished holds the answers (choice indexes) finished in a
	// stream relayed without the translator (see Relayed).
	relayFinished map[int]bool
	id            string     // the first round's completion id, shown for every round
	usage         wire.Usage // the earlier rounds' usage
	round         int
	st            *roundState
	done          bool // the round's data: [DONE] was seen
	out           []byte
}

// NewStream starts translating a streamed answer; mine reports the tools
// the proxy answers (nil: none; events are then relayed as they are).
func (r *Request) NewStream(mine func(name string) bool) *Stream {
	return &Stream{mine: mine, req: r, round: -1, n: max(r.view.Choices, 1)}
}

// Round starts upstream round n (0, 1, ...); final: the round limit forbids
// another.
func (s *Stream) Round(final bool) {
	if s.st != nil {
		s.usage.Add(s.st.usage)
	}
	s.round++
	s.st = &roundState{calls: map[int]*callState{}, final: final}
	s.done = false
}

// Event translates one upstream event, appending what the client gets to
// out. After data: [DONE] nothing more is read of the round.
func (s *Stream) Event(ev *wire.Event, out []byte) ([]byte, bool) {
	s.out = out
	if !ev.HasData {
		// Comments (keep-alives) and other field-only events pass as they are.
		s.out = append(s.out, ev.Raw...)
		return s.out, true
	}
	if isDone(ev.Data) {
		s.done = true
		return s.out, false
	}
	s.relayChunk(s.st, ev, s.round)
	// An error chunk ends the answer, as the other APIs' error events do:
	// nothing after it is read (the SDKs raise it and hang up).
	return s.out, s.failure == ""
}

// End settles the round once its stream ended, appending the [DONE] the
// client gets when the round is the final answer.
func (s *Stream) End(out []byte) ([]byte, wire.RoundEnd) {
	s.out = out
	st := s.st
	var end wire.RoundEnd
	if !st.finished {
		end.Incomplete = !s.done
		s.decide(st) // the upstream ended without a finish_reason
	}
	end.Dropped, end.Exhausted, end.Truncated = st.dropped, st.exhausted, st.truncated
	if st.loop {
		end.Loop = st.answer(s.round)
		end.Loop.ID = st.id
		end.Loop.Output = wire.UsageCount(st.usage, "completion_tokens")
		return s.out, end
	}
	if s.done {
		s.out = append(s.out, "data: [DONE]\n\n"...)
	}
	return s.out, end
}

// decide settles a round at its finish: loop when the proxy has calls to
// answer and is still allowed to; otherwise (the round limit, a client call
// relayed first, an answer that stopped short) the round is the client's
// answer.
func (s *Stream) decide(st *roundState) {
	if st.finished { // decided already, or ended by an error chunk
		return
	}
	st.finished = true
	if s.mine == nil || st.proxyCalls == 0 {
		return
	}
	if st.late || st.final || st.truncated {
		st.exhausted = st.final
		st.dropped = st.proxyCalls
		return
	}
	st.loop = true
}

// answer is the loop's Answer: the proxy's calls in index order and the
// round's text and reasoning (see textDelta).
func (st *roundState) answer(round int) *wire.Answer {
	idx := append([]int(nil), st.order...)
	sort.Ints(idx)
	var calls []toolCall
	for _, i := range idx {
		cs := st.calls[i]
		if cs.owner != ownerProxy {
			continue
		}
		var tc toolCall
		tc.ID, tc.Type, tc.Extra = callID(cs.id, round, len(calls)), cs.typ, cs.extra
		tc.Function.Name, tc.Function.Arguments = cs.name, cs.args.String()
		calls = append(calls, tc)
	}
	var text, reasoningContent, reasoning strings.Builder
	var details reasoningDetails
	for _, p := range st.content {
		d := p.text
		if p.raw != nil {
			var ch chunk
			if json.Unmarshal(p.raw, &ch) != nil || len(ch.Choices) == 0 {
				continue
			}
			d = ch.Choices[0].Delta.textDelta
		}
		for _, f := range []struct {
			b *strings.Builder
			s *string
		}{{&text, d.Content}, {&reasoningContent, d.ReasoningContent}, {&reasoning, d.Reasoning}} {
			if f.s != nil {
				f.b.WriteString(*f.s)
			}
		}
		if d.ReasoningDetails != nil {
			details.add(d.ReasoningDetails)
		}
	}
	msg := struct {
		Role             string          `json:"role"`
		Content          json.RawMessage `json:"content"`
		ReasoningContent string          `json:"reasoning_content,omitempty"`
		Reasoning        string          `json:"reasoning,omitempty"`
		ReasoningDetails json.RawMessage `json:"reasoning_details,omitempty"`
	}{"assistant", json.RawMessage("null"), reasoningContent.String(), reasoning.String(), details.JSON()}
	if text.Len() > 0 {
		msg.Content = wire.Quote(text.String())
	}
	return answerOf(wire.Marshal(msg), calls)
}

// chunk is what the relay reads of a chat.completion.chunk.
type chunk struct {
	ID      string          `json:"id"`
	Choices []choiceChunk   `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// choiceChunk is one choice of a chunk.
type choiceChunk struct {
	Index int `json:"index"`
	Delta struct {
		textDelta
		ToolCalls []toolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// textDelta is the text of a delta that a round's assistant message keeps
// for the follow-up: the content and the model's reasoning, which
// DeepSeek's thinking mode requires back beside its tool calls
// (reasoning_content; vLLM's reasoning parsers give it or reasoning), and
// OpenRouter's structured reasoning (reasoning_details, see
// reasoningDetails), which it requires back to continue reasoning.
type textDelta struct {
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	ReasoningDetails json.RawMessage `json:"reasoning_details"`
}

// some reports whether the delta has any text or reasoning detail.
func (d *textDelta) some() bool {
	for _, s := range []*string{d.Content, d.ReasoningContent, d.Reasoning} {
		if s != nil && *s != "" {
			return true
		}
	}
	rd := bytes.TrimSpace(d.ReasoningDetails)
	return len(rd) > 0 && !jsonspan.IsNull(rd) && !bytes.Equal(rd, []byte("[]"))
}

// finished reports whether the choice ends with this chunk.
func (c *choiceChunk) finished() bool { return c.FinishReason != nil && *c.FinishReason != "" }

// errored reports whether the chunk is the upstream's error report.
func (ch *chunk) errored() bool { return len(ch.Error) > 0 && !jsonspan.IsNull(ch.Error) }

// toolCallDelta is one fragment of a streamed tool call. The first fragment
// of a call carries index, id, type and function.name; later ones carry
// pieces of function.arguments under the same index. Some upstreams omit
// the index (Ollama's OpenAI endpoint did, Gemini's still does), each call
// whole in one delta: nil then, never read as 0 (see callKey). What the
// client gets always has one.
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	// Custom is a custom (freeform) tool's call, GPT-5's: its name and
	// pieces of its input under "custom", no "function" member.
	Custom *customDelta `json:"custom,omitempty"`
	Extra  extra        `json:"-"` // members not read here, relayed (see extra)
}

// customDelta is a fragment of a custom tool's call: the name first, then
// pieces of the input.
type customDelta struct {
	Name  string `json:"name,omitempty"`
	Input string `json:"input"`
}

// name is the tool name the fragment brings, if any.
func (d *toolCallDelta) name() string {
	if d.Function.Name == "" && d.Custom != nil {
		return d.Custom.Name
	}
	return d.Function.Name
}

func (d *toolCallDelta) UnmarshalJSON(b []byte) error {
	type plain toolCallDelta
	if err := json.Unmarshal(b, (*plain)(d)); err != nil {
		return err
	}
	var err error
	d.Extra, err = readExtra(b, "index", "id", "type", "function", "custom")
	return err
}

func (d toolCallDelta) MarshalJSON() ([]byte, error) {
	type plain toolCallDelta
	if d.Custom != nil && d.Function.Name == "" && d.Function.Arguments == "" {
		// A custom tool's call has no function member to add.
		b, err := json.Marshal(struct {
			Index  *int         `json:"index"`
			ID     string       `json:"id,omitempty"`
			Type   string       `json:"type,omitempty"`
			Custom *customDelta `json:"custom"`
		}{d.Index, d.ID, d.Type, d.Custom})
		return d.Extra.appendTo(b), err
	}
	b, err := json.Marshal(plain(d))
	return d.Extra.appendTo(b), err
}

type callOwner int

const (
	ownerUnknown    callOwner = iota // name not seen yet
	ownerProxy                       // answered server-side: withheld
	ownerClient                      // relayed to the client as it streams
	ownerClientHeld                  // client's, but a proxy call came first: dropped if the round loops
)

type callState struct {
	index     int
	id, typ   string
	extra     extra // see extra: sent back with the call
	name      string
	args      strings.Builder // the arguments, or a custom tool's input
	custom    bool            // a custom tool's call: never the proxy's, whose tools are functions
	owner     callOwner
	clientIdx int // index shown to the client
}

// roundState tracks one upstream stream.
type roundState struct {
	calls         map[int]*callState
	order         []int
	proxyCalls    int
	clientShown   int  // client calls relayed so far (next client index)
	late          bool // a proxy call came after client calls were relayed
	final         bool // the round limit forbids another round
	loop          bool // decided at finish_reason
	finished      bool // finish_reason seen and handled
	exhaustedSaid bool
	exhausted     bool          // calls dropped at the round limit
	truncated     bool          // the finish_reason says the round stopped short (see truncated)
	dropped       int           // proxy calls dropped
	id            string        // this round's completion id
	content       []contentPart // the round's text, decoded only if the round loops
	// The round's usage as last reported: an upstream may report it in
	// every chunk, cumulatively (vLLM's continuous_usage_stats).
	usage json.RawMessage
}

// contentPart is text of a round: decoded already, or the raw chunk it is in.
type contentPart struct {
	raw  []byte
	text textDelta
}

// relayChunk handles one data event of round.
func (s *Stream) relayChunk(st *roundState, ev *wire.Event, round int) {
	// Usage the client did not ask for (see Request.Render) is the proxy's
	// alone: taken off every chunk before anything else reads it.
	var hiddenUsage json.RawMessage
	if s.req.askedUsage {
		ev, hiddenUsage = withoutUsage(ev)
		if hiddenUsage != nil {
			st.usage = hiddenUsage
		}
	}
	// The client's first delta carries the role (the SDKs' stream helpers
	// need it), once: a later round opens with its own role delta (Ollama's
	// has one in every chunk), dropped once the client has had one; a chunk
	// withheld for the proxy's call still gives the client its first.
	var stripRole, keepRole bool
	if round > 0 || !s.roleSent {
		role := hasRole(ev.Data)
		stripRole, keepRole = role && s.roleSent, role && !s.roleSent
	}
	plain := hiddenUsage == nil && plainDelta(ev.Data) // a chunk that had usage is read whole
	if stripRole && plain {
		s.withoutRole(st, ev, round)
		return
	}
	// Fast path, most of any stream: a text delta with no tool call, finish,
	// usage or error. Relayed without decoding; its text is decoded only if
	// the round turns out to loop.
	if st.id != "" && plain {
		if !s.textShown && gjson.GetBytes(ev.Data, "choices.0.delta.content").String() != "" {
			s.textShown = true
		}
		st.content = append(st.content, contentPart{raw: append([]byte(nil), ev.Data...)})
		s.writeRaw(ev, st.id, round)
		return
	}
	var ch chunk
	if json.Unmarshal(ev.Data, &ch) != nil {
		s.out = append(s.out, ev.Raw...) // not ours to judge
		return
	}
	if st.id == "" {
		st.id = ch.ID
	}
	if round == 0 && s.id == "" {
		s.id = ch.ID
	}
	usage, showUsage := ch.Usage, hiddenUsage == nil
	if !showUsage {
		usage = hiddenUsage
	}
	hasUsage := len(usage) > 0 && !jsonspan.IsNull(usage)
	if hasUsage {
		st.usage = usage
	}
	if ch.errored() {
		// The upstream's error ends the answer (the SDKs raise it): the
		// round is settled as the client's, never looped on (even when its
		// finish came first), and not cut.
		s.failure = errorMessage(ch.Error)
		st.finished = true
		if st.loop {
			st.loop, st.dropped = false, st.proxyCalls
		}
		s.out = append(s.out, ev.Raw...)
		return
	}
	if s.mine == nil {
		s.out = append(s.out, ev.Raw...)
		return
	}
	if len(ch.Choices) == 0 {
		// The usage chunk (stream_options.include_usage) or an unknown kind.
		if st.loop && hasUsage && !s.req.fits(wire.UsageCount(usage, "completion_tokens")) {
			// Too little of the client's cap is left for a follow-up (see
			// wire.ErrBudgetSpent): the answer ends here, as at its
			// output-token limit. The finish withheld for the loop goes
			// out now, "length".
			st.loop, st.truncated, st.dropped = false, true, st.proxyCalls
			s.finishSpent(ch, round, false)
		}
		if st.loop || hasUsage && !showUsage {
			return
		}
		if round > 0 && !hasUsage && gjson.GetBytes(ev.Data, "prompt_filter_results").Exists() {
			// Azure opens every answer with its prompt filter's verdict on
			// the request; the client has the first round's, and a
			// follow-up's would land in the middle of its text.
			return
		}
		if hasUsage && round > 0 {
			s.writePatched(ev.Data, round, func(top map[string]json.RawMessage) { top["usage"] = s.reportedUsage() })
			return
		}
		s.writeRaw(ev, ch.ID, round)
		return
	}

	c0 := &ch.Choices[0]
	var relayed []toolCallDelta
	toolsTouched := len(c0.Delta.ToolCalls) > 0
	for _, d := range c0.Delta.ToolCalls {
		if out, ok := s.trackToolDelta(st, d); ok {
			relayed = append(relayed, out)
		}
	}
	if c0.Delta.some() {
		st.content = append(st.content, contentPart{text: c0.Delta.textDelta})
	}
	if c0.Delta.Content != nil && *c0.Delta.Content != "" {
		s.textShown = true
	}
	finishing := c0.finished()
	if finishing {
		st.truncated = truncated(*c0.FinishReason)
		s.decide(st)
		if st.loop && hasUsage && !s.req.fits(wire.UsageCount(usage, "completion_tokens")) {
			// Usage on the finish chunk itself (Mistral, Gemini's endpoint):
			// the cap is spent as in the usage-chunk case above. A looping
			// round's finish chunk carries only the proxy's calls.
			st.loop, st.truncated, st.dropped = false, true, st.proxyCalls
			s.finishSpent(ch, round, showUsage)
			return
		}
	}
	if st.loop && finishing {
		// The round's finish (and anything else in this chunk) is the proxy's business,
		// except text the model produced: that is relayed like every content delta.
		if (c0.Delta.Content == nil || *c0.Delta.Content == "") && !keepRole || len(ch.Choices) > 1 {
			return
		}
		s.writePatched(ev.Data, round, func(top map[string]json.RawMessage) {
			patchChoice0(top, func(choice, delta map[string]json.RawMessage) {
				delete(delta, "tool_calls")
				if stripRole {
					delete(delta, "role")
				}
				choice["finish_reason"] = json.RawMessage("null")
			})
			delete(top, "usage")
		})
		return
	}
	// A finish that does not loop, in a round whose only calls were the
	// proxy's, now dropped: "tool_calls" becomes "stop" (other reasons,
	// "length" among them, stay), and an answer without text gets one (see
	// wire.EmptyAnswerText).
	emptied := finishing && st.proxyCalls > 0 && st.clientShown == 0
	stripped := emptied && *c0.FinishReason == "tool_calls"
	filled := emptied && !s.textShown
	patchUsage := hasUsage && showUsage && round > 0
	if !toolsTouched && !stripped && !filled && !patchUsage && !stripRole {
		s.writeRaw(ev, ch.ID, round)
		return
	}
	if toolsTouched && len(relayed) == 0 && !finishing && !patchUsage && !keepRole && !hasOtherDelta(ev.Data) {
		return // a fragment of the proxy's own (or a held) call: withheld
	}
	s.writePatched(ev.Data, round, func(top map[string]json.RawMessage) {
		patchChoice0(top, func(choice, delta map[string]json.RawMessage) {
			if stripRole {
				delete(delta, "role")
			}
			if toolsTouched {
				if len(relayed) == 0 {
					delete(delta, "tool_calls")
				} else {
					delta["tool_calls"] = wire.Marshal(relayed)
				}
			}
			if stripped {
				choice["finish_reason"] = json.RawMessage(`"stop"`)
			}
			if filled {
				delta["content"] = wire.Quote(wire.NoAnswerText(st.truncated))
				s.textShown = true
			}
		})
		if patchUsage {
			top["usage"] = s.reportedUsage()
		}
	})
}

// TotalUsage is every round's usage summed, the current one's as last
// reported.
func (s *Stream) TotalUsage() json.RawMessage {
	var t wire.Usage
	t.Add(s.usage.JSON())
	t.Add(s.st.usage)
	return t.JSON()
}

// reportedUsage is the usage the client is told (see wire.Usage): the
// current round's as last reported, else the last earlier round's.
func (s *Stream) reportedUsage() json.RawMessage {
	if len(s.st.usage) > 0 && !jsonspan.IsNull(s.st.usage) {
		return s.st.usage
	}
	return s.usage.Last()
}

// callKey is the key of the call a tool-call fragment belongs to: its
// index, or without one (see toolCallDelta) a new call when it brings a new
// id, or a name without an id, and else the last call (an argument piece).
func (st *roundState) callKey(d toolCallDelta) int {
	if d.Index != nil {
		return *d.Index
	}
	if len(st.order) == 0 {
		return 0
	}
	last := st.order[len(st.order)-1]
	if d.ID != "" && d.ID != st.calls[last].id || d.ID == "" && d.name() != "" {
		return slices.Max(st.order) + 1 // past any index the upstream gave
	}
	return last
}

// trackToolDelta accumulates a tool-call fragment by call (see callKey) and
// decides, once the call's name is known, whose it is. It returns the delta
// to relay, if any, with the client's index.
func (s *Stream) trackToolDelta(st *roundState, d toolCallDelta) (toolCallDelta, bool) {
	key := st.callKey(d)
	cs := st.calls[key]
	if cs == nil {
		cs = &callState{index: key}
		st.calls[key] = cs
		st.order = append(st.order, key)
	}
	if d.ID != "" {
		cs.id = d.ID
	}
	if d.Type != "" {
		cs.typ = d.Type
	}
	d.Extra.merge(&cs.extra)
	if n := d.name(); n != "" { // as the SDKs do: a repeated name replaces, never appends
		cs.name = n
	}
	cs.args.WriteString(d.Function.Arguments)
	if d.Custom != nil {
		cs.custom = true
		cs.args.WriteString(d.Custom.Input)
	}
	if cs.owner == ownerUnknown {
		if cs.name == "" {
			return d, false // wait for the name
		}
		if !cs.custom && s.mine(cs.name) {
			cs.owner = ownerProxy
			st.proxyCalls++
			if st.clientShown > 0 && !st.final {
				st.late = true
			}
			if st.final && !st.exhaustedSaid {
				// Headers are long gone: say it now as an SSE comment (ignored by
				// SDKs, visible to curl), and in the trailer at the end.
				st.exhaustedSaid = true
				s.out = append(s.out, wire.ExhaustedComment...)
			}
			return d, false
		}
		if st.proxyCalls > 0 && !st.final && !st.late {
			cs.owner = ownerClientHeld
			return d, false
		}
		cs.owner = ownerClient
		cs.clientIdx = st.clientShown
		st.clientShown++
		// First relayed fragment: everything accumulated so far.
		out := toolCallDelta{Index: &cs.clientIdx, ID: cs.id, Type: cs.typ, Extra: cs.extra}
		if cs.custom {
			if out.Type == "" {
				out.Type = "custom"
			}
			out.Custom = &customDelta{Name: cs.name, Input: cs.args.String()}
			return out, true
		}
		if out.Type == "" {
			out.Type = "function"
		}
		out.Function.Name = cs.name
		out.Function.Arguments = cs.args.String()
		return out, true
	}
	if cs.owner == ownerClient {
		d.Index = &cs.clientIdx
		return d, true
	}
	return d, false
}

// plainDelta reports, without decoding, whether a chunk can be relayed as
// is: no tool_calls, no non-null finish_reason, usage or error, one choice
// at most. A false answer only costs a full decode. Escaped quotes inside
// strings (\"tool_calls\") cannot match the quoted key searched for.
func plainDelta(data []byte) bool {
	if bytes.Contains(data, []byte(`"tool_calls"`)) || bytes.Contains(data, []byte(`"error"`)) ||
		bytes.Contains(data, []byte(`"function_call"`)) || bytes.Count(data, []byte(`"index"`)) > 1 {
		return false
	}
	return nullOrAbsent(data, `"finish_reason"`) && nullOrAbsent(data, `"usage"`)
}

// nullOrAbsent reports whether key is missing or every occurrence is followed by null.
func nullOrAbsent(data []byte, key string) bool {
	for rest := data; ; {
		i := bytes.Index(rest, []byte(key))
		if i < 0 {
			return true
		}
		rest = rest[i+len(key):]
		v := bytes.TrimLeft(rest, " \t\r\n")
		if len(v) == 0 || v[0] != ':' {
			return false
		}
		if !bytes.HasPrefix(bytes.TrimLeft(v[1:], " \t\r\n"), []byte("null")) {
			return false
		}
	}
}

// writeRaw relays an event as received, with the completion id of later
// rounds replaced by the first round's so the client sees one completion.
func (s *Stream) writeRaw(ev *wire.Event, id string, round int) {
	if round > 0 && id != "" && s.id != "" && id != s.id {
		s.writeData(bytes.Replace(ev.Data, []byte(strconv.Quote(id)), []byte(strconv.Quote(s.id)), 1))
		return
	}
	s.noteRole(ev.Data)
	s.out = append(s.out, ev.Raw...)
}

// writePatched re-encodes a chunk after fn edits its top-level fields.
func (s *Stream) writePatched(data []byte, round int, fn func(top map[string]json.RawMessage)) {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return
	}
	fn(top)
	if round > 0 && s.id != "" {
		top["id"], _ = json.Marshal(s.id)
	}
	s.writeData(wire.Marshal(top))
}

// patchChoice0 lets fn edit choices[0] and its delta in place.
func patchChoice0(top map[string]json.RawMessage, fn func(choice, delta map[string]json.RawMessage)) {
	var choices []map[string]json.RawMessage
	if json.Unmarshal(top["choices"], &choices) != nil || len(choices) == 0 {
		return
	}
	var delta map[string]json.RawMessage
	if json.Unmarshal(choices[0]["delta"], &delta) != nil || delta == nil {
		delta = map[string]json.RawMessage{}
	}
	fn(choices[0], delta)
	choices[0]["delta"] = wire.Marshal(delta)
	top["choices"] = wire.Marshal(choices)
}

// hasOtherDelta reports whether a chunk's first choice carries anything
// besides tool calls that the client should see (text, refusal, reasoning).
func hasOtherDelta(data []byte) bool {
	var ch struct {
		Choices []struct {
			Delta map[string]json.RawMessage `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &ch) != nil || len(ch.Choices) == 0 {
		return false
	}
	for k, v := range ch.Choices[0].Delta {
		if k == "tool_calls" || k == "role" {
			continue
		}
		s := bytes.TrimSpace(v)
		if len(s) > 0 && !bytes.Equal(s, []byte("null")) && !bytes.Equal(s, []byte(`""`)) {
			return true
		}
	}
	return len(ch.Choices) > 1
}

// withoutRole relays a later round's plain chunk without its role (the
// client has had one): dropped when nothing else is in it (the usual
// opening chunk, content "").
func (s *Stream) withoutRole(st *roundState, ev *wire.Event, round int) {
	var ch chunk
	if json.Unmarshal(ev.Data, &ch) != nil || len(ch.Choices) != 1 {
		s.out = append(s.out, ev.Raw...)
		return
	}
	if st.id == "" {
		st.id = ch.ID
	}
	d := ch.Choices[0].Delta.textDelta
	if !d.some() && !hasOtherDelta(ev.Data) {
		return
	}
	if d.some() {
		st.content = append(st.content, contentPart{text: d})
	}
	if d.Content != nil && *d.Content != "" {
		s.textShown = true
	}
	s.writePatched(ev.Data, round, func(top map[string]json.RawMessage) {
		patchChoice0(top, func(_, delta map[string]json.RawMessage) { delete(delta, "role") })
	})
}

// withoutUsage returns ev without a top-level usage member, and the usage
// it had (nil when none, or null).
func withoutUsage(ev *wire.Event) (*wire.Event, json.RawMessage) {
	if !bytes.Contains(ev.Data, []byte(`"usage"`)) {
		return ev, nil
	}
	ms, err := jsonspan.Members(ev.Data)
	if err != nil {
		return ev, nil
	}
	at, ok := jsonspan.Value(ms, "usage")
	if !ok {
		return ev, nil
	}
	var usage json.RawMessage
	if u := ev.Data[at.Start:at.End]; !jsonspan.IsNull(u) {
		usage = append(json.RawMessage(nil), u...)
	}
	data := jsonspan.Apply(ev.Data, jsonspan.Removals(ms, "usage")...)
	return &wire.Event{Raw: wire.AppendData(nil, data), Data: data, HasData: true}, usage
}

// writeData appends one "data:" event.
func (s *Stream) writeData(data []byte) {
	s.noteRole(data)
	s.out = wire.AppendData(s.out, data)
}

// noteRole records that the client got a role delta, if data (a chunk it
// gets) carries one.
func (s *Stream) noteRole(data []byte) {
	if !s.roleSent && hasRole(data) {
		s.roleSent = true
	}
}

// hasRole reports whether a chunk's first choice has a role delta. Escaped
// quotes inside strings cannot match the quoted key searched for first.
func hasRole(data []byte) bool {
	if !bytes.Contains(data, []byte(`"role"`)) {
		return false
	}
	r := gjson.GetBytes(data, "choices.0.delta.role")
	return r.Exists() && r.Type != gjson.Null
}

// isDone reports whether an event's data is the stream's end marker.
func isDone(data []byte) bool { return bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) }

// finishSpent writes the finish of a round whose loop the client's output
// cap ended (see relayChunk): finish_reason "length", and the text an
// answer left with none gets (wire.NoAnswerText).
func (s *Stream) finishSpent(usage chunk, round int, withUsage bool) {
	delta := map[string]json.RawMessage{}
	if s.st.clientShown == 0 && !s.textShown {
		delta["content"] = wire.Quote(wire.NoAnswerText(true))
		s.textShown = true
	}
	id := s.id
	if id == "" {
		id = usage.ID
	}
	out := map[string]any{"id": id, "object": "chat.completion.chunk",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": "length"}}}
	if withUsage { // the upstream put it on its finish chunk: so does the proxy
		out["usage"] = s.reportedUsage()
	}
	s.writeData(wire.Marshal(out))
}
