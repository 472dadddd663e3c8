package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/wire"
)

// reqInfo collects what the access log line and the request metrics report.
// Handlers fill it in; the observe middleware emits it once the handler returns.
type reqInfo struct {
	requestID      string // HeaderRequestID
	client         string // the client key's id (clientIDOf), taken before admit drops the key
	path           string // bounded-cardinality label, e.g. /v1/models
	method         string // bounded-cardinality label (metricMethod)
	api            string // the client API of a routed endpoint (wire.API)
	model          string // the request's model, when routed
	status         int    // what the client got; 499 when it went away
	upstreamStatus int
	// compaction: an agent CLI's compaction request (nothing auto-loaded
	// or carried on its prompt; see route).
	compaction bool
	// chainedToAnswer: the request continued a stream's announced
	// response, sent on from its answer instead (rememberAnswer).
	chainedToAnswer bool
	// usageTotal is the usage of every round summed (what the request
	// cost), when tool rounds ran: the client is told the last round's.
	usageTotal json.RawMessage
	// upstreamRequestID is the id the upstream gave its last answer
	// (x-request-id, Anthropic's request-id): what its support asks for.
	upstreamRequestID string
	arm               string
	stream            bool
	routed            bool
	strategy          string
	selected          []string
	fallback          bool
	cached            bool // the ranking came from the router's cache
	fallbackReason    string
	fallbackCode      router.FallbackCode
	addedTokens       int
	routing           time.Duration
	rounds            int
	exhausted         bool
	truncated         bool // the proxy's calls were dropped: the answer stopped short (wire.Answer.Truncated)
	toolCalls         int
	// loaded are the skills the model loaded with load_skill; carried,
	// those loaded earlier in the turn and loaded again (turns.go).
	loaded, carried []string
	// dropped counts the proxy's calls dropped unanswered (the round
	// limit, an answer stopped short, a client call relayed first).
	dropped int
	// toolsRefused names the proxy's tool an upstream refusal named
	// (noteToolRefusal).
	toolsRefused string
	// misdirected: a path only a wrong base URL sends (/v1/v1/..., a root
	// API path, /v1/mcp): logged as a warning with the hint.
	misdirected bool
	// droppedAnswered counts calls of an earlier answer that the proxy had
	// removed and answered when stored state was continued (state.go).
	droppedAnswered int
	// jsonRounds counts the rounds of a streamed request the upstream
	// answered with JSON (it ignored stream:true), streamed by the proxy.
	jsonRounds int
	err        string
	outcome    string // how the request ended (outcome* constants); set by observe when the handler did not
	query      string // logged at debug level only
	clientKey  string // the client's key when the proxy checked and dropped it; never logged
}

const infoKey = "skillrouter.info"

// rawJSON logs as itself: an object in JSON logs, its text in text logs.
type rawJSON json.RawMessage

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }
func (r rawJSON) MarshalText() ([]byte, error) { return r, nil }

// answered notes an upstream answer: its status and its request id.
func (info *reqInfo) answered(resp *http.Response) {
	info.upstreamStatus = resp.StatusCode
	id := resp.Header.Get("X-Request-Id") // OpenAI, most gateways
	if id == "" {
		id = resp.Header.Get("Request-Id") // Anthropic
	}
	info.upstreamRequestID = wire.Clip(id) // the last answer's, or none
}

func requestInfo(c echo.Context) *reqInfo {
	if v, ok := c.Get(infoKey).(*reqInfo); ok {
		return v
	}
	info := &reqInfo{}
	c.Set(infoKey, info)
	return info
}

// observe wraps every request: metrics and one log line when it is done.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		info := requestInfo(c)
		info.begin(c.Request(), c.Response().Header())
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		if info.status == 0 {
			info.status = c.Response().Status
		}
		if info.status != statusClientClosed && c.Request().Context().Err() != nil && !c.Response().Committed {
			info.status = statusClientClosed
		}
		if info.outcome == "" {
			info.outcome = outcomeComplete
			if info.status == statusClientClosed {
				info.outcome = outcomeClientClosed
			}
		}
		elapsed := time.Since(start)
		if s.cfg.Ended != nil && info.outcome != outcomeComplete {
			s.cfg.Ended(c.Request().Context(), info.outcome)
		}
		s.metrics.observeRequest(info, elapsed)
		s.logRequest(c, info, elapsed)
		if info.status == statusClientClosed && !c.Response().Committed {
			// net/http would answer a handler that wrote nothing with an
			// empty 200, which a client that only half-closed its side
			// (legal in HTTP/1.1) still reads as a success: the
			// connection is closed without an answer instead.
			panic(http.ErrAbortHandler)
		}
		return nil
	}
}

// setupHint says what to change when an upstream's answer points at the
// proxy's setup rather than the request: its refusal of the client's key,
// or a Messages request it does not know. "" when nothing does.
func (s *Server) setupHint(r *http.Request, info *reqInfo) string {
	switch info.upstreamStatus {
	case http.StatusUnauthorized:
		t := s.targetOf(info, r)
		if t.keepsClientKey(r.Header) {
			return "the upstream refused the key the client sent, which is forwarded as sent: the configured upstream key goes only with requests without one; set upstream.override_auth to send it instead"
		}
		if _, sent := clientKey(r); sent && t.apiKey == "" {
			return "the upstream refused the key the client sent (a placeholder such as unused-for-ollama works only with servers that take any key): give the client its real key, or set upstream.api_key with upstream.override_auth to send one key for every client"
		}
	case http.StatusNotFound:
		if info.api == string(wire.APIMessages) && s.cfg.AnthropicUpstream == nil {
			return "the upstream answered 404 to an Anthropic Messages request: if it speaks only OpenAI's API, set upstream.anthropic_url (--anthropic-upstream) to an Anthropic-compatible server"
		}
	}
	return ""
}

// whoAttrs say which request a log line is and who sent it: its id, the
// peer's address (a front end's, behind one: its own log has the client),
// the user agent, and with client keys (auth.api_keys) the key's client id
// (a digest, never the key), for attributing failed keys and use.
func (s *Server) whoAttrs(r *http.Request, info *reqInfo) []slog.Attr {
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("request_id", info.requestID))
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		attrs = append(attrs, slog.String("client_addr", host))
	}
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, slog.String("user_agent", wire.Clip(ua)))
	}
	if info.client != "" {
		attrs = append(attrs, slog.String("client", info.client))
	}
	return attrs
}

// begin sets what every request's line and metrics name from the request
// itself, and answers with its id.
func (info *reqInfo) begin(r *http.Request, answer http.Header) {
	info.path, info.method = metricPath(r.URL.Path), metricMethod(r.Method)
	info.requestID = requestID(r.Header)
	answer.Set(HeaderRequestID, info.requestID)
}

// requestID is the id a request is answered and logged with: the
// X-Request-Id a front end (nginx's $request_id, Envoy) or the client set,
// when it is a plain token of at most 128 bytes, so that one id follows
// the request through the stack; else a new random one.
func requestID(h http.Header) string {
	if id := h.Get("X-Request-Id"); id != "" && len(id) <= 128 && plainToken(id) {
		return id
	}
	var b [12]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return "req_" + hex.EncodeToString(b[:])
}

// plainToken reports whether s holds only letters, digits and -_.:/+=
// (what request ids are made of): anything else would be echoed into a
// header and the logs as the client wrote it.
func plainToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:/+=", c) >= 0) {
			return false
		}
	}
	return true
}

// metricMethod is a request's method as a metric label: HTTP's own
// methods, anything else "other" (a client may send any token).
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodHead, http.MethodOptions:
		return m
	}
	return "other"
}

// metricPath maps a request path to a label of bounded cardinality: the
// proxy's own endpoints as they are, pass-through paths by their OpenAI API
// resource (/v1/models/gpt-4o → /v1/models), any other /v1 path "/v1/other"
// and anything else "other". Only known names become labels: a client
// could otherwise mint a new series with every path it makes up.
func metricPath(p string) string {
	switch p {
	case "/v1/chat/completions", "/v1/responses", "/v1/responses/input_tokens", "/v1/messages", "/v1/messages/count_tokens",
		"/healthz", "/readyz", "/metrics", "/v1/skills", "/v1/skills/route", "/v1/skills/reload", "/mcp":
		return p
	}
	rest, ok := strings.CutPrefix(p, "/v1/")
	if !ok {
		return "other"
	}
	seg, sub, _ := strings.Cut(rest, "/")
	if seg == "chat" {
		// chat/completions/{id}[/messages]: stored completions
		if sub, _, _ = strings.Cut(sub, "/"); sub == "completions" {
			return "/v1/chat/completions"
		}
		return "/v1/other"
	}
	if label, ok := resourceLabels[seg]; ok {
		return label
	}
	return "/v1/other"
}

// resourceLabels are the metric labels of the OpenAI API's top-level
// resources (https://platform.openai.com/docs/api-reference; chat, the one
// two-segment resource, is handled in metricPath). "skills" is also
// OpenAI's: /v1/skills/{id} passes through.
var resourceLabels = func() map[string]string {
	m := map[string]string{}
	for _, r := range []string{
		"assistants", "audio", "batches", "chatkit", "completions", "containers",
		"conversations", "embeddings", "evals", "files", "fine_tuning", "images",
		"models", "moderations", "organization", "realtime", "responses", "skills",
		"threads", "uploads", "vector_stores", "videos",
	} {
		m[r] = "/v1/" + r
	}
	return m
}()

func (s *Server) logRequest(c echo.Context, info *reqInfo, elapsed time.Duration) {
	ctx := c.Request().Context()
	level := slog.LevelInfo
	if info.path == "/healthz" || info.path == "/readyz" || info.path == "/metrics" {
		level = slog.LevelDebug // probes would drown the log
	}
	if info.status >= 500 && info.path != "/readyz" { // 503 there is a state, not a failure
		level = slog.LevelWarn
	}
	if info.outcome == outcomeStreamError || info.outcome == outcomeShutdown {
		level = slog.LevelWarn // a 200 that did not end well
	}
	if info.toolsRefused != "" {
		level = slog.LevelWarn // every request will fail alike
	}
	hint := s.setupHint(c.Request(), info)
	if hint != "" || info.misdirected {
		// A setup mistake (a key, an upstream, a base URL): every request
		// will fail alike, and some clients (Claude Code) show their own
		// guess, not the answer.
		level = slog.LevelWarn
	}
	if !s.log.Enabled(context.WithoutCancel(ctx), level) {
		return
	}
	attrs := append(s.whoAttrs(c.Request(), info),
		slog.String("method", c.Request().Method),
		slog.String("path", wire.Clip(c.Request().URL.Path)), // the client's, of any length
		slog.Int("status", info.status),
		slog.String("outcome", info.outcome),
		slog.Float64("duration_ms", ms(elapsed)),
	)
	if info.model != "" {
		attrs = append(attrs, slog.String("model", wire.Clip(info.model)))
	}
	if info.upstreamStatus != 0 {
		attrs = append(attrs, slog.Int("upstream_status", info.upstreamStatus))
	}
	if info.compaction {
		attrs = append(attrs, slog.Bool("compaction", true))
	}
	if info.chainedToAnswer {
		attrs = append(attrs, slog.Bool("chained_to_answer", true))
	}
	if info.upstreamRequestID != "" {
		attrs = append(attrs, slog.String("upstream_request_id", info.upstreamRequestID))
	}
	if len(info.usageTotal) > 0 && string(info.usageTotal) != "null" {
		attrs = append(attrs, slog.Any("usage_total", rawJSON(info.usageTotal)))
	}
	if info.arm != "" {
		attrs = append(attrs, slog.String("arm", info.arm))
	}
	if info.api != "" {
		attrs = append(attrs, slog.String("api", info.api))
	}
	if info.routed {
		attrs = append(attrs,
			slog.Bool("stream", info.stream),
			slog.String("strategy", info.strategy),
			slog.String("selected", strings.Join(info.selected, ",")),
			slog.Bool("fallback", info.fallback),
			slog.Bool("ranking_cached", info.cached),
			slog.Int("tokens_added", info.addedTokens),
			slog.Float64("routing_ms", ms(info.routing)),
			slog.Int("rounds", info.rounds),
			slog.Int("tool_calls", info.toolCalls),
		)
		if info.fallbackReason != "" {
			attrs = append(attrs, slog.String("fallback_reason", info.fallbackReason))
		}
		if len(info.loaded) > 0 {
			attrs = append(attrs, slog.String("loaded", strings.Join(info.loaded, ",")))
		}
		if len(info.carried) > 0 {
			attrs = append(attrs, slog.String("carried", strings.Join(info.carried, ",")))
		}
		if info.dropped > 0 {
			attrs = append(attrs, slog.Int("dropped_calls", info.dropped))
		}
		if info.toolsRefused != "" {
			attrs = append(attrs, slog.String("hint", "the upstream refused the request naming the proxy's "+info.toolsRefused+
				" tool: if the model takes no tools, serve with --no-tools (catalog and auto-loaded skills only)"))
		}
		if info.droppedAnswered > 0 {
			attrs = append(attrs, slog.Int("dropped_calls_answered", info.droppedAnswered))
		}
		if info.jsonRounds > 0 {
			attrs = append(attrs, slog.Int("upstream_json_rounds", info.jsonRounds))
		}
		if info.exhausted {
			attrs = append(attrs, slog.Bool("tool_rounds_exhausted", true))
		}
		if info.truncated {
			attrs = append(attrs, slog.Bool("stopped_short", true))
		}
	}
	if hint != "" {
		attrs = append(attrs, slog.String("hint", hint))
	}
	if info.err != "" {
		attrs = append(attrs, slog.String("error", info.err))
	}
	// Message contents only at debug level: they may hold anything.
	if info.query != "" && s.log.Enabled(ctx, slog.LevelDebug) {
		attrs = append(attrs, slog.String("query", info.query))
	}
	s.log.LogAttrs(context.WithoutCancel(ctx), level, "request", attrs...)
}

func ms(d time.Duration) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64), 64)
	return v
}

// targetOf is the upstream a request went to: its routed API's, else the
// one pass-through picks (apiFor).
func (s *Server) targetOf(info *reqInfo, r *http.Request) *upstreamTarget {
	switch info.api {
	case string(wire.APIChat), string(wire.APIResponses):
		return &s.openai
	case string(wire.APIMessages):
		return &s.anthropic
	}
	return apiFor(r).target(s)
}
