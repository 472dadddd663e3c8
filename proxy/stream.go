package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/skillrouter/skillrouter/wire"
)

// stream serves a request with stream:true. See the package doc for the
// protocol; in short: every event is written and flushed as it arrives,
// except what the API's translator (apiStream) withholds: the proxy's own
// tool calls and the end events of rounds that loop.
func (s *Server) stream(c echo.Context, info *reqInfo, rt *routed) {
	r := c.Request()
	ctx, done := s.requestContext(r.Context())
	defer done()
	w := c.Response()
	sr := &streamRelay{s: s, w: w, rc: http.NewResponseController(w), info: info, sess: rt.session, api: rt.api}
	defer sr.end()
	var mine func(string) bool
	if sr.sess != nil {
		mine = sr.sess.Handles
	}
	// Without a session the translator only renders the final error event,
	// if one is needed: events are relayed as they come (relayOnly).
	tr := rt.req.NewStream(mine)
	sr.tr = tr
	defer func() {
		if info.rounds > 0 && info.usageTotal == nil { // however the stream ended: the rounds were billed
			info.usageTotal = tr.TotalUsage()
		}
	}()
	body := rt.body
	if ua, ok := rt.req.(usageAsker); ok && sr.sess == nil {
		// No hidden round reads usage, and a stream relayed as it comes
		// could not hide it: the client's stream_options go as sent.
		body, _ = ua.WithoutUsageAsk(body)
	}
	// Every round's but the one whose id opened the stream (see
	// announced) and the last.
	var hidden hiddenRounds
	defer s.discardHidden(rt, r, &hidden)
	if a, ok := tr.(announcer); ok {
		// A failure that opened the client's stream after a hidden round
		// (the hold had committed it before the answer began) named that
		// round: its id became the client's. Runs before discardHidden.
		defer func() { hidden.keep(a.Announced()) }()
	}
	// The first round's answer when it looped: hidden too if the client
	// gets an HTTP error instead of the stream that would have named it.
	var first *wire.Answer
	held := func() bool {
		if !sr.uncommitted() {
			return false
		}
		if first != nil {
			hidden.add(rt, first)
			first = nil
		}
		return true
	}
	for round := 0; ; round++ {
		resp, elapsed, err := s.send(ctx, rt.api.target(s), forRound(r, round), bytes.NewReader(body), int64(len(body)), true, exchangeStream)
		s.metrics.observeUpstream(info, elapsed)
		if err != nil {
			f := classify(ctx, err)
			if held() {
				s.fail(w, rt.api, info, f)
			} else {
				sr.broke(f, "")
			}
			return
		}
		if round == 0 {
			resp, body = s.resendRefused(ctx, rt, r, resp, body, exchangeStream, info)
			resp, body = s.repairStored(ctx, rt, r, resp, body, exchangeStream, info)
		}
		info.answered(resp)
		hidden.answered(round, resp.StatusCode)
		var events io.Reader = resp.Body
		if !isEventStream(resp) {
			f, bad := redirected(resp)
			if !bad && resp.StatusCode == http.StatusOK {
				f, bad = notAnAnswer(resp, true, peekBody(resp, 512))
			}
			var whole []byte
			if !bad && resp.StatusCode == http.StatusOK && sr.sess != nil {
				whole, f, bad = jsonEvents(ctx, rt, resp)
			}
			if bad {
				resp.Body.Close()
				if held() {
					s.fail(w, rt.api, info, f)
				} else {
					sr.broke(f, "")
				}
				return
			}
			if whole == nil {
				if held() {
					// Nothing sent yet (any rounds before were hidden): an
					// error, or JSON the proxy does not stream (a stream
					// relayed without its tools, or not an answer), goes out
					// as it came, its status one the client's SDK can retry
					// on (429, 5xx).
					noteToolRefusal(info, resp, sr.sess != nil)
					s.relayResponse(ctx, w, info, resp)
					return
				}
				sr.upstreamErrorEvent(resp)
				return
			}
			// The upstream ignored stream:true: its whole answer goes
			// through the translator as the stream it stands for.
			info.jsonRounds++
			events = bytes.NewReader(whole)
		}
		if !sr.started {
			sr.start(resp.Header)
		}
		end, err := sr.relayRound(tr, events, round >= s.cfg.MaxToolRounds)
		resp.Body.Close()
		if err != nil {
			// A client that stopped reading may not have its context done yet.
			switch {
			case tr.Failure() != "":
				// The upstream's error event reached the client, which hung
				// up on it (an SDK raises it): the stream failed upstream.
				s.noteUpstreamErrorEvent(info, tr.Failure())
				sr.finishTrailers()
			case sr.writeFailed() != nil && errors.Is(err, sr.writeFailed()) && ctx.Err() == nil:
				sr.broke(failure{status: statusClientClosed, code: "client_closed", msg: "client closed the request"}, "")
			case held():
				f := classifyStream(ctx, err)
				f.msg = "upstream stream broke: " + f.msg
				s.fail(w, rt.api, info, f)
			default:
				sr.broke(classifyStream(ctx, err), "upstream stream broke: ")
			}
			return
		}
		if end.Incomplete {
			// Closed cleanly but cut: the client must not take it for a whole answer.
			f := failure{status: http.StatusBadGateway, code: "upstream_stream_incomplete", msg: "upstream stream ended before its final event"}
			if held() {
				s.fail(w, rt.api, info, f)
			} else {
				sr.broke(f, "")
			}
			return
		}
		if end.Dropped > 0 {
			s.metrics.droppedCalls.WithLabelValues(armLabel(info.arm)).Add(float64(end.Dropped))
			info.dropped += end.Dropped
		}
		if end.Exhausted {
			info.exhausted = true
		}
		if end.Truncated && end.Dropped > 0 {
			info.truncated = true
		}
		if end.Loop == nil || sr.sess == nil {
			if msg := tr.Failure(); msg != "" {
				s.noteUpstreamErrorEvent(info, msg)
			}
			sr.commit()          // the answer, however little of it there is
			if end.Loop == nil { // an incomplete stream has returned above
				s.rememberPresence(rt, end.ID)
				s.rememberTurn(rt, info)
				if a, ok := tr.(announcer); ok {
					s.rememberAnswer(rt, a.Announced(), end.ID)
				}
			}
			sr.finishTrailers()
			return
		}
		results := s.runTools(ctx, sr.sess, end.Loop.Calls, info)
		next, err := rt.req.FollowUp(body, end.Loop, results, sr.sess.Tools())
		if err != nil {
			info.err = "follow-up: " + err.Error()
			hidden.refused = true // the turn fails: no next round adds to it
			if round == 0 {
				first = end.Loop
			}
			f := failure{status: http.StatusBadGateway, code: "tool_loop_failed", msg: "skillrouter tool loop: " + err.Error()}
			if held() {
				s.fail(w, rt.api, info, f)
				return
			}
			sr.streamError(&wire.Error{Status: f.status, Kind: wire.KindUpstream, Code: f.code, Message: f.msg})
			sr.finishTrailers()
			return
		}
		if announced(tr, round, end.Loop.ID) {
			first = end.Loop
		} else {
			hidden.add(rt, end.Loop)
		}
		body = next
	}
}

// announcer is a stream translator that names the response when its
// answer begins, with the id of the round it begins in (Responses:
// response.created waits for the first item the client is shown).
type announcer interface {
	// Announced is the response id the client was given, "" before.
	Announced() string
}

// announced reports whether a looping round's id (id) reached the client:
// the first round's, whose opening events name it, or the one an announcer
// gave.
func announced(tr apiStream, round int, id string) bool {
	if a, ok := tr.(announcer); ok {
		return a.Announced() != "" && a.Announced() == id
	}
	return round == 0
}

// noteUpstreamErrorEvent records a stream that carried the upstream's own error
// event, relayed: it failed as surely as one the proxy ended.
func (s *Server) noteUpstreamErrorEvent(info *reqInfo, msg string) {
	if info.outcome != "" {
		return
	}
	info.outcome, info.err = outcomeStreamError, "upstream error event: "+msg
	s.metrics.upstreamErrors.WithLabelValues("upstream_error_event").Inc()
}

// jsonEvents reads the JSON answer an upstream gave a streamed request
// (it ignored stream:true, as some OpenAI-compatible servers do with
// tools) and renders it as the events of the API's stream. A body that is
// not whole JSON is bad, as it is for a request that is not streamed.
// whole is nil when the JSON is not an answer of the API (a 200 with an
// error body): the body is then left to read again, for the caller to pass
// on as before.
func jsonEvents(ctx context.Context, rt *routed, resp *http.Response) (whole []byte, f failure, bad bool) {
	raw, f, ok := readAnswer(ctx, resp)
	if !ok {
		return nil, f, true
	}
	if f, bad := notAnAnswer(resp, false, raw); bad {
		return nil, f, true
	}
	whole, err := rt.req.Events(raw)
	if err != nil {
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		return nil, failure{}, false
	}
	return whole, failure{}, false
}

func isEventStream(resp *http.Response) bool {
	if resp.StatusCode != http.StatusOK {
		return false
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// streamRelay is the client side of one streamed request, across rounds.
type streamRelay struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	info    *reqInfo
	api     api
	tr      apiStream   // the API's translator; with sess nil, used for the error event only
	sess    ToolSession // nil: relay only
	started bool        // headers set (start)
	before  http.Header // the headers before start
	// mu guards what the hold's timer shares with the relay: whether the
	// headers went out (until then writes are held back), the writes.
	mu        sync.Mutex
	committed bool
	held      []byte
	hold      *time.Timer // commits when the hold ends
	keep      *time.Timer // writes a keep-alive comment after a silence (keepAlive)
	lastWrite time.Time   // when the last bytes went to the client
	done      bool        // the handler returned (end)
	out       []byte      // the translator's output for the event at hand
	// writeErr is set once the client stopped accepting bytes.
	writeErr error
}

// start sets the response headers from the first round's upstream answer.
// Trailers are declared here because the round limit is only known later.
// With the proxy's tools the headers and the events that open the stream
// are held back until the answer begins (commitFor), for Server.holdLimit
// at most: a hidden round can still fail with an HTTP status then. A
// stream relayed as it comes is committed at once.
func (sr *streamRelay) start(upstream http.Header) {
	h := sr.w.Header()
	sr.before = h.Clone()
	copyResponseHeader(h, upstream, false)
	h.Del("Content-Encoding")
	h.Set("Content-Type", "text/event-stream")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("X-Accel-Buffering", "no") // nginx in front must not buffer either
	if sr.sess != nil {
		h.Set("Trailer", HeaderToolRounds+", "+HeaderRoundsExceeded+", "+HeaderUsageTotal)
	}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.started = true
	if sr.sess == nil {
		sr.commitLocked()
		return
	}
	// Reasoning or thinking the client is not shown, a hidden round's wait
	// for its upstream's headers or a script can run for minutes; an idle
	// timeout between the client and the proxy (a load balancer's, a
	// reverse proxy's 60 s) would end a connection that showed nothing.
	sr.hold = time.AfterFunc(sr.s.holdLimit, sr.commit)
}

// commit sends the headers and what was held back; from then on events go
// out as they come. The hold's timer calls it too.
func (sr *streamRelay) commit() {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.commitLocked()
}

func (sr *streamRelay) commitLocked() {
	if sr.committed || !sr.started || sr.done {
		return
	}
	sr.committed = true
	if sr.hold != nil {
		sr.hold.Stop()
	}
	sr.w.WriteHeader(http.StatusOK)
	sr.info.status = http.StatusOK
	held := sr.held
	sr.held = nil
	sr.writeLocked(held)
	sr.flushLocked()
	if sr.sess != nil && sr.s.keepAliveEvery > 0 {
		sr.lastWrite = time.Now()
		sr.keep = time.AfterFunc(sr.s.keepAliveEvery, sr.keepAlive)
	}
}

// keepAlive writes an SSE comment, which every client's parser skips, when
// nothing went to the client for Server.keepAliveEvery: a hidden round
// (a reasoning model's, a script's) can leave a committed stream silent
// for minutes, and an idle timeout between the client and the proxy (a
// load balancer's 60 s) would cut it. The translators write whole events,
// so a comment never lands inside one.
func (sr *streamRelay) keepAlive() {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.done || sr.writeErr != nil {
		return
	}
	if idle := time.Since(sr.lastWrite); idle < sr.s.keepAliveEvery {
		sr.keep.Reset(sr.s.keepAliveEvery - idle)
		return
	}
	sr.writeLocked(keepAliveComment)
	sr.flushLocked()
	sr.keep.Reset(sr.s.keepAliveEvery)
}

var keepAliveComment = []byte(": keep-alive\n\n")

// defaultKeepAlive is how long a committed stream may stay silent before
// keepAlive writes a comment.
const defaultKeepAlive = 15 * time.Second

// uncommitted reports whether nothing went to the client yet; if so, it
// drops what was held back and puts the headers back as before start, so
// that an error can go out as an HTTP answer of its own.
func (sr *streamRelay) uncommitted() bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.committed {
		return false
	}
	if sr.started {
		if sr.hold != nil {
			sr.hold.Stop()
		}
		h := sr.w.Header()
		clear(h)
		for k, v := range sr.before {
			h[k] = v
		}
		sr.started, sr.held = false, nil
	}
	return true
}

// end stops the hold: the handler returns, and nothing may write to the
// response after it.
func (sr *streamRelay) end() {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.done = true
	if sr.hold != nil {
		sr.hold.Stop()
	}
	if sr.keep != nil {
		sr.keep.Stop()
	}
}

// writeFailed is the error of a write to the client, once one failed.
func (sr *streamRelay) writeFailed() error {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return sr.writeErr
}

// malformedError is an upstream event whose data is not what its API
// sends: the stream is ended with an error event rather than passed on
// (see docs/proxy.md, "Streams that break").
type malformedError struct{ data []byte }

func (e *malformedError) Error() string {
	d := e.data
	if len(d) > 120 {
		d = d[:120]
	}
	return fmt.Sprintf("upstream sent an event whose data is not JSON: %q", d)
}

// checkEvent reports an event the client must not get: data that is not
// JSON (chat's data: [DONE] aside). Lines that are not SSE fields were
// already dropped by the reader (counted here).
func (sr *streamRelay) checkEvent(ev *wire.Event) error {
	if ev.Stray > 0 {
		sr.s.metrics.strayLines.WithLabelValues(string(sr.api.name())).Add(float64(ev.Stray))
	}
	if !ev.HasData || json.Valid(ev.Data) {
		return nil
	}
	if sr.api.name() == wire.APIChat && string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
		return nil
	}
	return &malformedError{data: append([]byte(nil), ev.Data...)}
}

// relayRound relays one upstream stream through the translator (or as it
// comes, without a session).
func (sr *streamRelay) relayRound(tr apiStream, body io.Reader, final bool) (wire.RoundEnd, error) {
	tr.Round(final)
	rd := wire.NewEventReader(body)
	ended := false // relayed as it comes: the API's final event was seen
	graced := false
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if graced && sr.writeFailed() == nil {
				// The answer ended (its final or error event came) and the
				// upstream left the connection open: nothing the client
				// waits for is lost.
				break
			}
			return wire.RoundEnd{}, err
		}
		if err := sr.writeFailed(); err != nil {
			return wire.RoundEnd{}, err
		}
		if err := sr.checkEvent(ev); err != nil {
			return wire.RoundEnd{}, err
		}
		if sr.sess == nil {
			sr.out = append(sr.out[:0], ev.Raw...)
			ended = tr.Relayed(ev) || ended
			sr.emit()
		} else {
			var more bool
			sr.out, more = tr.Event(ev, sr.out[:0])
			sr.commitFor(tr)
			sr.emit()
			if !more {
				break
			}
		}
		if !graced && (ended || tr.Failure() != "") {
			// What may still come is short and comes at once (a
			// response.failed after an error event, data: [DONE]): the rest
			// of the stream gets finalGrace, not the idle timeout.
			graced = true
			if g, ok := body.(interface{ graceIdle(time.Duration) }); ok {
				g.graceIdle(finalGrace)
			}
		}
	}
	if sr.sess == nil {
		return wire.RoundEnd{Incomplete: !ended}, sr.writeFailed()
	}
	var end wire.RoundEnd
	sr.out, end = tr.End(sr.out[:0])
	sr.commitFor(tr)
	sr.emit()
	return end, sr.writeFailed()
}

// finalGrace is how long the rest of an upstream stream may take once its
// answer ended (relayRound).
var finalGrace = time.Second

// commitFor commits once the translator's output says more than the
// stream's opening (apiStream.Preamble).
func (sr *streamRelay) commitFor(tr apiStream) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if !sr.committed && len(sr.out) > 0 && !tr.Preamble(sr.out) {
		sr.commitLocked()
	}
}

// defaultHoldLimit bounds how long a stream's start is held (start).
const defaultHoldLimit = 10 * time.Second

// emit writes and flushes what the translator produced, if anything.
func (sr *streamRelay) emit() {
	if len(sr.out) == 0 {
		return
	}
	sr.write(sr.out)
	sr.flush()
}

func (sr *streamRelay) finishTrailers() {
	if sr.sess == nil {
		return
	}
	h := sr.w.Header()
	h.Set(HeaderToolRounds, strconv.Itoa(sr.info.rounds))
	h.Set(HeaderRoundsExceeded, strconv.FormatBool(sr.info.exhausted))
	if sr.info.rounds > 0 {
		sr.info.usageTotal = sr.tr.TotalUsage()
		if u := sr.info.usageTotal; len(u) > 0 && string(u) != "null" {
			h.Set(HeaderUsageTotal, string(u))
		}
	}
}

func (sr *streamRelay) write(b []byte) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.writeLocked(b)
}

func (sr *streamRelay) writeLocked(b []byte) {
	if sr.started && !sr.committed {
		sr.held = append(sr.held, b...)
		return
	}
	if sr.writeErr != nil {
		return
	}
	if _, err := sr.w.Write(b); err != nil {
		sr.writeErr = err
	}
	if sr.keep != nil {
		sr.lastWrite = time.Now()
	}
}

func (sr *streamRelay) flush() {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.flushLocked()
}

func (sr *streamRelay) flushLocked() {
	if sr.writeErr != nil || !sr.committed {
		return
	}
	if err := sr.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		sr.writeErr = err
	}
}

// broke ends a started stream that failed: the client gone (499, nothing
// to write), the server shutting down, or the upstream (timeout, broken
// connection, malformed event): the API's error event, outcome
// stream_error.
func (sr *streamRelay) broke(f failure, prefix string) {
	info := sr.info
	switch f.code {
	case "client_closed":
		info.status, info.outcome, info.err = statusClientClosed, outcomeClientClosed, f.msg
		sr.finishTrailers()
		return
	case codeShutdown:
		info.outcome = outcomeShutdown
		sr.streamError(&wire.Error{Status: f.status, Kind: wire.KindServer, Code: f.code, Message: f.msg})
	default:
		sr.s.metrics.upstreamErrors.WithLabelValues(f.code).Inc()
		status := http.StatusBadGateway
		if f.status == http.StatusGatewayTimeout {
			status = f.status // the same error type as the 504 given before a stream starts (Anthropic: timeout_error)
		}
		sr.streamError(&wire.Error{Status: status, Kind: wire.KindUpstream, Code: f.code, Message: prefix + f.msg})
		info.err = prefix + f.logText()
	}
	sr.finishTrailers()
}

// streamError ends a stream that already started with an error event in
// the API's format.
func (sr *streamRelay) streamError(e *wire.Error) {
	if sr.info.outcome == "" {
		sr.info.outcome = outcomeStreamError
	}
	sr.info.err = e.Message
	sr.commit()
	sr.write(sr.tr.ErrorEvent(e))
	sr.flush()
}

// upstreamErrorEvent relays an upstream error that arrived after the client's
// stream started (a later tool round): status can no longer change, so the
// error body goes out as an error event.
func (sr *streamRelay) upstreamErrorEvent(resp *http.Response) {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	ev, msg := sr.tr.UpstreamErrorEvent(resp.StatusCode, raw, sr.info.rounds)
	sr.info.err = msg
	sr.info.outcome = outcomeStreamError
	sr.commit()
	sr.write(ev)
	sr.flush()
	sr.finishTrailers()
}
