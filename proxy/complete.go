package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/wire"
)

// complete serves a non-streaming request: forward, and while the answer
// holds tool calls the session answers, execute them, append the results
// (apiRequest.FollowUp) and ask again, up to MaxToolRounds rounds, never
// on an answer that stopped short (wire.Answer.Truncated) and never past
// the client's output-token cap (wire.ErrBudgetSpent).
func (s *Server) complete(c echo.Context, info *reqInfo, rt *routed) {
	r := c.Request()
	ctx, done := s.requestContext(r.Context())
	defer done()
	w := c.Response()
	body := rt.body
	sess := rt.session
	var usage wire.Usage
	defer func() {
		if info.rounds > 0 && info.usageTotal == nil { // however the request ended: the rounds were billed
			info.usageTotal = usage.JSON()
		}
	}()
	var hidden hiddenRounds // every round's but the last: the client gets only its id
	defer s.discardHidden(rt, r, &hidden)
	for round := 0; ; round++ {
		resp, elapsed, err := s.send(ctx, rt.api.target(s), forRound(r, round), bytes.NewReader(body), int64(len(body)), true, exchangeAnswer)
		s.metrics.observeUpstream(info, elapsed)
		if err != nil {
			s.fail(w, rt.api, info, classify(ctx, err))
			return
		}
		if round == 0 {
			resp, body = s.resendRefused(ctx, rt, r, resp, body, exchangeAnswer, info)
			resp, body = s.repairStored(ctx, rt, r, resp, body, exchangeAnswer, info)
		}
		info.answered(resp)
		hidden.answered(round, resp.StatusCode)
		if f, ok := redirected(resp); ok {
			resp.Body.Close()
			s.fail(w, rt.api, info, f)
			return
		}
		// Upstream errors and answers the proxy has nothing to do with go back unchanged.
		if sess == nil || resp.StatusCode != http.StatusOK {
			noteToolRefusal(info, resp, sess != nil)
			s.relayResponse(ctx, w, info, resp)
			return
		}
		raw, f, ok := readAnswer(ctx, resp)
		if !ok {
			s.fail(w, rt.api, info, f)
			return
		}
		ans, u, ok := rt.req.ReadAnswer(raw, round, sess.Handles)
		known := raw
		if ok {
			known = nil // read as an answer: JSON, no need to check it again
		}
		if f, bad := notAnAnswer(resp, false, known); bad {
			s.fail(w, rt.api, info, f)
			return
		}
		if !ok {
			s.writeFinal(w, rt, info, resp.Header, raw, round, false, nil, nil)
			return
		}
		usage.Add(u)
		if ans == nil {
			s.writeFinal(w, rt, info, resp.Header, raw, round, false, &usage, nil)
			return
		}
		if ans.Truncated || ans.Late || round >= s.cfg.MaxToolRounds {
			// The answer is the client's: the round limit forbids another
			// round, or the answer stopped short (the output-token limit, a
			// content filter, a refusal: its calls may be cut, and another
			// round would stop the same way),
			// or its client calls cannot wait for another round.
			// The proxy's calls are dropped from it.
			info.exhausted = round >= s.cfg.MaxToolRounds
			info.truncated = ans.Truncated
			s.metrics.droppedCalls.WithLabelValues(armLabel(info.arm)).Add(float64(len(ans.Calls)))
			info.dropped += len(ans.Calls)
			s.writeFinal(w, rt, info, resp.Header, raw, round, info.exhausted, &usage, sess.Handles)
			return
		}
		atCap := func() {
			// Too little is left of the client's output-token cap for
			// another round: the answer is the client's, ended as at that
			// cap (Final says so), with the proxy's calls dropped.
			info.truncated = true
			s.metrics.droppedCalls.WithLabelValues(armLabel(info.arm)).Add(float64(len(ans.Calls)))
			info.dropped += len(ans.Calls)
			s.writeFinal(w, rt, info, resp.Header, raw, round, false, &usage, sess.Handles)
		}
		// Checked before the calls run: nothing would read their results.
		if rt.req.Spent(ans) {
			atCap()
			return
		}
		// Client tools called in the same turn are dropped here: the model
		// sees the proxy's results and calls them again in its next answer.
		results := s.runTools(ctx, sess, ans.Calls, info)
		next, err := rt.req.FollowUp(body, ans, results, sess.Tools())
		if errors.Is(err, wire.ErrBudgetSpent) { // FollowUp's own check of the same rule
			atCap()
			return
		}
		if err != nil {
			w.Header().Set(HeaderError, headerValue("tool loop: "+err.Error()))
			info.err = "follow-up: " + err.Error()
			s.writeFinal(w, rt, info, resp.Header, raw, round, false, &usage, sess.Handles)
			return
		}
		hidden.add(rt, ans)
		body = next
	}
}

// runTools answers the proxy's calls in order. Session.Call never fails:
// errors come back as results the model can read.
func (s *Server) runTools(ctx context.Context, sess ToolSession, calls []wire.ToolCall, info *reqInfo) []wire.ToolResult {
	out := make([]wire.ToolResult, 0, len(calls))
	for _, tc := range calls {
		args := tc.Arguments
		if len(bytes.TrimSpace(args)) == 0 {
			args = []byte("{}")
		}
		res := sess.Call(ctx, tc.ID, tc.Name, args)
		if res.CallID == "" {
			res.CallID = tc.ID
		}
		if res.Name == "" {
			res.Name = tc.Name
		}
		out = append(out, res)
		info.toolCalls++
		s.metrics.toolCalls.WithLabelValues(tc.Name, armLabel(info.arm), info.api).Inc()
	}
	info.rounds++
	return out
}

// readAnswer reads a whole upstream answer, bounded by maxUpstreamBody,
// and closes its body; ok false with the failure to report.
func readAnswer(ctx context.Context, resp *http.Response) (raw []byte, f failure, ok bool) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
	resp.Body.Close()
	if err != nil {
		return nil, classify(ctx, &answerReadError{err}), false
	}
	if len(raw) > maxUpstreamBody {
		return nil, failure{status: http.StatusBadGateway, code: "upstream_response_too_large",
			msg: fmt.Sprintf("upstream answer exceeds %d bytes", maxUpstreamBody)}, false
	}
	return raw, failure{}, true
}

// writeFinal sends the last upstream answer, patched when tool rounds ran
// (the reported usage, see wire.Usage), when the proxy's own calls must be
// stripped, or when it echoes what the rewrite changed in the request.
func (s *Server) writeFinal(w http.ResponseWriter, rt *routed, info *reqInfo, upstream http.Header, raw []byte, rounds int, exhausted bool, usage *wire.Usage, strip func(string) bool) {
	out, patched := raw, false
	if rounds > 0 || strip != nil || rt.req.Echoes() {
		var u []byte
		if rounds > 0 && !usage.Empty() {
			u = rt.api.reportedUsage(usage)
		}
		if p, err := rt.req.Final(raw, rounds, u, strip); err == nil {
			out, patched = p, true
		}
	}
	s.rememberTurn(rt, info)
	if _, ok := rt.req.(stateRefs); ok {
		// Only a response (not an input_tokens count) adds to stored state.
		if res := gjson.GetManyBytes(raw, "object", "id"); res[0].Str == "response" && res[1].Str != "" {
			s.rememberPresence(rt, res[1].Str)
		}
	}
	h := w.Header()
	copyResponseHeader(h, upstream, false)
	h.Del("Content-Encoding") // the Transport decoded it
	if patched || h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(out)))
	h.Set(HeaderToolRounds, strconv.Itoa(rounds))
	if rounds > 0 && !usage.Empty() {
		info.usageTotal = usage.JSON()
		h.Set(HeaderUsageTotal, string(info.usageTotal))
	}
	if exhausted {
		h.Set(HeaderRoundsExceeded, "true")
	}
	w.WriteHeader(http.StatusOK)
	info.status = http.StatusOK
	_, _ = w.Write(out)
}

// noteToolRefusal marks a request whose upstream refused it (400, 422)
// naming a tool the proxy added: the model behind it takes no tools, or
// not these, and every request will fail alike until the proxy offers none.
// The log line then says so, at warn. The body is peeked, not consumed.
func noteToolRefusal(info *reqInfo, resp *http.Response, offered bool) {
	if !offered || !isRefusal(resp) {
		return
	}
	br := bufio.NewReaderSize(resp.Body, 8<<10)
	head, _ := br.Peek(8 << 10)
	resp.Body = struct {
		io.Reader
		io.Closer
	}{br, resp.Body}
	for _, name := range []string{router.ToolLoadSkill, router.ToolSearchSkills} {
		if bytes.Contains(head, []byte(name)) {
			info.toolsRefused = name
			return
		}
	}
}

// relayResponse copies an upstream response to the client unchanged.
func (s *Server) relayResponse(ctx context.Context, w http.ResponseWriter, info *reqInfo, resp *http.Response) {
	defer resp.Body.Close()
	h := w.Header()
	// A decoded body no longer matches the upstream's encoding and length.
	keepLength := !resp.Uncompressed
	copyResponseHeader(h, resp.Header, keepLength)
	if resp.Uncompressed {
		h.Del("Content-Encoding")
	}
	if info.rounds > 0 {
		// An error answer to a later round: the client's retry (an SDK
		// retries a 429 or 5xx) repeats the rounds before it too.
		h.Set(HeaderToolRounds, strconv.Itoa(info.rounds))
	}
	w.WriteHeader(resp.StatusCode)
	info.status = resp.StatusCode
	if err := relayBody(w, resp.Body); err != nil {
		s.relayFailed(ctx, info, err)
	}
}

// relayFailed records a body relayed as it came that broke off: nothing of
// the proxy's can be added to it, but the log and the metrics say so.
func (s *Server) relayFailed(ctx context.Context, info *reqInfo, err error) {
	f := classifyStream(ctx, err)
	switch f.code {
	case "client_closed":
		info.status, info.outcome = statusClientClosed, outcomeClientClosed
	case codeShutdown:
		info.outcome = outcomeShutdown
	default:
		info.outcome = outcomeStreamError
		s.metrics.upstreamErrors.WithLabelValues(f.code).Inc()
	}
	if info.err == "" {
		info.err = "relay: " + f.logText()
	}
}

// fail reports an upstream failure to the client (unless it is gone) and the metrics.
func (s *Server) fail(w http.ResponseWriter, a api, info *reqInfo, f failure) {
	info.status = f.status
	info.err = f.logText()
	switch f.code {
	case codeShutdown:
		info.outcome = outcomeShutdown
	case "client_closed":
		info.outcome = outcomeClientClosed
		s.metrics.upstreamErrors.WithLabelValues(f.code).Inc()
	default:
		s.metrics.upstreamErrors.WithLabelValues(f.code).Inc()
	}
	f.write(w, a)
}
