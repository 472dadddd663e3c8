// Package mcpserver serves the skill library over the Model Context
// Protocol (official Go SDK): the router's tools (search_skills, load_skill,
// read_skill_resource, skill_execute), every skill's files as skill://
// resources with the Skills Extension (SEP-2640: skills/list, skills/get,
// resources/directory/read), each skill as a prompt, and list_changed
// notifications when the library reloads. Tool answers come from
// router.Session, byte-identical to the proxy's.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/internal/lognotice"
	"github.com/skillrouter/skillrouter/internal/statuswriter"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
)

// Config configures a Server.
type Config struct {
	// Name and Version are the server's implementation info.
	Name, Version string
	// Rewrite carries the options tool answers depend on: DescriptionLimit
	// (search_skills) and Tools (tier 3, set when execution is enabled).
	Rewrite router.RewriteOptions
	// Sandbox answers read_skill_resource; with execution enabled
	// (Sandbox.Enabled) skill_execute is offered too. Nil: a disabled one.
	Sandbox *sandbox.Provider
	// SessionTimeout closes streamable HTTP sessions idle this long; 0 = 30m.
	SessionTimeout time.Duration
	// MaxSessions bounds the streamable HTTP sessions open at once: a new
	// one past it is refused (503) until others end or expire. Sessions
	// outlive their connections, so server.max_connections does not bound
	// them. 0 = DefaultMaxSessions.
	MaxSessions int
	Logger      *slog.Logger
}

// Server is one MCP server over a skill library; it serves any number of
// sessions (one stdio session, or streamable HTTP sessions). Call Sync with
// the library and SetRouter when the routing index is built; tool calls
// wait for the router, everything else works from the library alone.
type Server struct {
	cfg   Config
	log   *slog.Logger
	srv   *mcp.Server
	nonce string // keys tier-3 output folders of this process's sessions

	rt    atomic.Pointer[router.Router]
	ready chan struct{}
	once  sync.Once

	refused  refusals    // new sessions refused at the cap
	reads    readBudgets // bytes of files being read for HTTP clients (see admitRead)
	activity *activity   // HTTP sessions' use, for the cap (see evictIdlest)
	admitMu  sync.Mutex  // guards opening: admission at the session cap (see Handler)
	opening  int         // POSTs without a session being served: sessions they may open

	mu      sync.Mutex // serialises Sync and activation
	view    atomic.Pointer[view]
	active  atomic.Bool      // a client has connected: views are built
	pending *skills.Snapshot // the newest snapshot while not active
}

// New builds a Server with no library; call Sync before serving.
func New(cfg Config) (*Server, error) {
	if cfg.Name == "" {
		cfg.Name = "skillrouter"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 30 * time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Sandbox == nil {
		p, err := sandbox.New(sandbox.Config{}, log)
		if err != nil {
			return nil, err
		}
		cfg.Sandbox = p
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	s := &Server{cfg: cfg, log: log, nonce: hex.EncodeToString(nonce[:]), ready: make(chan struct{}), reads: newReadBudgets(), activity: newActivity()}
	s.refused.notice.Interval = 10 * time.Second
	s.refused.total = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "skillrouter", Name: "mcp_sessions_refused_total",
		Help: "New MCP streamable HTTP sessions refused (503) because the session cap was reached."})
	s.refused.evicted = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "skillrouter", Name: "mcp_sessions_evicted_total",
		Help: "MCP streamable HTTP sessions closed at the session cap, idle for 5 minutes, to admit a new one."})
	s.view.Store(emptyView())

	caps := &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{}, // fixed at start-up: no list_changed
		Resources: &mcp.ResourceCapabilities{ListChanged: true},
		Prompts:   &mcp.PromptCapabilities{ListChanged: true},
	}
	caps.AddExtension(ExtensionID, map[string]any{extensionSettingsDir: true})
	opts := &mcp.ServerOptions{
		Instructions: instructions(cfg.Sandbox.Enabled()),
		Capabilities: caps,
		PageSize:     pageSize,
	}
	if log.Enabled(context.Background(), slog.LevelDebug) {
		opts.Logger = log // the SDK logs every session at info
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Title: "skillrouter skill library", Version: cfg.Version}, opts)
	s.srv.AddReceivingMiddleware(agreedVersion, s.plainerErrors)
	s.addTools()
	if err := s.addExtension(); err != nil {
		return nil, err
	}
	return s, nil
}

// initializeNewest is the newest version an initialize handshake agrees
// on: later versions (2026-07-28, stateless) have no initialize.
const initializeNewest = "2025-11-25"

// agreedVersion records an initialize asking for a version newer than
// initialize agrees on as the version agreed. The SDK (v1.8.0) decides who
// hears notifications/…/list_changed from the version a client asked for:
// a session that asked for 2026-07-28 and agreed on 2025-11-25 was treated
// as a stateless one and never told of a reload.
func agreedVersion(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.ServerRequest[*mcp.InitializeParams]); ok && r.Params != nil && r.Params.ProtocolVersion > initializeNewest {
			r.Params.ProtocolVersion = initializeNewest
		}
		return next(ctx, method, req)
	}
}

// pageSize bounds resources/list, prompts/list and skills/list pages.
const pageSize = 200

// SDK returns the underlying SDK server (for transports other than stdio
// and streamable HTTP, and in-memory tests).
func (s *Server) SDK() *mcp.Server {
	s.activate()
	return s.srv
}

// SetRouter makes tool calls answerable. The router must rank the library
// given to Sync (it may lag a reload briefly).
func (s *Server) SetRouter(r *router.Router) {
	if r == nil {
		return
	}
	s.rt.Store(r)
	s.once.Do(func() { close(s.ready) })
}

// router waits for SetRouter or ctx.
func (s *Server) router(ctx context.Context) (*router.Router, error) {
	select {
	case <-s.ready:
		return s.rt.Load(), nil
	default:
	}
	select {
	case <-s.ready:
		return s.rt.Load(), nil
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return nil, errors.New("the skill index is still being built; try again shortly")
		}
		return nil, fmt.Errorf("the request was cancelled while the skill index was being built: %w", context.Cause(ctx))
	}
}

// Handler serves streamable HTTP. Requests end when ctx ends, so a server
// shutting down is not held up by clients' open event streams.
//
// clientID names the client a request comes from (proxy.Server.ClientID:
// a digest of its key): a session answers only the client that opened it
// (MCP's security best practices bind sessions to the user), so one key's
// holder can neither use nor end another's (at the session cap, a new
// session closes the client's own idle ones first, then anyone's idlest).
// nil, or "": no binding (no client keys: one trust domain).
//
// It does not check Host or Origin (DNS rebinding): the caller serves it
// behind the checks its API has (proxy.Server.Protect), so that the hosts
// an operator allows (server.allowed_hosts, a reverse proxy keeping the
// client's Host) reach /mcp as they reach the API. The SDK's own check
// would refuse any Host but localhost on a loopback listener.
func (s *Server) Handler(ctx context.Context, clientID func(*http.Request) string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: s.cfg.SessionTimeout, DisableLocalhostProtection: true})
	limit := s.cfg.MaxSessions
	if limit <= 0 {
		limit = DefaultMaxSessions
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		client := ""
		if clientID != nil {
			client = clientID(r)
		}
		head := peek(r)
		headID := json.RawMessage(gjson.GetBytes(head, "id").Raw)
		if bad, ok := inexactID(head); ok {
			rpcError(w, http.StatusBadRequest, bad, -32600, "invalid request: "+badNumericID)
			return
		}
		if r.Method == http.MethodPost && id == "" {
			if !initializes(r, head) {
				// Only an initialize opens a session; anything else without
				// one is refused as the transport says servers that need
				// sessions should (the SDK answered it in a session of its own).
				rpcError(w, http.StatusBadRequest, headID, -32600, noSession)
				return
			}
			// The initialize opens a session. Each holds a place under the
			// cap until it is answered, so two at the cap neither pass it
			// nor close the same idle session; the lock is held only to
			// count (O(sessions), paid only by these), not while the
			// request is read and served, which a slow client could
			// stretch to the body timeout for everyone.
			if !s.reserve(limit, client) {
				w.Header().Set("Retry-After", "60")
				rpcError(w, http.StatusServiceUnavailable, headID, -32000, fmt.Sprintf("too many MCP sessions are open (%d): end unused ones (DELETE /mcp) or retry later", limit))
				s.refused.note(s.log, limit)
				return
			}
			defer s.unreserve()
		}
		rctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		s.activate()
		sw := &statuswriter.Writer{ResponseWriter: w}
		if id != "" {
			if !s.activity.ownedBy(id, client) {
				// Another key's session: as unknown to this client as a
				// closed one (its existence is not confirmed either).
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			if initializes(r, head) {
				// The SDK answers it with error code 0, which JSON-RPC has
				// not. (An unknown session's is 404 above, as any request.)
				rpcError(w, http.StatusBadRequest, headID, -32600, alreadyInitialized)
				return
			}
			if batch(head) && s.batchesEnded(id) {
				// The SDK goes by MCP-Protocol-Version, taking 2025-03-26
				// (which had batches) when it is missing; the session's own
				// version is known.
				rpcError(w, http.StatusBadRequest, nil, -32600, noBatches)
				return
			}
			// In flight from here: a read waiting for the budget is too.
			end := s.activity.begin(id)
			defer func() { end(r.Method, sw.Status) }()
		}
		release, err := s.admitRead(rctx, head)
		if errors.Is(err, errReadBatch) {
			rpcError(sw, http.StatusBadRequest, nil, -32600, errReadBatch.Error())
			return
		}
		if err != nil {
			// The client went away, or the server is stopping, while it waited.
			rpcError(sw, http.StatusServiceUnavailable, headID, -32000, "the server is stopping")
			return
		}
		if release != nil {
			defer release() // once the answer is written: ServeHTTP returns after it
		}
		h.ServeHTTP(sw, r.WithContext(rctx))
		if id == "" && sw.Status == http.StatusOK {
			if opened := w.Header().Get("Mcp-Session-Id"); opened != "" {
				s.activity.opened(opened, client, limit, s.openIDs)
			}
		}
	})
}

// batch reports whether head is a JSON-RPC batch.
func batch(head []byte) bool {
	head = bytes.TrimSpace(head)
	return len(head) > 0 && head[0] == '['
}

// batchesEnded reports whether session id agreed on a protocol version
// without JSON-RPC batches (2025-06-18 or later).
func (s *Server) batchesEnded(id string) bool {
	for ss := range s.srv.Sessions() {
		if ss.ID() == id {
			p := ss.InitializeParams()
			return p != nil && negotiated(p.ProtocolVersion) >= batchesUntil
		}
	}
	return false // gone: the SDK answers 404
}

// negotiated is the version the SDK agrees on at an initialize asking for
// asked (agreedVersion having capped it): asked when the SDK speaks it, else
// its newest that an initialize agrees on.
func negotiated(asked string) string {
	vs := mcp.SupportedProtocolVersions() // newest first
	if asked <= initializeNewest && slices.Contains(vs, asked) {
		return asked
	}
	for _, v := range vs {
		if v <= initializeNewest {
			return v
		}
	}
	return asked
}

// noSession answers a POST without Mcp-Session-Id that is not an initialize.
const noSession = "invalid request: no Mcp-Session-Id: open a session first with an initialize request (Content-Type: application/json), then send its id with every request"

// inexactID returns the id of a request in head (one message, or a
// batch's) whose numeric id the SDK would answer changed (see exactID).
func inexactID(head []byte) (json.RawMessage, bool) {
	var bad json.RawMessage
	eachMessage(head, func(m gjson.Result) {
		if id := m.Get("id"); bad == nil && m.Get("method").Exists() && id.Type == gjson.Number && !exactID(id.Float()) {
			bad = json.RawMessage(id.Raw)
		}
	})
	return bad, bad != nil
}

// rpcError answers an HTTP request with status and a JSON-RPC error for
// the request id (nil: null), as answer writes them on stdio.
func rpcError(w http.ResponseWriter, status int, id json.RawMessage, code int64, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = answer(w, id, code, message)
}

// reserve holds a place under the session cap for a POST without a
// session, closing the idlest session to make room when the POST is an
// initialize (evictIdlest: client's own first); false when there is none.
func (s *Server) reserve(limit int, client string) bool {
	s.admitMu.Lock()
	defer s.admitMu.Unlock()
	if s.sessions()+s.opening >= limit && !s.evictIdlest(client) {
		return false
	}
	s.opening++
	return true
}

// unreserve gives the place back once the POST is answered: a session it
// opened is counted by sessions() from then on.
func (s *Server) unreserve() {
	s.admitMu.Lock()
	s.opening--
	s.admitMu.Unlock()
}

// refusals counts sessions refused at the cap and logs them the way the
// connection cap does: the first, then at most one line per 10 s with the
// count since (a client opening sessions in a loop must not flood the log).
type refusals struct {
	total   prometheus.Counter
	evicted prometheus.Counter // idle sessions closed to admit a new one
	notice  lognotice.Every
}

func (r *refusals) note(log *slog.Logger, limit int) {
	r.total.Inc()
	if n, due := r.notice.Note(); due {
		log.Warn("mcp: new sessions refused: too many open (mcp sessions cap)", "max_sessions", limit, "refused", n)
	}
}

// Collectors are the server's metrics, for the registry of the process that
// serves it: skillrouter_mcp_sessions_open,
// skillrouter_mcp_sessions_evicted_total and
// skillrouter_mcp_sessions_refused_total.
func (s *Server) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.refused.total, s.refused.evicted, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "skillrouter", Name: "mcp_sessions_open", Help: "MCP streamable HTTP sessions open.",
	}, func() float64 { return float64(s.sessions()) })}
}

// DefaultMaxSessions is the default bound on open streamable HTTP sessions
// (a few KB to tens of KB each).
const DefaultMaxSessions = 1000

// sessions counts the open sessions.
func (s *Server) sessions() int {
	n := 0
	for range s.srv.Sessions() {
		n++
	}
	return n
}

// conversation is the tier-3 conversation id of an MCP session: one output
// folder per session, distinct across processes.
func (s *Server) conversation(ss *mcp.ServerSession) string {
	id := ""
	if ss != nil {
		id = ss.ID()
	}
	sum := sha256.Sum256([]byte(s.nonce + "\x00" + id))
	return "mcp-" + hex.EncodeToString(sum[:12])
}

// Sync serves snap: resources and prompts that appeared, changed or went
// away are added, replaced or removed, which sends
// notifications/resources/list_changed and notifications/prompts/list_changed
// to connected sessions. Safe to call from a Registry.OnReload subscriber.
//
// Until the first client connects (Handler, RunStdio or SDK), Sync only
// notes snap: the view of a large library holds ~10 MB and takes a stat of
// every SKILL.md to build, which a server whose clients never use MCP
// should not pay for. The first connection builds it.
func (s *Server) Sync(snap *skills.Snapshot) {
	if snap == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active.Load() {
		s.pending = snap
		return
	}
	s.apply(snap)
}

// activate builds the view of the newest snapshot Sync was given, once.
func (s *Server) activate() {
	if s.active.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active.Load() {
		return
	}
	if s.pending != nil {
		s.apply(s.pending)
		s.pending = nil
	}
	s.active.Store(true) // after apply: the fast path must see the view
}

// apply serves snap (see Sync). s.mu is held.
func (s *Server) apply(snap *skills.Snapshot) {
	old := s.view.Load()
	nv := buildView(snap, s.cfg.Rewrite.DescriptionLimit, s.log)
	s.view.Store(nv)
	s.applyResources(old, nv)
	s.applyPrompts(old, nv)
}

// current returns the view being served.
func (s *Server) current() *view {
	s.activate()
	return s.view.Load()
}
