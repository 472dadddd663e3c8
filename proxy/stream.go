package proxy

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/skillrouter/skillrouter/wire"
)

// stream serves a request with stream:true. See the package doc for the
// protocol; in short: every event is written and flushed as it arrives,
// except what the API's translator (apiStream) withholds: the proxy's own
// tool calls and the end events of rounds that loop.
func (s *Server) stream(c echo.Context, info *reqInfo, rt *routed) {
	r := c.Request()
	ctx := r.Context()
	w := c.Response()
	sr := &streamRelay{w: w, rc: http.NewResponseController(w), info: info, sess: rt.session}
	var tr apiStream
	if sr.sess != nil {
		tr = rt.req.NewStream(sr.sess.Handles)
		sr.tr = tr
	}
	body := rt.body
	for round := 0; ; round++ {
		resp, elapsed, err := s.send(ctx, rt.api.target(s), r, bytes.NewReader(body), int64(len(body)), true)
		s.metrics.upstreamLatency.WithLabelValues(info.path).Observe(elapsed.Seconds())
		if err != nil {
			f := classify(ctx, err)
			if !sr.started {
				s.fail(w, rt.api, info, f)
			} else {
				s.metrics.upstreamErrors.WithLabelValues(f.code).Inc()
				sr.streamError(f.code, f.msg)
				info.err = f.logText()
				sr.finishTrailers()
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
		if tr == nil {
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
		end, err := sr.relayRound(tr, resp.Body, round >= s.cfg.MaxToolRounds)
		resp.Body.Close()
		if err != nil {
			// The client stopped reading (its context may not be done yet):
			// not an upstream failure.
			if ctx.Err() != nil || (sr.writeErr != nil && err == sr.writeErr) {
				info.status = statusClientClosed
			} else {
				f := classifyStream(ctx, err)
				s.metrics.upstreamErrors.WithLabelValues(f.code).Inc()
				sr.streamError(f.code, "upstream stream broke: "+f.msg)
				info.err = "upstream stream broke: " + f.logText()
			}
			sr.finishTrailers()
			return
		}
		if end.Incomplete {
			// Closed cleanly but cut: the client must not take it for a whole answer.
			s.metrics.upstreamErrors.WithLabelValues("upstream_stream_incomplete").Inc()
			sr.streamError("upstream_stream_incomplete", "upstream stream ended before its final event")
			sr.finishTrailers()
			return
		}
		if end.Dropped > 0 {
			s.metrics.droppedCalls.WithLabelValues(armLabel(info.arm)).Add(float64(end.Dropped))
		}
		if end.Exhausted {
			info.exhausted = true
		}
		if end.Loop == nil {
			sr.finishTrailers()
			return
		}
		results := s.runTools(ctx, sr.sess, end.Loop.Calls, info)
		next, err := rt.req.FollowUp(body, end.Loop, results, sr.sess.Tools())
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

// streamRelay is the client side of one streamed request, across rounds.
type streamRelay struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	info    *reqInfo
	tr      apiStream   // nil: relay only
	sess    ToolSession // nil: relay only
	started bool
	out     []byte // the translator's output for the event at hand
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

// relayRound relays one upstream stream through the translator.
func (sr *streamRelay) relayRound(tr apiStream, body io.Reader, final bool) (wire.RoundEnd, error) {
	tr.Round(final)
	rd := wire.NewEventReader(body)
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return wire.RoundEnd{}, err
		}
		if sr.writeErr != nil {
			return wire.RoundEnd{}, sr.writeErr
		}
		var more bool
		sr.out, more = tr.Event(ev, sr.out[:0])
		sr.emit()
		if !more {
			break
		}
	}
	var end wire.RoundEnd
	sr.out, end = tr.End(sr.out[:0])
	sr.emit()
	return end, sr.writeErr
}

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

// streamError ends a stream that already started with an error event in
// the API's format.
func (sr *streamRelay) streamError(code, msg string) {
	sr.info.err = msg
	if sr.tr == nil {
		return // relay only: nothing of ours to end the stream with
	}
	sr.write(sr.tr.ErrorEvent(&wire.Error{Status: http.StatusBadGateway, Kind: wire.KindUpstream, Code: code, Message: msg}))
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
	sr.write(ev)
	sr.flush()
	sr.finishTrailers()
}
