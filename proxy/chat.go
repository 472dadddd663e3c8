package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// routed is a chat request after validation, arm choice and rewrite.
type routed struct {
	req     *chatRequest
	arm     string
	body    []byte      // what goes upstream
	rw      *Rewrite    // nil when the rewrite failed
	session ToolSession // nil: no server-side tool loop
	rwErr   error
}

// route validates body, picks the arm and rewrites. Client errors come back
// as *requestError; a rewrite failure does not fail: the body goes upstream unmodified.
func (s *Server) route(ctx context.Context, h http.Header, body []byte, info *reqInfo) (*routed, *requestError) {
	req, rerr := parseChat(body)
	if rerr != nil {
		return nil, rerr
	}
	info.stream = req.Stream
	arm, label, err := s.ab.pick(h, func() string {
		if req.User != "" {
			return req.User
		}
		return req.firstUserText()
	})
	if err != nil {
		return nil, badRequest("invalid_skillrouter_header", "%v", err)
	}
	strategyFromArm := label != "" && label != explicitArmLabel && h.Get(HeaderStrategy) == label
	ov, rerr := overrides(h, strategyFromArm)
	if rerr != nil {
		return nil, rerr
	}
	if ov.Strategy == "" {
		ov.Strategy = arm.strategy
	}
	info.arm = label
	info.routed = true
	if s.log.Enabled(ctx, slog.LevelDebug) { // the query is message content
		info.query = req.firstUserText()
	}

	start := time.Now()
	rw, err := arm.rw.RewriteChat(ctx, body, ov)
	info.routing = time.Since(start)
	out := &routed{req: req, arm: label, body: body}
	if err != nil || rw == nil || rw.Body == nil {
		out.rwErr = err
		if err == nil {
			out.rwErr = errNoRewrite
		}
		info.err = "rewrite: " + out.rwErr.Error()
		info.strategy = string(ov.Strategy)
		s.metrics.rewriteErrors.WithLabelValues(armLabel(label)).Inc()
		return out, nil
	}
	out.rw, out.body = rw, rw.Body
	// The loop handles choice 0 only; with n>1 the proxy's calls go back as they are.
	if req.N == nil || *req.N <= 1 {
		out.session = rw.Session
	}
	if d := rw.Decision; d != nil {
		info.strategy = string(d.Strategy)
		info.selected = d.Selected
		info.fallback = d.Fallback
		info.fallbackReason = d.FallbackReason
	}
	info.addedTokens = rw.AddedTokens
	s.metrics.observeDecision(info)
	return out, nil
}

type rewriteError string

func (e rewriteError) Error() string { return string(e) }

const errNoRewrite = rewriteError("router returned no rewrite")

func armLabel(label string) string {
	if label == "" {
		return defaultArmLabel
	}
	return label
}

// decisionHeaders tells the client what was decided, before any body byte.
func decisionHeaders(h http.Header, rt *routed) {
	if rt.arm != "" {
		h.Set(HeaderArm, rt.arm)
	}
	if rt.rwErr != nil {
		h.Set(HeaderError, headerValue(rt.rwErr.Error()))
		return
	}
	if d := rt.rw.Decision; d != nil {
		h.Set(HeaderSelected, strings.Join(d.Selected, ","))
		if d.Strategy != "" { // empty when routing was disabled for the request
			h.Set(HeaderStrategy, string(d.Strategy))
		}
		h.Set(HeaderFallback, strconv.FormatBool(d.Fallback))
		if d.Fallback && d.FallbackReason != "" {
			h.Set(HeaderFallbackReason, headerValue(d.FallbackReason))
		}
	}
	h.Set(HeaderAddedTokens, strconv.Itoa(rt.rw.AddedTokens))
}

// headerValue makes s safe and short enough for a header value.
func headerValue(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r > 0x7e {
			return ' '
		}
		return r
	}, s)
	if len(s) > 256 {
		s = s[:256]
	}
	return s
}

// chat serves POST /v1/chat/completions.
func (s *Server) chat(c echo.Context) error {
	r := c.Request()
	info := requestInfo(c)
	body, rerr := readBody(r, s.cfg.BodyLimit)
	if rerr == nil {
		var rt *routed
		rt, rerr = s.route(r.Context(), r.Header, body, info)
		if rerr == nil {
			decisionHeaders(c.Response().Header(), rt)
			if rt.req.Stream {
				s.streamChat(c, info, rt)
			} else {
				s.completeChat(c, info, rt)
			}
			return nil
		}
	}
	info.status = rerr.status
	info.err = rerr.msg
	writeError(c.Response(), rerr.status, errTypeInvalidRequest, rerr.code, rerr.msg)
	return nil
}
