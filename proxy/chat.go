package proxy

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// maxSessionKey bounds the session name taken from a header or the body;
// it is hashed, so a longer one would only cost memory.
const maxSessionKey = 1024

// sessionKey is the client's name for the conversation: X-Skillrouter-Session,
// else the OpenAI "user" field, else "" (the opening alone identifies it).
func sessionKey(h http.Header, req *chatRequest) string {
	k := strings.TrimSpace(h.Get(HeaderSession))
	if k == "" {
		k = strings.TrimSpace(req.User)
	}
	if len(k) > maxSessionKey {
		k = k[:maxSessionKey]
	}
	return k
}

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
	ov.Session = sessionKey(h, req)
	info.arm = label
	info.routed = true
	if s.log.Enabled(ctx, slog.LevelDebug) { // the query is message content
		info.query = req.firstUserText()
	}

	out := &routed{req: req, arm: label, body: body}
	if !arm.rw.Ready() {
		// Starting up (the index is being built): forwarded unmodified and
		// said so, but not a rewrite error; /readyz tells load balancers.
		out.rwErr = errNotReady
		info.err = errNotReady.Error()
		info.strategy = string(ov.Strategy)
		return out, nil
	}
	start := time.Now()
	rw, err := arm.rw.RewriteChat(ctx, body, ov)
	info.routing = time.Since(start)
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
		info.fallbackCode = d.FallbackCode
		info.cached = d.Cached
	}
	info.addedTokens = rw.AddedTokens
	s.metrics.observeDecision(info)
	return out, nil
}

type rewriteError string

func (e rewriteError) Error() string { return string(e) }

const (
	errNoRewrite = rewriteError("router returned no rewrite")
	errNotReady  = rewriteError("skill index not ready yet (starting up); forwarded unmodified")
)

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
		// The code, not the reason: the reason holds the embedder's error,
		// URLs included, which is for the log (and the explain endpoint).
		if d.Fallback && d.FallbackCode != "" {
			h.Set(HeaderFallbackReason, headerValue(string(d.FallbackCode)))
		}
		if len(d.ToolsWithheld) > 0 {
			h.Set(HeaderToolsWithheld, headerList(d.ToolsWithheld))
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

// maxHeaderList bounds a header listing names; it ends at a whole name.
const maxHeaderList = 2048

// headerList joins names for a header value, each made header-safe (commas
// and control or non-ASCII bytes become spaces), cut after the last name
// that fits.
func headerList(names []string) string {
	var b strings.Builder
	for _, n := range names {
		n = strings.TrimSpace(strings.ReplaceAll(headerValue(n), ",", " "))
		if n == "" {
			continue
		}
		if b.Len()+len(n)+1 > maxHeaderList {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
	}
	return b.String()
}

// gateReport is what a ToolSession that gates client tools (*router.Session)
// reports at the end of a request.
type gateReport interface {
	WithheldTools() []string
	EnabledTools() map[string]string
}

// logToolGate logs, once the request is done, which gated client tools were
// withheld and which an active skill enabled (by the rewrite or by a
// load_skill in the tool loop). Silent when no client tool was gated.
func (s *Server) logToolGate(ctx context.Context, rt *routed, info *reqInfo) {
	if rt == nil || rt.rw == nil || rt.rw.Decision == nil {
		return
	}
	d := rt.rw.Decision
	withheld, enabled := d.ToolsWithheld, d.ToolsEnabled
	var still []string
	if g, ok := rt.session.(gateReport); ok && g != nil {
		still, enabled = g.WithheldTools(), g.EnabledTools()
	} else {
		still = withheld
	}
	if len(withheld) == 0 && len(enabled) == 0 && len(d.ToolsForced) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if !s.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	pairs := make([]string, 0, len(enabled))
	for _, tool := range slices.Sorted(maps.Keys(enabled)) {
		pairs = append(pairs, tool+"="+enabled[tool])
	}
	attrs := []slog.Attr{
		slog.String("tools_withheld", strings.Join(withheld, ",")),
		slog.String("tools_enabled", strings.Join(pairs, ",")),
	}
	if len(d.ToolsForced) > 0 {
		attrs = append(attrs, slog.String("tools_forced", strings.Join(d.ToolsForced, ",")))
	}
	if !slices.Equal(still, withheld) {
		attrs = append(attrs, slog.String("tools_withheld_at_end", strings.Join(still, ",")))
	}
	if info.arm != "" {
		attrs = append(attrs, slog.String("arm", info.arm))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "client tools gated by skills", attrs...)
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
			s.logToolGate(r.Context(), rt, info)
			return nil
		}
	}
	info.status = rerr.status
	info.err = rerr.msg
	rerr.write(c.Response())
	return nil
}
