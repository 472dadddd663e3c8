package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultMaxToolRounds   = 4
	DefaultBodyLimit       = 32 << 20 // the Anthropic Messages API's own limit: a long Claude Code session with screenshots or PDFs passes 8 MiB
	DefaultUpstreamTimeout = 10 * time.Minute
	DefaultConnectTimeout  = 10 * time.Second
	DefaultHeaderTimeout   = time.Minute
	DefaultIdleTimeout     = 5 * time.Minute
	DefaultUpstream        = "http://127.0.0.1:11434/v1"
	// maxUpstreamBody bounds a non-streaming chat answer read into memory.
	maxUpstreamBody = 64 << 20
)

// Config configures a Server. Only Upstream and Rewriter are required.
type Config struct {
	// Upstream is the base URL of the OpenAI-compatible API, including its
	// version prefix: a request for /v1/models goes to Upstream + "/models".
	Upstream *url.URL
	// APIKey is sent as "Authorization: Bearer APIKey" when the client sends
	// no Authorization header, or always when OverrideAuth is set.
	APIKey       string
	OverrideAuth bool
	// ForwardHeaders names request headers that go upstream although the
	// proxy keeps them by default (earlierHops: Cookie, the forwarding and
	// client-address headers), for an upstream that needs them (a gateway
	// that authenticates by cookie).
	ForwardHeaders []string
	// MergeSkillBodies puts the skill bodies a rewrite adds to a Chat
	// request inside its last user message from the start, for an upstream
	// that refuses them as messages of their own (Mistral's API, strict
	// chat templates), which is otherwise found out model by model from
	// its first refusal (envelopes.go).
	MergeSkillBodies bool
	// AnthropicUpstream is the base URL of the Anthropic Messages API,
	// including its version prefix (https://api.anthropic.com/v1): a
	// request for /v1/messages goes to AnthropicUpstream + "/messages".
	// nil: Upstream (Ollama and other local servers serve all three APIs).
	AnthropicUpstream *url.URL
	// AnthropicAPIKey is sent as "x-api-key" on Anthropic requests whose
	// client sends neither x-api-key nor Authorization, or always when
	// OverrideAuth is set. "": APIKey, if the Anthropic upstream is Upstream.
	AnthropicAPIKey string
	// Transport sends upstream requests; nil uses a tuned clone of http.DefaultTransport.
	Transport http.RoundTripper
	// PassThrough lists the requests relayed to the upstream as the client
	// addressed them: every /v1 path the proxy does not route, and its
	// read-backs of stored responses and conversation items. Patterns are
	// "[METHOD ]PATH", PATH relative to /v1/ (passallow.go); nil: PassAll,
	// everything; empty: nothing. Any other such request gets 404.
	PassThrough []string

	// Rewriter routes and rewrites chat requests (the only arm when AB is nil).
	Rewriter Rewriter
	// Library backs /v1/skills and /v1/skills/reload; nil disables those endpoints (404).
	Library Library
	// AB splits chat traffic between arms; nil = no split.
	AB *ABConfig
	// UpstreamChecks are reported in /readyz's body (not its status).
	UpstreamChecks []UpstreamCheck

	// MaxToolRounds bounds server-side tool rounds per request (default 4;
	// negative = none: the first answer is final).
	MaxToolRounds int
	// ProxyTool reports whether a tool name is one the proxy offers on some
	// turn (default router.IsTool; the server adds the sandbox's): its
	// calls left unanswered in state stored upstream are the proxy's to
	// answer (state.go), whatever this turn offers.
	ProxyTool func(name string) bool
	// BodyLimit bounds chat request bodies in bytes (default 32 MiB); larger → 413.
	BodyLimit int64
	// BodyMemory bounds the routed request bodies held at once, in bytes
	// (default 4 × BodyLimit; negative: no bound); a request that does not
	// fit waits up to 30 s, then gets 503 server_busy (see bodyBudget).
	BodyMemory int64
	// Upstream timeouts (each → 504 upstream_timeout). There is no bound on
	// a whole stream: a healthy one may run for hours.
	//
	// UpstreamTimeout bounds a non-streaming model exchange, headers and
	// body (the headers come with the whole answer), and the wait for the
	// headers of a pass-through request (default 10 min).
	UpstreamTimeout time.Duration
	// ConnectTimeout bounds connecting to the upstream, TLS included
	// (default 10 s); used by the default transport (see NewTransport).
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for the response headers of a streamed
	// model request (default 1 min): a hung upstream fails within it.
	HeaderTimeout time.Duration
	// IdleTimeout bounds the silence between two reads of an upstream body
	// once its headers came, streamed or not (default 5 min: reasoning
	// models can think for minutes without sending a byte).
	IdleTimeout time.Duration

	// Access says who may use the proxy: browser origins, Host names,
	// client keys, the admin token, and the request body deadline.
	Access Access
	// MetricsElsewhere: /metrics is not served with the API (cmd/router
	// serves MetricsHandler on server.metrics_listen instead).
	MetricsElsewhere bool

	// Logger receives one line per request (nil: slog.Default()).
	Logger *slog.Logger
	// Registry receives the proxy's metrics and is served on /metrics
	// (nil: a new registry with Go and process collectors).
	Registry *prometheus.Registry

	// Stage, if set, is called as each stage of a routed request begins
	// ("skillrouter.parse"); the request goes on with the context it
	// returns, and end is called when the stage is over. Tracing hooks in
	// here (cmd/router: an OpenTelemetry span per stage).
	Stage func(ctx context.Context, name string) (_ context.Context, end func())
	// Ended, if set, is called when a request ends otherwise than
	// complete, with its outcome as the access log and
	// skillrouter_requests_total name it ("stream_error", "shutdown",
	// "client_closed", "passthrough_refused"), in the request's context: a
	// stream that failed after its 200 went out is a failure its status
	// does not show (cmd/router: the request's span records it).
	Ended func(ctx context.Context, outcome string)

	// ModifyRequest, if set, edits every outgoing upstream request after the
	// proxy has built it (URL, headers, body), like httputil.ReverseProxy.Rewrite.
	ModifyRequest func(*http.Request)
	// ModifyResponse, if set, sees every upstream response before the proxy
	// reads it. An error fails the request with 502.
	ModifyResponse func(*http.Response) error
}

// Server is the OpenAI-compatible proxy. It is an http.Handler; create it with New.
type Server struct {
	cfg       Config
	openai    upstreamTarget // Chat Completions, Responses and pass-through
	anthropic upstreamTarget // Anthropic Messages
	transport http.RoundTripper
	log       *slog.Logger
	metrics   *metrics
	ab        *splitter
	echo      *echo.Echo
	arms      []*armState   // every configured arm, for readiness
	presence  skillMemory   // skills active in state stored upstream (presence.go)
	turns     skillMemory   // skills the model loaded in a conversation's turn (turns.go)
	abKeys    skillMemory   // the A/B key a stored response's conversation was assigned by (abKey)
	answers   skillMemory   // a stream's announced response id -> its answer's (rememberAnswer)
	marks     wire.Marks    // what the proxy writes, as stored objects show it (stored.go)
	pass      passRules     // what is relayed as the client addressed it (passallow.go)
	holdLimit time.Duration // how long a stream's start is held at most (stream.go)
	// keepAliveEvery is how long a routed stream may stay silent once
	// committed before a keep-alive comment goes out (stream.go).
	keepAliveEvery time.Duration
	keys           atomic.Pointer[[]string] // the client keys (guard.go): Access.APIKeys, then SetAPIKeys'
	clientIDSecret []byte                   // Access.ClientIDSecret, or random
	// mergedModels: the models for which the OpenAI-format upstream
	// refused skill envelopes as Chat messages of their own; their Chat
	// requests get them inside the last user message from then on
	// (envelopes.go).
	mergedModels modelSet

	// Shutdown: Drain cancels drainCtx, which ends every request context.
	drainCtx    context.Context
	drainCancel context.CancelCauseFunc
	inflight    inflightCounter
	bodies      *bodyBudget // routed request bodies held (bodymem.go)

	// Background work that outlives its request (hidden.go), ended by Finish.
	bg struct {
		mu     sync.Mutex
		closed bool
		wg     sync.WaitGroup
		ctx    context.Context // ends with drainCtx, or when Finish gives up
		cancel context.CancelFunc
	}
}

// New validates cfg, applies defaults and builds the routes.
func New(cfg Config) (*Server, error) {
	if err := checkUpstream("Upstream", cfg.Upstream); err != nil {
		return nil, err
	}
	if cfg.AnthropicUpstream != nil {
		if err := checkUpstream("AnthropicUpstream", cfg.AnthropicUpstream); err != nil {
			return nil, err
		}
	}
	if cfg.Rewriter == nil {
		return nil, errors.New("proxy: Config.Rewriter is required")
	}
	if cfg.PassThrough == nil {
		cfg.PassThrough = []string{PassAll}
	}
	pass, err := parsePassThrough(cfg.PassThrough)
	if err != nil {
		return nil, fmt.Errorf("proxy: Config.PassThrough: %w", err)
	}
	if cfg.ProxyTool == nil {
		cfg.ProxyTool = router.IsTool
	}
	if cfg.MaxToolRounds == 0 {
		cfg.MaxToolRounds = DefaultMaxToolRounds
	} else if cfg.MaxToolRounds < 0 {
		cfg.MaxToolRounds = 0
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.BodyMemory == 0 {
		cfg.BodyMemory = 4 * cfg.BodyLimit
	}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Access.BodyTimeout == 0 {
		cfg.Access.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.Access.WriteTimeout == 0 {
		cfg.Access.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = newDefaultRegistry()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, transport: cfg.Transport, pass: pass, holdLimit: defaultHoldLimit, keepAliveEvery: defaultKeepAlive,
		marks: wire.Marks{Tool: cfg.ProxyTool, CatalogStart: skills.CatalogStart, Envelope: skills.IsEnvelope,
			ToolResult: router.IsToolResult}}
	keys := slices.Clone(cfg.Access.APIKeys)
	s.keys.Store(&keys)
	s.clientIDSecret = []byte(cfg.Access.ClientIDSecret)
	if len(s.clientIDSecret) == 0 {
		s.clientIDSecret = make([]byte, 32)
		rand.Read(s.clientIDSecret) // never fails (crypto/rand)
	}
	s.drainCtx, s.drainCancel = context.WithCancelCause(context.Background())
	s.bg.ctx, s.bg.cancel = context.WithCancel(s.drainCtx)
	hops := keptHops(cfg.ForwardHeaders)
	s.openai = upstreamTarget{base: baseURL(cfg.Upstream), apiKey: cfg.APIKey, keyHeader: "Authorization", overrideAuth: cfg.OverrideAuth, hops: hops}
	s.anthropic = upstreamTarget{base: s.openai.base, apiKey: cfg.AnthropicAPIKey, keyHeader: "X-Api-Key", overrideAuth: cfg.OverrideAuth, hops: hops}
	if cfg.AnthropicUpstream != nil {
		s.anthropic.base = baseURL(cfg.AnthropicUpstream)
	} else if s.anthropic.apiKey == "" {
		s.anthropic.apiKey = cfg.APIKey
	}
	if s.transport == nil {
		s.transport = NewTransport(cfg.ConnectTimeout)
	}
	ab, err := newSplitter(cfg.AB, cfg.Rewriter)
	if err != nil {
		return nil, err
	}
	s.ab = ab
	s.arms = ab.allArms()
	s.bodies = newBodyBudget(cfg.BodyMemory)
	s.metrics, err = newMetrics(cfg.Registry, cfg.Library, &s.bodies.held)
	if err != nil {
		return nil, err
	}
	s.metrics.preset(ab.labels())
	s.echo = s.routes()
	return s, nil
}

func checkUpstream(field string, u *url.URL) error {
	if u == nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("proxy: Config.%s must be an absolute URL", field)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("proxy: %s scheme %q: want http or https", field, u.Scheme)
	}
	return nil
}

// baseURL is u without a trailing slash, for appending paths.
func baseURL(u *url.URL) *url.URL {
	b := *u
	b.Path = strings.TrimRight(b.Path, "/")
	b.RawPath = ""
	return &b
}

// stage begins a stage of a request (see Config.Stage).
func (s *Server) stage(ctx context.Context, name string) (context.Context, func()) {
	if s.cfg.Stage == nil {
		return ctx, func() {}
	}
	return s.cfg.Stage(ctx, name)
}

// ServeHTTP serves the proxy's routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// MetricsHandler serves the Prometheus registry (what /metrics serves).
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }

// Registry returns the Prometheus registry the proxy reports to.
func (s *Server) Registry() *prometheus.Registry { return s.cfg.Registry }

// routes wires the endpoints. Echo prefers static routes over /v1/*, so the
// proxy's own /v1/skills endpoints and chat completions win over pass-through
// (for every method: see own).
func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.httpError
	e.Pre(mergeSlashes)
	e.Use(s.observe, s.boundWrites, s.guard, s.confine)

	own(e, "/healthz", endpoint{http.MethodGet, s.healthz})
	own(e, "/readyz", endpoint{http.MethodGet, s.readyz})
	if !s.cfg.MetricsElsewhere {
		own(e, "/metrics", endpoint{http.MethodGet, echo.WrapHandler(s.metrics.handler())})
	}
	// Only POST: other methods on chat completions are OpenAI's stored
	// completions (GET lists them), passed through.
	e.POST("/v1/chat/completions", s.serveAPI(chatAPI{}))
	// Only POST: GET /v1/responses and the other methods are stored
	// responses, passed through; a GET of one, or of its input items,
	// shows the client's request rather than the proxy's (stored.go).
	// The read-backs relay the client's GET with the operator's key, as
	// pass-through does: Config.PassThrough decides them too.
	e.POST("/v1/responses", s.serveAPI(responsesAPI{}))
	e.GET("/v1/responses/:id", s.passable(s.readStored(storedResponse)))
	e.GET("/v1/responses/:id/input_items", s.passable(s.readStored(storedItems)))
	// A conversation's items hold every round's, the proxy's among them;
	// other methods on them (POST adds items, DELETE) pass through.
	e.GET("/v1/conversations/:id/items", s.passable(s.readStored(storedItems)))
	e.GET("/v1/conversations/:id/items/:item", s.passable(s.readStored(storedItem)))
	// Counted as rewritten, so the count matches what a request with the
	// same body sends upstream (as /v1/messages/count_tokens).
	e.POST("/v1/responses/input_tokens", s.serveAPI(responsesAPI{}))
	// Anthropic Messages; the query string (Claude Code's ?beta=true) is
	// forwarded as it is. Other /v1/messages/* paths (batches) pass through
	// to the Anthropic upstream.
	e.POST("/v1/messages", s.serveAPI(messagesAPI{}))
	e.POST("/v1/messages/count_tokens", s.serveAPI(messagesAPI{}))
	// Only GET (and HEAD): other methods on /v1/skills are OpenAI's Skills
	// API (POST creates a skill), passed through.
	e.GET("/v1/skills", s.listSkills)
	e.HEAD("/v1/skills", s.listSkills)
	own(e, "/v1/skills/route", endpoint{http.MethodPost, s.explainRoute})
	own(e, "/v1/skills/reload", endpoint{http.MethodPost, s.reload})
	// A base URL with /v1 twice (ANTHROPIC_BASE_URL=.../v1: Claude Code
	// adds the /v1 itself) would pass through unrouted, without skills.
	e.Any("/v1/v1/*", s.doubledPrefix)
	// The skills' MCP server is at /mcp; /v1/mcp is a base URL's habit.
	e.Any("/v1/mcp", s.misplacedMCP)
	e.Any("/v1/mcp/*", s.misplacedMCP)
	e.Any("/v1/*", s.passable(s.passthrough))
	return e
}

// doubledPrefix answers a request under /v1/v1/: 404, saying which base
// URL each client takes.
func (s *Server) doubledPrefix(c echo.Context) error {
	r := c.Request()
	werr := &wire.Error{Status: http.StatusNotFound, Kind: wire.KindInvalidRequest, Code: "unknown_path",
		Message: fmt.Sprintf("unknown path %s %s: the base URL has /v1 twice; Claude Code's ANTHROPIC_BASE_URL is the address without /v1 (it adds /v1), OpenAI clients' base URL ends in one /v1",
			r.Method, wire.Clip(r.URL.Path))}
	return s.misdirected(c, werr)
}

// misplacedMCP answers /v1/mcp: 404 naming /mcp.
func (s *Server) misplacedMCP(c echo.Context) error {
	r := c.Request()
	return s.misdirected(c, &wire.Error{Status: http.StatusNotFound, Kind: wire.KindInvalidRequest, Code: "unknown_path",
		Message: fmt.Sprintf("unknown path %s %s: the skills MCP server is at /mcp (http://HOST:PORT/mcp, without /v1)", r.Method, wire.Clip(r.URL.Path))})
}

// misdirected answers a request only a wrong base URL sends with werr,
// logged as a warning with its hint.
func (s *Server) misdirected(c echo.Context, werr *wire.Error) error {
	info := requestInfo(c)
	info.status, info.err, info.misdirected = werr.Status, werr.Message, true
	writeError(c.Response(), apiFor(c.Request()), werr)
	return nil
}

// apiPaths are the API paths a base URL without /v1 sends to the proxy's
// root (/chat/completions), for the 404's hint.
var apiPaths = []string{"/chat/completions", "/responses", "/messages", "/models", "/embeddings", "/completions"}

// httpError renders Echo's own errors (404, 405, panics) in the error
// envelope of the API the path belongs to.
func (s *Server) httpError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := http.StatusInternalServerError, "internal error"
	var he *echo.HTTPError
	if errors.As(err, &he) {
		status = he.Code
		msg = fmt.Sprint(he.Message)
	}
	kind := wire.KindInvalidRequest
	if status >= 500 {
		kind = wire.KindServer
	}
	code := strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_")
	switch status {
	case http.StatusNotFound:
		p := c.Request().URL.Path
		msg = fmt.Sprintf("unknown path %s %s", c.Request().Method, wire.Clip(p))
		if slices.ContainsFunc(apiPaths, func(a string) bool { return p == a || strings.HasPrefix(p, a+"/") }) {
			msg += fmt.Sprintf("; did you mean /v1%s? A client that appends %s takes a base URL ending in /v1 (http://HOST:PORT/v1)", wire.Clip(p), wire.Clip(p))
			if p == "/messages" || strings.HasPrefix(p, "/messages/") {
				msg += "; the Anthropic SDKs and Claude Code (ANTHROPIC_BASE_URL) take the address without /v1 and add /v1/messages themselves"
			}
			_ = s.misdirected(c, &wire.Error{Status: status, Kind: kind, Code: "unknown_path", Message: msg})
			return
		}
	case http.StatusMethodNotAllowed:
		msg = methodNotAllowedMessage(c)
	}
	writeError(c.Response(), apiFor(c.Request()), &wire.Error{Status: status, Kind: kind, Code: code, Message: msg})
}

// NewTransport is the transport New uses when Config.Transport is nil:
// http.DefaultTransport with room for the concurrency an LLM gateway sees
// (one long-lived connection per in-flight stream), connecting (TCP and
// TLS) within connect (0: DefaultConnectTimeout). Callers that wrap it
// (tracing) pass the result as Config.Transport.
func NewTransport(connect time.Duration) http.RoundTripper {
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	t.IdleConnTimeout = 90 * time.Second
	t.TLSHandshakeTimeout = connect
	t.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
	// A rewritten request is 10–40 KB. With the default 4 KB buffer, the
	// body overflows it and the rest goes through net.TCPConn.ReadFrom,
	// which allocates a 32 KB copy buffer for every request.
	t.WriteBufferSize = 64 << 10
	return t
}
