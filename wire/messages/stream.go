package messages

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
	"github.com/skillrouter/skillrouter/wire/internal/ownership"
)

// Stream translates the upstream's Messages events of one request, round
// after round, into one message for the client:
//
//   - message_start comes from the first round only;
//   - the content blocks of the proxy's tool_use calls are withheld (and
//     those of held client calls: see package ownership); thinking waits
//     for the next block the client is shown, in its round or a later one,
//     and is dropped when a later round opens with thinking of its own
//     (ownership.KeepsCarried); the others are relayed as they come, their
//     index renumbered so the client sees 0, 1, ... across rounds;
//   - the message_delta and message_stop of a round that loops are
//     withheld; the final message_delta carries the last round's usage
//     with every round in usage.iterations (ReportedUsage), and stop_reason
//     "end_turn" when the proxy's calls were the only ones and the round
//     limit dropped them.
type Stream struct {
	// failure is the message of the last upstream error met in the stream.
	failure  string
	mine     func(name string) bool
	req      *Request // the client's max_tokens (see maxTokens)
	next     int      // the client's next content block index
	usage    wire.Usage
	n        int // rounds started
	rd       *roundState
	out      []byte
	started  bool // message_start was relayed
	answered bool // a text or tool_use block was relayed (see answers)
}

// roundState is one upstream stream.
type roundState struct {
	ownership.Tracker
	blocks     map[int]*streamBlock
	id         string
	startUsage json.RawMessage
	container  string // the code execution container's id (message_start, message_delta)
	loop       bool
	truncated  bool  // message_delta's stop_reason says the round stopped short (see truncated)
	output     int64 // output tokens, from message_delta's usage
	deltaSeen  bool
	stopped    bool // message_stop or an error event was seen
	errored    bool // an error event ended the round: it never loops
}

// streamBlock is one content block of a round.
type streamBlock struct {
	*ownership.Item
	typ   string
	name  string
	id    string
	start []byte       // content_block_start's content_block
	input bytes.Buffer // input_json_delta fragments
	text  bytes.Buffer // text and thinking deltas
	sig   bytes.Buffer // signature_delta
	cites [][]byte     // citations_delta: a text block's citations
	// compaction_delta carries the compaction block's final value (the
	// start is a shell with null content), as the SDKs assign it: its
	// content and, when the delta has the key, encrypted_content (raw
	// JSON; empty until a delta came).
	compaction []byte
	encrypted  []byte
}

// NewStream starts translating a streamed message; mine reports the tools
// the proxy answers.
func (r *Request) NewStream(mine func(name string) bool) *Stream {
	return &Stream{mine: mine, req: r}
}

// Round starts the next upstream round; final: the round limit forbids
// another.
func (s *Stream) Round(final bool) {
	s.n++
	var carried []*ownership.Item
	if s.rd != nil {
		carried = s.rd.Waiting()
	}
	rd := &roundState{blocks: map[int]*streamBlock{}}
	rd.Tracker = ownership.Tracker{Round: ownership.Round{Mine: s.mine, Final: final}, Next: &s.next, Carried: carried,
		Emit: func(it *ownership.Item, data []byte) {
			data, _ = jsonspan.Set(data, "index", []byte(strconv.Itoa(it.Index)))
			s.emit(gjson.GetBytes(data, "type").String(), data)
		}}
	s.rd = rd
}

// Event translates one upstream event, appending what the client gets to out.
func (s *Stream) Event(ev *wire.Event, out []byte) ([]byte, bool) {
	s.out = out
	if !ev.HasData {
		s.out = append(s.out, ev.Raw...)
		return s.out, true
	}
	data := ev.Data
	typ := ev.Type()
	rd := s.rd
	switch typ {
	case "message_start":
		rd.id = gjson.GetBytes(data, "message.id").String()
		rd.startUsage = json.RawMessage(gjson.GetBytes(data, "message.usage").Raw)
		rd.container = gjson.GetBytes(data, "message.container.id").String()
		if !s.started {
			s.started = true
			s.emit(typ, data)
		}
	case "content_block_start":
		i := int(gjson.GetBytes(data, "index").Int())
		cb := gjson.GetBytes(data, "content_block")
		b := &streamBlock{typ: cb.Get("type").String(), name: cb.Get("name").String(), id: cb.Get("id").String(),
			start: []byte(cb.Raw)}
		// The deltas add to what the block started with (empty, as the
		// API sends it, but not necessarily so).
		b.text.WriteString(cb.Get("text").String())
		b.text.WriteString(cb.Get("thinking").String())
		b.sig.WriteString(cb.Get("signature").String())
		rd.blocks[i] = b
		var exhausted bool
		b.Item, exhausted = rd.Start(i, kind(b.typ), b.name, data)
		if exhausted {
			s.out = append(s.out, wire.ExhaustedComment...)
		}
	case "content_block_delta", "content_block_stop":
		b := rd.blocks[int(gjson.GetBytes(data, "index").Int())]
		if b == nil {
			s.emit(typ, data)
			break
		}
		if typ == "content_block_delta" {
			d := gjson.GetBytes(data, "delta")
			switch d.Get("type").String() {
			case "input_json_delta":
				b.input.WriteString(d.Get("partial_json").String())
			case "text_delta":
				b.text.WriteString(d.Get("text").String())
			case "thinking_delta":
				b.text.WriteString(d.Get("thinking").String())
			case "signature_delta":
				b.sig.WriteString(d.Get("signature").String())
			case "citations_delta":
				b.cites = append(b.cites, []byte(d.Get("citation").Raw))
			case "compaction_delta":
				b.compaction = []byte(d.Get("content").Raw)
				if e := d.Get("encrypted_content"); e.Exists() {
					b.encrypted = []byte(e.Raw)
				}
			}
		}
		rd.Event(b.Item, data)
	case "message_delta":
		s.messageDelta(typ, data)
	case "message_stop":
		rd.stopped = true
		if !rd.loop {
			s.emit(typ, data)
		}
		return s.out, false
	case "error":
		// The client's SDK raises it and stops reading: the round is over,
		// whatever calls it held (their input may be cut short anyway).
		rd.stopped, rd.errored, rd.loop = true, true, false
		s.failure = failureOf(data)
		s.emit(typ, data)
		return s.out, false
	default: // ping and events to come
		s.emit(typ, data)
	}
	return s.out, true
}

// messageDelta ends a round's content: withheld when the round loops, else
// passed on with the reported usage (and stop_reason fixed when the proxy's
// dropped calls were the only ones). A round that stopped short never
// loops.
func (s *Stream) messageDelta(typ string, data []byte) {
	rd := s.rd
	rd.deltaSeen = true
	s.usage.Add(roundUsage(rd.startUsage, json.RawMessage(gjson.GetBytes(data, "usage").Raw)))
	if id := gjson.GetBytes(data, "delta.container.id").String(); id != "" {
		rd.container = id
	}
	stop := gjson.GetBytes(data, "delta.stop_reason").String()
	rd.truncated = truncated(stop)
	rd.output = gjson.GetBytes(data, "usage.output_tokens").Int() // the round's, cumulative
	rd.loop = !rd.truncated && rd.Loops()
	if rd.loop && !s.req.maxTokens().CarriesAfter(rd.output) {
		// Too little of max_tokens is left for a follow-up (see
		// wire.ErrBudgetSpent): the message ends here, at max_tokens.
		rd.loop, rd.truncated, stop = false, true, "max_tokens"
		data = setStopReason(data, stop)
	}
	if rd.loop {
		return
	}
	rd.ShowPending()
	if rd.ProxyCalls > 0 && !s.answered {
		// Only the proxy's calls, now dropped (and thinking): the client's
		// message would hold no answer (see wire.NoAnswerText).
		i := strconv.Itoa(s.next)
		s.next++
		s.emit("content_block_start", []byte(`{"type":"content_block_start","index":`+i+`,"content_block":{"type":"text","text":""}}`))
		s.emit("content_block_delta", []byte(`{"type":"content_block_delta","index":`+i+`,"delta":{"type":"text_delta","text":`+string(wire.Quote(wire.NoAnswerText(rd.truncated)))+`}}`))
		s.emit("content_block_stop", []byte(`{"type":"content_block_stop","index":`+i+`}`))
	}
	patched := data
	if s.n > 1 && !s.usage.Empty() {
		patched, _ = jsonspan.Set(patched, "usage", ReportedUsage(&s.usage))
	}
	if rd.ProxyCalls > 0 && rd.ClientCalls() == 0 && stop == "tool_use" {
		patched = setStopReason(patched, "end_turn")
	}
	s.emit(typ, patched)
}

// roundUsage is one round's usage: message_start's, updated by
// message_delta's cumulative counts.
func roundUsage(start, delta json.RawMessage) json.RawMessage {
	var u map[string]json.RawMessage
	_ = json.Unmarshal(start, &u)
	var d map[string]json.RawMessage
	_ = json.Unmarshal(delta, &d)
	if u == nil {
		u = map[string]json.RawMessage{}
	}
	for k, v := range d {
		if !jsonspan.IsNull(v) {
			u[k] = v
		}
	}
	if len(u) == 0 {
		return nil
	}
	return wire.Marshal(u)
}

// TotalUsage is every round's usage summed.
func (s *Stream) TotalUsage() json.RawMessage { return s.usage.JSON() }

// ReportedUsage is the usage a message answered after tool rounds reports:
// the last round's (wire.Usage), with each round in "iterations" as the
// API lists the passes of one of its own multi-pass answers (compaction),
// {"type":"message", the round's counts}, so that what the request cost
// stays readable.
//
// One change to the last round's counts: cache_creation_input_tokens is
// every round's, and cache_read_input_tokens the last round's less what the
// earlier rounds wrote (the follow-up reads what round 1 cached). Their sum
// with input_tokens is still the last round's context, but a client that
// keeps message_start's count unless the final delta's is above zero
// (Claude Code) would otherwise add round 1's cache writes to it again.
func ReportedUsage(u *wire.Usage) json.RawMessage {
	last := u.Last()
	if last == nil {
		return nil
	}
	rounds := u.Rounds()
	iters := make([][]byte, 0, len(rounds))
	var written, lastWritten int64
	for i, r := range rounds {
		w := gjson.GetBytes(r, "cache_creation_input_tokens").Int()
		written += w
		if i == len(rounds)-1 {
			lastWritten = w
		}
		if own := gjson.GetBytes(r, "iterations"); own.IsArray() {
			// A round that was itself several passes (the API compacted
			// it): its passes, as the API listed them.
			own.ForEach(func(_, it gjson.Result) bool {
				iters = append(iters, []byte(it.Raw))
				return true
			})
			continue
		}
		iters = append(iters, iteration(r))
	}
	out := bytes.Clone(last)
	if written > lastWritten {
		read := max(gjson.GetBytes(last, "cache_read_input_tokens").Int()-(written-lastWritten), 0)
		out, _ = jsonspan.Set(out, "cache_creation_input_tokens", []byte(strconv.FormatInt(written, 10)))
		out, _ = jsonspan.Set(out, "cache_read_input_tokens", []byte(strconv.FormatInt(read, 10)))
		// Its breakdown by cache lifetime (ephemeral_5m_input_tokens,
		// _1h_) adds up the same way, or it contradicts the total
		// (Claude Code keeps both).
		gjson.GetBytes(last, "cache_creation").ForEach(func(k, v gjson.Result) bool {
			if v.Type != gjson.Number {
				return true
			}
			var sum int64
			for _, r := range rounds {
				sum += gjson.GetBytes(r, "cache_creation."+gjson.Escape(k.String())).Int()
			}
			out, _ = jsonspan.SetIn(out, "cache_creation", k.String(), []byte(strconv.FormatInt(sum, 10)))
			return true
		})
	}
	if withIters, err := jsonspan.Set(out, "iterations", jsonspan.Array(iters)); err == nil {
		out = withIters
	}
	return out
}

// iteration is a round's usage as an entry of usage.iterations: typed
// "message", with the counts the API's entries always have (0 for those an
// Anthropic-compatible upstream left out).
func iteration(r json.RawMessage) []byte {
	it, err := jsonspan.Set(bytes.Clone(r), "type", []byte(`"message"`))
	if err != nil {
		return []byte(`{"type":"message"}`)
	}
	for _, k := range []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} {
		if !gjson.GetBytes(it, k).Exists() {
			it, _ = jsonspan.Set(it, k, []byte("0"))
		}
	}
	return it
}

// setStopReason sets a message_delta's stop_reason.
func setStopReason(data []byte, reason string) []byte {
	if out, err := jsonspan.SetIn(data, "delta", "stop_reason", wire.Quote(reason)); err == nil {
		return out
	}
	return data
}

// End settles the round once its stream ended.
func (s *Stream) End(out []byte) ([]byte, wire.RoundEnd) {
	s.out = out
	rd := s.rd
	if !rd.deltaSeen && !rd.errored {
		rd.loop = rd.Loops() // the upstream ended without message_delta
	}
	end := wire.RoundEnd{Exhausted: rd.Final && rd.ProxyCalls > 0, Incomplete: !rd.stopped, Truncated: rd.truncated}
	if !rd.loop {
		end.Dropped = rd.ProxyCalls
		if !rd.errored { // the client's SDK stopped reading at the error event
			rd.ShowPending()
		}
		return s.out, end
	}
	ans := &wire.Answer{ID: rd.id, Container: rd.container, Output: rd.output}
	var content [][]byte
	for _, i := range rd.Order() {
		b := rd.blocks[i]
		if b.Owner == ownership.Held {
			continue
		}
		if b.Owner == ownership.Proxy && b.typ == "tool_use" {
			id := wire.CallID(b.id, "toolu", s.n-1, len(ans.Calls))
			input := json.RawMessage(b.input.Bytes())
			if len(bytes.TrimSpace(input)) == 0 {
				// No input_json_delta: the input is the one the block
				// started with, as the SDKs read it (the API starts with {}
				// and streams the input; a server that sends it whole in
				// content_block_start sends no deltas).
				input = json.RawMessage(gjson.GetBytes(b.start, "input").Raw)
			}
			if len(bytes.TrimSpace(input)) == 0 || !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			ans.Calls = append(ans.Calls, wire.ToolCall{ID: id, Name: b.name, Arguments: input})
			content = append(content, wire.Marshal(struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			}{"tool_use", id, b.name, input}))
			continue
		}
		if c := b.block(); c != nil {
			content = append(content, c)
		}
	}
	ans.Turn = append(append([]byte(`{"role":"assistant","content":`), jsonspan.Array(content)...), '}')
	end.Loop = ans
	return s.out, end
}

// block rebuilds a streamed content block for the follow-up request: text
// (with its citations) and thinking (with its signature) from their
// deltas, a compaction block with its content (the API drops what came
// before it: sent back empty, the round would lose the summary), anything
// else as it started.
func (b *streamBlock) block() []byte {
	switch b.typ {
	case "text":
		out := wire.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", b.text.String()})
		if len(b.cites) > 0 {
			out, _ = jsonspan.Set(out, "citations", jsonspan.Array(b.cites))
		}
		return out
	case "compaction":
		out := b.start
		if len(b.compaction) > 0 {
			out, _ = jsonspan.Set(out, "content", b.compaction)
		}
		if len(b.encrypted) > 0 {
			out, _ = jsonspan.Set(out, "encrypted_content", b.encrypted)
		}
		return out
	case "thinking":
		return wire.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{"thinking", b.text.String(), b.sig.String()})
	}
	// Server tool calls and the like: as they started, with the input
	// their input_json_deltas built.
	if input := bytes.TrimSpace(b.input.Bytes()); len(input) > 0 && json.Valid(input) {
		if out, err := jsonspan.Set(b.start, "input", input); err == nil {
			return out
		}
	}
	return b.start
}

// emit writes one event for the client.
func (s *Stream) emit(typ string, data []byte) {
	if typ == "content_block_start" && answers(gjson.GetBytes(data, "content_block.type").String()) {
		s.answered = true
	}
	s.out = wire.AppendEvent(s.out, typ, data)
}
