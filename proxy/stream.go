package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// streamChat serves a chat request with stream:true. See the package doc for
// the protocol; in short: every event is written and flushed as it arrives,
// except the deltas of the proxy's own tool calls and the finish, usage and
// [DONE] events of rounds that loop.
func (s *Server) streamChat(c echo.Context, info *reqInfo, rt *routed) {
	r := c.Request()
	ctx := r.Context()
	w := c.Response()
	sr := &streamRelay{
		s: s, w: w, rc: http.NewResponseController(w), info: info, sess: rt.session,
	}
	body := rt.body
	for round := 0; ; round++ {
		resp, elapsed, err := s.send(ctx, r, bytes.NewReader(body), int64(len(body)), true)
		s.metrics.upstreamLatency.WithLabelValues(info.path).Observe(elapsed.Seconds())
		if err != nil {
			f := classify(ctx, err)
			if !sr.started {
				s.fail(w, info, f)
			} else {
				s.metrics.upstreamErrors.WithLabelValues(f.code).Inc()
				info.err = f.logText()
				sr.streamError(f.code, f.msg)
			}
			return
		}
		info.upstreamStatus = resp.StatusCode
		if !isEventStream(resp) {
			if !sr.started {
				// An error, or an upstream that ignored stream:true: relay as is.
				s.relayResponse(w, info, resp)
				return
			}
			sr.upstreamErrorEvent(resp)
			return
		}
		if !sr.started {
			sr.start(resp.Header)
		}
		if sr.sess == nil {
			// Nothing to answer server-side: relay bytes as they come.
			err := relayBody(w, resp.Body)
			resp.Body.Close()
			if err != nil && ctx.Err() == nil {
				info.err = "relay: " + err.Error()
			}
			if ctx.Err() != nil {
				info.status = statusClientClosed
			}
			return
		}
		out, err := sr.relayRound(resp.Body, round, round >= s.cfg.MaxToolRounds)
		for i := range out.calls {
			out.calls[i] = withCallID(out.calls[i], round, i)
		}
		resp.Body.Close()
		if err != nil {
			// The client stopped reading (its context may not be done yet):
			// not an upstream failure.
			if ctx.Err() != nil || (sr.writeErr != nil && err == sr.writeErr) {
				info.status = statusClientClosed
			} else {
				f := classifyStream(ctx, err)
				s.metrics.upstreamErrors.WithLabelValues(f.code).Inc()
				info.err = "upstream stream broke: " + f.logText()
				sr.streamError(f.code, "upstream stream broke: "+f.msg)
			}
			sr.finishTrailers()
			return
		}
		if !out.loop {
			sr.finishTrailers()
			return
		}
		results := s.runTools(ctx, sr.sess, out.calls, info)
		next, err := sr.sess.FollowUp(body, newAssistantMessage(out.content, out.calls), results)
		if err != nil {
			info.err = "follow-up: " + err.Error()
			sr.streamError("tool_loop_failed", "skillrouter tool loop: "+err.Error())
			sr.finishTrailers()
			return
		}
		body = next
	}
}

func isEventStream(resp *http.Response) bool {
	if resp.StatusCode != http.StatusOK {
		return false
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// streamRelay is the client side of one streamed chat request, across rounds.
type streamRelay struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	info    *reqInfo
	sess    ToolSession // nil: relay only
	started bool
	id      string // the first round's completion id, shown for every round
	usage   usageSum
	// writeErr is set once the client stopped accepting bytes.
	writeErr error
}

// start writes the response headers from the first round's upstream answer.
// Trailers are declared here because the round limit is only known later.
func (sr *streamRelay) start(upstream http.Header) {
	h := sr.w.Header()
	copyResponseHeader(h, upstream, false)
	h.Del("Content-Encoding")
	h.Set("Content-Type", "text/event-stream")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("X-Accel-Buffering", "no") // nginx in front must not buffer either
	if sr.sess != nil {
		h.Set("Trailer", HeaderToolRounds+", "+HeaderRoundsExceeded)
	}
	sr.w.WriteHeader(http.StatusOK)
	sr.info.status = http.StatusOK
	sr.started = true
	sr.flush()
}

func (sr *streamRelay) finishTrailers() {
	if sr.sess == nil {
		return
	}
	h := sr.w.Header()
	h.Set(HeaderToolRounds, strconv.Itoa(sr.info.rounds))
	h.Set(HeaderRoundsExceeded, strconv.FormatBool(sr.info.exhausted))
}

func (sr *streamRelay) write(b []byte) {
	if sr.writeErr != nil {
		return
	}
	if _, err := sr.w.Write(b); err != nil {
		sr.writeErr = err
	}
}

func (sr *streamRelay) flush() {
	if sr.writeErr != nil {
		return
	}
	if err := sr.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		sr.writeErr = err
	}
}

// writeData writes one "data:" event and flushes it.
func (sr *streamRelay) writeData(data []byte) {
	sr.write([]byte("data: "))
	sr.write(data)
	sr.write([]byte("\n\n"))
	sr.flush()
}

// streamError ends a stream that already started with an OpenAI error event
// (the SDKs raise it as an APIError).
func (sr *streamRelay) streamError(code, msg string) {
	sr.info.err = msg
	sr.writeData(newAPIError(errTypeUpstream, code, msg).marshal())
}

// upstreamErrorEvent relays an upstream error that arrived after the client's
// stream started (a later tool round): status can no longer change, so the
// error body goes out as an error event.
func (sr *streamRelay) upstreamErrorEvent(resp *http.Response) {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e apiError
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		sr.info.err = e.Error.Message
		sr.writeData(raw)
	} else {
		sr.streamError("upstream_error", fmt.Sprintf("upstream answered %d in tool round %d: %s",
			resp.StatusCode, sr.info.rounds, strings.TrimSpace(string(raw))))
	}
	sr.finishTrailers()
}

// roundOutcome says whether a round's stream ended with calls the proxy
// answers (loop) and what to append for the next round.
type roundOutcome struct {
	loop    bool
	calls   []toolCall
	content json.RawMessage
}

// chunk is what the relay reads of a chat.completion.chunk.
type chunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string         `json:"content"`
			ToolCalls []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// toolCallDelta is one fragment of a streamed tool call. The first fragment
// of a call carries index, id, type and function.name; later ones carry
// pieces of function.arguments under the same index.
type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
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
	name      string
	args      strings.Builder
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
	id            string        // this round's completion id
	content       []contentPart // the round's text, decoded only if the round loops
}

// contentPart is text of a round: decoded already, or the raw chunk it is in.
type contentPart struct {
	raw  []byte
	text string
}

// relayRound relays one upstream stream and reports whether to loop.
func (sr *streamRelay) relayRound(body io.Reader, round int, final bool) (roundOutcome, error) {
	st := &roundState{calls: map[int]*callState{}, final: final}
	rd := newSSEReader(body)
	sawDone := false
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return roundOutcome{}, err
		}
		if sr.writeErr != nil {
			return roundOutcome{}, sr.writeErr
		}
		if !ev.HasData {
			// Comments (keep-alives) and other field-only events pass as they are.
			sr.write(ev.Raw)
			sr.flush()
			continue
		}
		if bytes.Equal(bytes.TrimSpace(ev.Data), []byte("[DONE]")) {
			sawDone = true
			break
		}
		sr.relayChunk(st, ev, round)
	}
	if !st.finished {
		sr.decide(st) // the upstream ended without a finish_reason
	}
	if st.loop {
		return st.outcome(), nil
	}
	if sawDone {
		sr.write([]byte("data: [DONE]\n\n"))
		sr.flush()
	}
	return roundOutcome{}, sr.writeErr
}

// decide settles a round at its finish: loop when the proxy has calls to
// answer and is still allowed to; otherwise the round is the client's answer.
func (sr *streamRelay) decide(st *roundState) {
	st.finished = true
	if sr.sess == nil || st.proxyCalls == 0 {
		return
	}
	if st.late || st.final {
		if st.final {
			sr.info.exhausted = true
		}
		sr.s.metrics.droppedCalls.WithLabelValues(armLabel(sr.info.arm)).Add(float64(st.proxyCalls))
		return
	}
	st.loop = true
}

func (st *roundState) outcome() roundOutcome {
	out := roundOutcome{loop: true}
	idx := append([]int(nil), st.order...)
	sort.Ints(idx)
	for _, i := range idx {
		cs := st.calls[i]
		if cs.owner != ownerProxy {
			continue
		}
		var tc toolCall
		tc.ID, tc.Type = cs.id, cs.typ
		tc.Function.Name, tc.Function.Arguments = cs.name, cs.args.String()
		out.calls = append(out.calls, tc)
	}
	var text strings.Builder
	for _, p := range st.content {
		if p.raw == nil {
			text.WriteString(p.text)
			continue
		}
		var ch chunk
		if json.Unmarshal(p.raw, &ch) == nil && len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != nil {
			text.WriteString(*ch.Choices[0].Delta.Content)
		}
	}
	if text.Len() > 0 {
		out.content, _ = json.Marshal(text.String())
	}
	return out
}

// relayChunk handles one data event of round.
func (sr *streamRelay) relayChunk(st *roundState, ev *sseEvent, round int) {
	// Fast path, most of any stream: a text delta with no tool call, finish,
	// usage or error. Relayed without decoding; its text is decoded only if
	// the round turns out to loop.
	if st.id != "" && plainDelta(ev.Data) {
		st.content = append(st.content, contentPart{raw: append([]byte(nil), ev.Data...)})
		sr.writeRaw(ev, st.id, round)
		return
	}
	var ch chunk
	if json.Unmarshal(ev.Data, &ch) != nil {
		sr.write(ev.Raw) // not ours to judge
		sr.flush()
		return
	}
	if st.id == "" {
		st.id = ch.ID
	}
	if round == 0 && sr.id == "" {
		sr.id = ch.ID
	}
	hasUsage := len(ch.Usage) > 0 && !bytes.Equal(ch.Usage, []byte("null"))
	if hasUsage {
		sr.usage.add(ch.Usage)
	}
	if len(ch.Error) > 0 || sr.sess == nil {
		sr.write(ev.Raw)
		sr.flush()
		return
	}
	if len(ch.Choices) == 0 {
		// The usage chunk (stream_options.include_usage) or an unknown kind.
		if st.loop {
			return
		}
		if hasUsage && round > 0 {
			sr.writePatched(ev.Data, round, func(top map[string]json.RawMessage) { top["usage"] = sr.usage.json() })
			return
		}
		sr.writeRaw(ev, ch.ID, round)
		return
	}

	c0 := &ch.Choices[0]
	var relayed []toolCallDelta
	toolsTouched := len(c0.Delta.ToolCalls) > 0
	for _, d := range c0.Delta.ToolCalls {
		if out, ok := sr.trackToolDelta(st, d); ok {
			relayed = append(relayed, out)
		}
	}
	if c0.Delta.Content != nil && *c0.Delta.Content != "" {
		st.content = append(st.content, contentPart{text: *c0.Delta.Content})
	}
	finishing := c0.FinishReason != nil && *c0.FinishReason != ""
	if finishing {
		sr.decide(st)
	}
	if st.loop && finishing {
		// The round's finish (and anything else in this chunk) is the proxy's business,
		// except text the model produced: that is relayed like every content delta.
		if c0.Delta.Content == nil || *c0.Delta.Content == "" || len(ch.Choices) > 1 {
			return
		}
		sr.writePatched(ev.Data, round, func(top map[string]json.RawMessage) {
			patchChoice0(top, func(choice, delta map[string]json.RawMessage) {
				delete(delta, "tool_calls")
				choice["finish_reason"] = json.RawMessage("null")
			})
			delete(top, "usage")
		})
		return
	}
	stripped := finishing && st.proxyCalls > 0 && st.clientShown == 0 && *c0.FinishReason == "tool_calls"
	patchUsage := hasUsage && round > 0
	if !toolsTouched && !stripped && !patchUsage {
		sr.writeRaw(ev, ch.ID, round)
		return
	}
	if toolsTouched && len(relayed) == 0 && !finishing && !patchUsage && !hasOtherDelta(ev.Data) {
		return // a fragment of the proxy's own (or a held) call: withheld
	}
	sr.writePatched(ev.Data, round, func(top map[string]json.RawMessage) {
		patchChoice0(top, func(choice, delta map[string]json.RawMessage) {
			if toolsTouched {
				if len(relayed) == 0 {
					delete(delta, "tool_calls")
				} else {
					delta["tool_calls"] = marshalJSON(relayed)
				}
			}
			if stripped {
				choice["finish_reason"] = json.RawMessage(`"stop"`)
			}
		})
		if patchUsage {
			top["usage"] = sr.usage.json()
		}
	})
}

// trackToolDelta accumulates a tool-call fragment by index and decides, once
// the call's name is known, whose it is. It returns the delta to relay, if any.
func (sr *streamRelay) trackToolDelta(st *roundState, d toolCallDelta) (toolCallDelta, bool) {
	cs := st.calls[d.Index]
	if cs == nil {
		cs = &callState{index: d.Index}
		st.calls[d.Index] = cs
		st.order = append(st.order, d.Index)
	}
	if d.ID != "" {
		cs.id = d.ID
	}
	if d.Type != "" {
		cs.typ = d.Type
	}
	if d.Function.Name != "" { // as the SDKs do: a repeated name replaces, never appends
		cs.name = d.Function.Name
	}
	cs.args.WriteString(d.Function.Arguments)
	if cs.owner == ownerUnknown {
		if cs.name == "" {
			return d, false // wait for the name
		}
		if sr.sess.Handles(cs.name) {
			cs.owner = ownerProxy
			st.proxyCalls++
			if st.clientShown > 0 && !st.final {
				st.late = true
			}
			if st.final && !st.exhaustedSaid {
				// Headers are long gone: say it now as an SSE comment (ignored by
				// SDKs, visible to curl), and in the trailer at the end.
				st.exhaustedSaid = true
				sr.write([]byte(": skillrouter: tool rounds exhausted; the proxy's own tool calls in this answer are dropped\n\n"))
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
		out := toolCallDelta{Index: cs.clientIdx, ID: cs.id, Type: cs.typ}
		if out.Type == "" {
			out.Type = "function"
		}
		out.Function.Name = cs.name
		out.Function.Arguments = cs.args.String()
		return out, true
	}
	if cs.owner == ownerClient {
		d.Index = cs.clientIdx
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
func (sr *streamRelay) writeRaw(ev *sseEvent, id string, round int) {
	if round > 0 && id != "" && sr.id != "" && id != sr.id {
		sr.writeData(bytes.Replace(ev.Data, []byte(strconv.Quote(id)), []byte(strconv.Quote(sr.id)), 1))
		return
	}
	sr.write(ev.Raw)
	sr.flush()
}

// writePatched re-encodes a chunk after fn edits its top-level fields.
func (sr *streamRelay) writePatched(data []byte, round int, fn func(top map[string]json.RawMessage)) {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return
	}
	fn(top)
	if round > 0 && sr.id != "" {
		top["id"], _ = json.Marshal(sr.id)
	}
	sr.writeData(marshalJSON(top))
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
	choices[0]["delta"] = marshalJSON(delta)
	top["choices"] = marshalJSON(choices)
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

// marshalJSON encodes without HTML escaping (skill bodies are full of <tags>).
func marshalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
