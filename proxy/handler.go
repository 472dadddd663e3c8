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

	"github.com/skillrouter/skillrouter/wire"
)

// routed is a request after validation, arm choice and rewrite.
type routed struct {
	api     api
	req     apiRequest
	arm     string
	body    []byte      // what goes upstream
	rw      *Rewrite    // nil when the rewrite failed
	session ToolSession // nil: no server-side tool loop
	rwErr   error
	present []string // skills the stored state it continues holds (presence.go)
	scope   string   // whose stored state it is (presence.go)
	turn    string   // the conversation turn it is a step of, with its credential (turns.go)
	carried []string // skills loaded earlier in that turn, loaded again (turns.go)
	abKey   string   // what its A/B arm was picked by ("" for the A/B header)
}

// abKey is what a request's A/B arm is picked by when the A/B header is
// absent: the conversation's name (X-Skillrouter-Session, or the request's
// user), else, continuing a stored response, the key its conversation was
// first picked by (a turn sends only its new input), or the stored
// conversation's id, else the first user message.
func (s *Server) abKey(h http.Header, req apiRequest, view *wire.Request, pkey string) string {
	if k := sessionKey(h, view); k != "" {
		return k
	}
	if k := s.abKeys.get(pkey); len(k) == 1 {
		return k[0]
	}
	if st, ok := req.(stateRefs); ok {
		if _, conv, _ := st.StateRefs(); conv != "" {
			return pkey // the stored conversation's key: the same on every turn
		}
	}
	return view.FirstUserText()
}

// betaReader is a request whose follow-ups depend on the beta features
// the client's anthropic-beta headers turn on (Messages).
type betaReader interface{ SetBetas(headers []string) }

// route parses body once, picks the arm, plans the rewrite and renders it.
// Client errors come back as *wire.Error; a rewrite failure does not fail:
// the body goes upstream unmodified.
func (s *Server) route(ctx context.Context, a api, h http.Header, body []byte, info *reqInfo) (*routed, *wire.Error) {
	_, end := s.stage(ctx, "skillrouter.parse")
	parsed, err := a.parse(body)
	end()
	if err != nil {
		return nil, asWireError(err)
	}
	if b, ok := parsed.(betaReader); ok {
		b.SetBetas(h.Values("Anthropic-Beta"))
	}
	scope := presenceScope(parsed, h, info.clientKey)
	if p, b, ok := s.chainedToAnswer(a, parsed, scope); ok {
		parsed, body = p, b
		info.chainedToAnswer = true
	}
	view := parsed.View()
	info.api = string(a.name())
	info.stream = view.Stream
	info.model = view.Model
	pkey := presenceKey(parsed, scope)
	var abKey string
	arm, label, err := s.ab.pick(h, func() string {
		abKey = s.abKey(h, parsed, view, pkey)
		return abKey
	})
	if err != nil {
		return nil, headerError("%v", err)
	}
	strategyFromArm := label != "" && label != explicitArmLabel && h.Get(HeaderStrategy) == label
	ov, werr := overrides(h, strategyFromArm)
	if werr != nil {
		return nil, werr
	}
	if ov.Strategy == "" {
		ov.Strategy = arm.strategy
	} else if ov.Strategy != arm.strategy && label != "" {
		// An arm named by X-Skillrouter-Arm but run with another strategy
		// is not that arm: its requests would mix into the arm's figures.
		label = explicitArmLabel
	}
	ov.Session = sessionKey(h, view)
	ov.Present = s.presence.get(pkey)
	if pkey != "" && !s.presence.has(pkey) {
		s.metrics.stateUnknown.Inc()
	}
	turns := s.turnMemory(h, info.clientKey)
	ov.Carried = turns.get
	if view.Compacting() || h.Get("X-Stainless-Helper") == "compaction" {
		// An agent CLI summarising its full context (wire.Request.Compacting;
		// the Anthropic SDK's tool runner says so in a header): nothing is
		// auto-loaded or carried on its prompt, but the catalog and tools stay,
		// the bytes the conversation's cached prefix holds, so that its
		// largest request reads that cache instead of writing it anew.
		none := 0
		ov.TopK, ov.Carried = &none, nil
		info.compaction = true
		if len(view.Tools) == 0 {
			// Sent without tools (Codex): its prefix differs from the
			// turns' anyway, and the proxy's tools would only let the model
			// load skills into a summary.
			view.NoTools = true
		}
	}
	info.arm = label
	info.routed = true
	if s.log.Enabled(ctx, slog.LevelDebug) { // the query is message content
		info.query = view.FirstUserText()
	}

	out := &routed{api: a, req: parsed, arm: label, body: body, present: ov.Present, scope: scope, abKey: abKey}
	if !arm.rw.Ready() {
		// Starting up (the index is being built): forwarded unmodified and
		// said so, but not a rewrite error; /readyz tells load balancers.
		out.rwErr = errNotReady
		info.err = errNotReady.Error()
		info.strategy = string(ov.Strategy)
		s.metrics.beforeReady.WithLabelValues(armLabel(label), info.api).Inc()
		return out, nil
	}
	start := time.Now()
	rw, err := arm.rw.Rewrite(ctx, view, ov)
	var rendered []byte
	if err == nil && rw != nil && rw.Plan != nil {
		s.mergeEnvelopes(parsed)
		rendered, err = parsed.Render(rw.Plan)
	} else if err == nil && rw != nil {
		rendered = body // disabled: as sent
	}
	info.routing = time.Since(start)
	if err != nil || rw == nil || rendered == nil {
		out.rwErr = err
		if err == nil {
			out.rwErr = errNoRewrite
		}
		info.err = "rewrite: " + out.rwErr.Error()
		info.strategy = string(ov.Strategy)
		s.metrics.rewriteErrors.WithLabelValues(armLabel(label), info.api).Inc()
		return out, nil
	}
	out.rw, out.body = rw, rendered
	if rw.Turn != "" {
		out.turn, out.carried = turns.key(rw.Turn), rw.Carried
	}
	if rw.Plan != nil {
		for _, e := range rw.Plan.Envelopes { // the carried skills loaded again, not those shown already
			if slices.Contains(rw.Carried, e.ID) {
				info.carried = append(info.carried, e.ID)
			}
		}
	}
	// The loop handles one answer only; with n>1 the proxy's calls go back as they are.
	if view.Choices <= 1 {
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

// asWireError turns a parse error into the client's error: the API
// packages return *wire.Error; anything else is a 400 with its text.
func asWireError(err error) *wire.Error {
	if we, ok := err.(*wire.Error); ok {
		return we
	}
	return wire.BadRequest("invalid_request", "", "%v", err)
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
		h.Set(HeaderSelected, headerIDs(d.Selected))
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

// headerIDs joins skill ids for a header value, each percent-encoded as
// UTF-8 outside printable ASCII (and its comma, percent and space), as MCP's
// skill:// URIs are: clients read a header's bytes as Latin-1, so a raw
// "café" reached the OpenAI SDK as "cafÃ©". ASCII ids, the rule's names,
// are unchanged.
func headerIDs(ids []string) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		for j := 0; j < len(id); j++ {
			c := id[j]
			if c <= ' ' || c >= 0x7f || c == ',' || c == '%' {
				b.WriteByte('%')
				b.WriteByte("0123456789ABCDEF"[c>>4])
				b.WriteByte("0123456789ABCDEF"[c&15])
				continue
			}
			b.WriteByte(c)
		}
	}
	return b.String()
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
	if g, ok := sessionAs[gateReport](rt.session); ok && g != nil {
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
	// The client chooses its tools' names and how many: each list is
	// clipped as what the proxy quotes from a request is.
	list := func(names []string) string { return wire.Clip(strings.Join(names, ",")) }
	attrs := []slog.Attr{
		slog.String("tools_withheld", list(withheld)),
		slog.String("tools_enabled", list(pairs)),
	}
	if len(d.ToolsForced) > 0 {
		attrs = append(attrs, slog.String("tools_forced", list(d.ToolsForced)))
	}
	if !slices.Equal(still, withheld) {
		attrs = append(attrs, slog.String("tools_withheld_at_end", list(still)))
	}
	if info.arm != "" {
		attrs = append(attrs, slog.String("arm", info.arm))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "client tools gated by skills", attrs...)
}

// serveAPI returns the handler of a's endpoint: read, route, forward, run
// the tool loop, answer.
func (s *Server) serveAPI(a api) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		info := requestInfo(c)
		info.api = string(a.name())
		body, hold, werr := s.readHeldBody(r)
		defer hold.release()
		if werr == nil {
			var rt *routed
			rt, werr = s.route(r.Context(), a, r.Header, body, info)
			if werr == nil {
				decisionHeaders(c.Response().Header(), rt)
				if rt.req.View().Stream {
					s.stream(c, info, rt)
				} else {
					s.complete(c, info, rt)
				}
				s.logToolGate(r.Context(), rt, info)
				return nil
			}
		}
		info.status = werr.Status
		info.err = werr.Message
		writeError(c.Response(), a, werr)
		return nil
	}
}
