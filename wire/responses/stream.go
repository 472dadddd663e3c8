package responses

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
	"github.com/skillrouter/skillrouter/wire/internal/ownership"
)

// Stream translates the upstream's Responses events of one request, round
// after round, into one response for the client:
//
//   - response.created and response.in_progress open the client's stream
//     once, when its first other event goes out, and name the round that
//     event came from: a hidden round's id is never announced, so a client
//     that keeps the id of response.created (LangChain, the AI SDK) chains
//     from the response that holds the answer, as one that keeps
//     response.completed's does; every event the client gets is
//     renumbered (sequence_number 0, 1, ... without gaps) and its
//     output_index mapped to the client's items;
//   - the events of the proxy's function_call items are withheld (and those
//     of held client calls and of reasoning before a proxy call: see
//     package ownership);
//     reasoning events wait until the next item decides their fate;
//   - the response.completed of a round that loops is withheld; the final
//     one carries every item the client was shown, across rounds, and the
//     last round's usage (see wire.Usage);
//   - the response object of every event that carries one echoes the
//     client's request, not the proxy's (see echo.go).
type Stream struct {
	// failure is the message of the last upstream error met in the stream.
	failure string
	mine    func(name string) bool
	req     *Request // store: false, and the echoes to restore
	seq     int      // the client's next sequence_number
	nextIdx int      // the client's next output_index
	visible [][]byte
	// roundVisible is where the current round's items start in visible.
	roundVisible int
	usage        wire.Usage
	n            int // rounds started
	rd           *roundState
	out          []byte
	// opening holds the events that open the stream (response.created,
	// .in_progress, .queued) until another event goes out (open): each
	// round's replace the last's, so they name the round the client's
	// first item comes from.
	opening      []pendingEvent
	openingRound int // the round opening holds events of
	opened       bool
	// announced is the response object of the last opening event, which a
	// failure of a later round ends with (see UpstreamErrorEvent).
	announced []byte
}

// pendingEvent is an event held back: its type and data.
type pendingEvent struct {
	typ  string
	data []byte
}

// roundState is one upstream stream.
type roundState struct {
	ownership.Tracker
	items     map[int]*streamItem
	id        string
	finished  bool // a terminal event was seen
	truncated bool // it was response.incomplete (see truncated)
	loop      bool
	output    int64 // output tokens, from the terminal event's usage
}

// streamItem is one output item of a round.
type streamItem struct {
	*ownership.Item
	done   []byte // the item from output_item.done
	id     string
	name   string
	callID string
	typ    string
	args   bytes.Buffer // arguments from the deltas, until done
}

// NewStream starts translating a streamed response; mine reports the tools
// the proxy answers.
func (r *Request) NewStream(mine func(name string) bool) *Stream {
	return &Stream{mine: mine, req: r}
}

// Round starts the next upstream round; final: the round limit forbids
// another.
func (s *Stream) Round(final bool) {
	s.n++
	s.roundVisible = len(s.visible)
	rd := &roundState{items: map[int]*streamItem{}}
	rd.Tracker = ownership.Tracker{Round: ownership.Round{Mine: s.mine, Final: final, NoHold: s.req.conversation != ""}, Next: &s.nextIdx,
		Emit: func(it *ownership.Item, data []byte) {
			typ := gjson.GetBytes(data, "type").String()
			if typ == "response.output_item.done" {
				s.visible = append(s.visible, []byte(gjson.GetBytes(data, "item").Raw))
			}
			s.emit(typ, data, it.Index)
		}}
	s.rd = rd
}

// Event translates one upstream event, appending what the client gets to out.
func (s *Stream) Event(ev *wire.Event, out []byte) ([]byte, bool) {
	s.out = out
	if !ev.HasData {
		s.out = append(s.out, ev.Raw...) // comments and keep-alives
		return s.out, true
	}
	data := ev.Data
	typ := ev.Type()
	rd := s.rd
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		if id := gjson.GetBytes(data, "response.id").String(); id != "" {
			rd.id = id
		}
		if !s.opened {
			if s.openingRound != s.n {
				// A new round's: none of the last one's may go with it.
				s.opening, s.openingRound = s.opening[:0], s.n
			}
			s.holdOpening(typ, s.patchResponse(data, nil))
		}
	case "response.output_item.added":
		i := int(gjson.GetBytes(data, "output_index").Int())
		item := gjson.GetBytes(data, "item")
		it := &streamItem{typ: item.Get("type").String(), id: item.Get("id").String(), name: item.Get("name").String(), callID: item.Get("call_id").String()}
		if it.callID == "" {
			it.callID = item.Get("id").String()
		}
		rd.items[i] = it
		var exhausted bool
		it.Item, exhausted = rd.Start(i, kind(it.typ), ownName(it.typ, it.name, item.Get("namespace").String()), data)
		if exhausted {
			s.out = append(s.out, wire.ExhaustedComment...)
		}
	case "response.completed":
		s.completed(typ, data)
		return s.out, !rd.finished
	case "response.failed", "response.incomplete":
		if typ == "response.failed" {
			s.failure = failureOf(typ, data)
		}
		s.completed(typ, data)
		return s.out, false
	case "error":
		// The stream's other terminal event: the response is over
		// upstream, failed, as after response.failed (see takeback.go).
		// A response.failed may follow it, and is passed on: Codex reads
		// a failure's code (context_length_exceeded) only from there.
		rd.finished = true
		s.req.failed = true
		s.failure = failureOf(typ, data)
		s.emit(typ, data, -1)
		return s.out, true
	default:
		oi := gjson.GetBytes(data, "output_index")
		it := rd.items[int(oi.Int())]
		if !oi.Exists() || it == nil { // not an item's, or an item never announced: pass it on
			s.emit(typ, data, -1)
			break
		}
		switch typ {
		case "response.function_call_arguments.delta":
			it.args.WriteString(gjson.GetBytes(data, "delta").String())
		case "response.output_item.done":
			it.done = append([]byte(nil), gjson.GetBytes(data, "item").Raw...)
			if id := gjson.GetBytes(it.done, "id").String(); id != "" {
				it.id = id
			}
		}
		rd.Event(it.Item, data)
	}
	return s.out, true
}

// TotalUsage is every round's usage summed.
func (s *Stream) TotalUsage() json.RawMessage { return s.usage.JSON() }

// completed ends a round at its terminal event (response.completed, and
// response.failed or .incomplete, which never loop): withheld when it
// loops, else the client's with every shown item (all rounds) and the
// last round's usage; a first round with nothing hidden goes as it came.
func (s *Stream) completed(typ string, data []byte) {
	rd := s.rd
	rd.finished = true
	resp := gjson.GetBytes(data, "response")
	if id := resp.Get("id").String(); id != "" {
		rd.id = id
	}
	if u := resp.Get("usage"); u.Exists() {
		s.usage.Add(json.RawMessage(u.Raw))
		rd.output = u.Get("output_tokens").Int()
	}
	rd.truncated = truncated(strings.TrimPrefix(typ, "response.")) // the terminal event names the status
	s.req.failed = typ == "response.failed"
	rd.loop = typ == "response.completed" && !rd.truncated && rd.Loops()
	spent := rd.loop && !s.req.fits(rd.output)
	if spent {
		// Too little of max_output_tokens is left for a follow-up (see
		// wire.ErrBudgetSpent): the response ends here, incomplete.
		rd.loop, rd.truncated, typ = false, true, "response.incomplete"
		data, _ = jsonspan.Set(data, "type", wire.Quote(typ))
	}
	if rd.loop {
		return
	}
	rd.ShowPending() // reasoning left pending goes with the answer
	if rd.ProxyCalls > 0 && !answered(s.visible) {
		s.emitNoAnswer(resp.Get("id").String(), rd.truncated)
	}
	s.emit(typ, s.patchResponse(data, func(resp []byte, ms []jsonspan.Member) []jsonspan.Edit {
		var edits []jsonspan.Edit
		if out, ok := jsonspan.Value(ms, "output"); ok && (s.n > 1 || rd.ProxyCalls > 0) {
			edits = append(edits, jsonspan.Edit{At: out, With: jsonspan.Array(s.finalOutput())})
		}
		if s.n > 1 && !s.usage.Empty() {
			// The last round's (wire.Usage): this event's, or the round's
			// before when it has none.
			edits = append(edits, jsonspan.SetEdit(resp, ms, "usage", s.usage.Last()))
		}
		if spent {
			edits = append(edits, spentEdits(resp, ms)...)
		}
		return edits
	}), -1)
}

// finalOutput is the output of the final response object: every item the
// client was shown. Under a JSON text.format, when the last round has a
// message, earlier rounds' messages (a preamble before a load_skill) are
// left out, as Request.Final leaves them out of a JSON answer: each is a
// whole JSON value, and the SDKs' parse helpers (responses.stream's
// output_parsed) read the first message of this output. Their deltas were
// streamed already; this list is the one place left to say which is the
// answer.
func (s *Stream) finalOutput() [][]byte {
	last := s.visible[min(s.roundVisible, len(s.visible)):]
	if !s.req.jsonFormat || !slices.ContainsFunc(last, func(it []byte) bool { return isMessage(it) }) {
		return s.visible
	}
	out := slices.DeleteFunc(slices.Clone(s.visible[:len(s.visible)-len(last)]), func(it []byte) bool { return isMessage(it) })
	return append(out, last...)
}

// patchResponse returns the data of an event that carries a response
// object with the object's echoes of the request made the client's (see
// echo.go) and the edits more returns (nil: none) made; the data as it
// came when nothing changes.
func (s *Stream) patchResponse(data []byte, more func(resp []byte, ms []jsonspan.Member) []jsonspan.Edit) []byte {
	if !s.req.Echoes() && more == nil {
		return data
	}
	top, err := jsonspan.Members(data)
	if err != nil {
		return data
	}
	at, ok := jsonspan.Value(top, "response")
	if !ok {
		return data
	}
	resp := data[at.Start:at.End]
	ms, err := jsonspan.Members(resp)
	if err != nil { // not an object
		return data
	}
	edits := s.req.echoEdits(ms)
	if more != nil {
		edits = append(edits, more(resp, ms)...)
	}
	if len(edits) == 0 {
		return data
	}
	return jsonspan.Splice(data, at, jsonspan.Apply(resp, edits...))
}

// End settles the round once its stream ended.
func (s *Stream) End(out []byte) ([]byte, wire.RoundEnd) {
	s.out = out
	rd := s.rd
	if !rd.finished {
		rd.loop = rd.Loops() // the upstream ended without response.completed
	}
	end := wire.RoundEnd{Exhausted: rd.Final && rd.ProxyCalls > 0, Incomplete: !rd.finished, Truncated: rd.truncated, ID: rd.id}
	if !rd.loop {
		end.Dropped = rd.ProxyCalls
		rd.ShowPending()
		return s.out, end
	}
	rd.HoldBack()
	ans := &wire.Answer{ID: rd.id, Shown: rd.Shown()}
	var turn [][]byte
	for _, i := range rd.Order() {
		it := rd.items[i]
		if s.req.conversation != "" {
			ans.OutputIDs = append(ans.OutputIDs, it.id)
		}
		if it.Owner == ownership.Held {
			continue
		}
		raw := it.done
		if it.typ == "function_call" && it.Owner == ownership.Proxy {
			args := gjson.GetBytes(raw, "arguments").String()
			if raw == nil {
				args = it.args.String()
				raw = wire.Marshal(struct {
					Type      string `json:"type"`
					CallID    string `json:"call_id"`
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				}{"function_call", "", it.name, args})
			}
			id := callID(item{CallID: it.callID}, s.n-1, len(ans.Calls))
			if gjson.GetBytes(raw, "call_id").String() == "" {
				raw, _ = jsonspan.Set(raw, "call_id", wire.Quote(id))
			}
			ans.Calls = append(ans.Calls, wire.ToolCall{ID: id, Name: it.name, Arguments: json.RawMessage(orEmptyObject(args))})
		}
		if raw != nil && s.req.resent(raw) {
			turn = append(turn, raw)
		}
	}
	ans.Turn = bytes.Join(turn, []byte{','})
	ans.Output = rd.output
	var done [][]byte
	for _, it := range rd.items {
		done = append(done, it.done)
	}
	ans.BuiltinCalls = countBuiltin(done)
	end.Loop = ans
	return s.out, end
}

// Announced is the response id the client's stream opened with, "" while
// the opening is held back.
func (s *Stream) Announced() string {
	if !s.opened {
		return ""
	}
	return gjson.GetBytes(s.announced, "id").String()
}

// holdOpening keeps an opening event until the stream opens: in place of
// an earlier round's of the same type, else after the others.
func (s *Stream) holdOpening(typ string, data []byte) {
	data = append([]byte(nil), data...)
	s.announced = append(s.announced[:0], gjson.GetBytes(data, "response").Raw...)
	for i := range s.opening {
		if s.opening[i].typ == typ {
			s.opening[i].data = data
			return
		}
	}
	s.opening = append(s.opening, pendingEvent{typ, data})
}

// open emits the opening events held back, once.
func (s *Stream) open() {
	if s.opened {
		return
	}
	s.opened = true
	for _, ev := range s.opening {
		s.emit(ev.typ, ev.data, -1)
	}
	s.opening = nil
}

// openedBytes renders the opening events held back, if any, for an event
// rendered outside out (ErrorEvent, failedEvent): an SDK's stream
// accumulator refuses any event before response.created.
func (s *Stream) openedBytes() []byte {
	saved := s.out
	s.out = nil
	s.open()
	b := s.out
	s.out = saved
	return b
}

// emit writes one event for the client, after the opening events if they
// are still held back: renumbered, and with output_index set to idx when
// idx >= 0.
func (s *Stream) emit(typ string, data []byte, idx int) {
	s.open()
	data, _ = jsonspan.Set(data, "sequence_number", []byte(strconv.Itoa(s.seq)))
	if idx >= 0 {
		data, _ = jsonspan.Set(data, "output_index", []byte(strconv.Itoa(idx)))
	}
	s.seq++
	s.out = wire.AppendEvent(s.out, typ, data)
}
