package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/redact"
	"github.com/skillrouter/skillrouter/mcpserver"
	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/telemetry"
	"github.com/skillrouter/skillrouter/tokens"
	"github.com/skillrouter/skillrouter/wire"
)

// watchDebounce batches bursts of file events (an editor saving, git checkout).
const watchDebounce = 300 * time.Millisecond

// watchLibrary reloads the library on file changes until ctx ends. Servers
// start it once the routing index is built, so that its walk (a watch per
// folder) does not compete with the build; Watch loads what changed since
// the library was read. otherwise says what to do when it cannot run.
func watchLibrary(ctx context.Context, reg *skills.Registry, log *slog.Logger, otherwise string) {
	go func() {
		if err := reg.Watch(ctx, watchDebounce); err != nil && ctx.Err() == nil {
			log.Warn("skills: watching the library failed; "+otherwise, "err", err)
		}
	}()
}

func newServeCmd() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--listen ADDR] [--upstream URL] [--skills DIR]...",
		Short: "Run the proxy that selects skills for every request (Chat Completions, Responses, Anthropic Messages)",
		Long: "Serve on --listen the APIs agent clients speak: OpenAI Chat Completions (/v1/chat/completions),\n" +
			"OpenAI Responses (/v1/responses: Codex CLI) and Anthropic Messages (/v1/messages: Claude Code).\n" +
			"Each request is routed against the skill library (catalog in the system prompt, relevant skill\n" +
			"bodies appended, a load_skill tool the proxy answers itself) and forwarded to --upstream\n" +
			"(Messages to --anthropic-upstream when set); every other /v1/* path passes through.\n" +
			"Also: GET /healthz, /readyz, /metrics, /v1/skills; POST /v1/skills/route, /v1/skills/reload;\n" +
			"MCP (streamable HTTP) at /mcp unless --mcp=false (docs/mcp.md; `router mcp` for stdio).\n\n" +
			"Configuration: defaults < YAML file (--config) < SKILLROUTER_* environment < flags.\n" +
			"A/B arms (ab.arms) and routing.min_score are set in the file only; see examples/config.yaml.\n\n" +
			"Client tools and skills: exec.allowed_tools (--exec-allowed-tools bash,mcp_*) gates the client's\n" +
			"tools of those function names (exact and case-sensitive, x* prefixes, * all): a gated tool is\n" +
			"withheld from the upstream request unless an active skill (auto-loaded, #mentioned, loaded\n" +
			"earlier in the conversation or turn, or by load_skill in this request) lists it in its allowed-tools\n" +
			"frontmatter (Bash or Bash(git:*) enables bash: that comparison ignores case), or tool_choice names\n" +
			"it. It works with or without --exec; empty (the default) gates nothing. Withheld tools are\n" +
			"listed in the X-Skillrouter-Tools-Withheld response header. See docs/sandbox.md.\n\n" +
			"Conversations: the request header X-Skillrouter-Session (else the body's \"user\", or\n" +
			"metadata.user_id for Messages) names the\n" +
			"conversation; tier-3 output folders are keyed by it together with the opening messages.\n\n" +
			configHelp(),
		Example: "  router serve --skills examples/skills\n" +
			"  SKILLROUTER_UPSTREAM_API_KEY=\"$OPENAI_API_KEY\" router serve --skills examples/skills --upstream https://api.openai.com/v1\n" +
			"  router serve --skills builtin:examples   # the example library built into the binary, from any folder\n" +
			"  router serve --config examples/config.yaml --log-format json\n" +
			"  SKILLROUTER_ROUTING_STRATEGY=bm25 router serve --print-config",
		Args: noArgs,
		RunE: runConfigured(&cf, runServe),
	}
	cf.registerServing(cmd.Flags())
	cmd.Flags().SortFlags = false
	return cmd
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log.level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func newLogger(c logConfig, w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.Level) // validated
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		opts.ReplaceAttr = durationMS
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// durationMS writes a duration as milliseconds in a key ending in _ms
// ("took_ms":210), as the access log's duration_ms and routing_ms are: a
// number a log store can aggregate, in one unit, where the JSON handler
// wrote integer nanoseconds under the bare key.
func durationMS(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Key += "_ms"
		a.Value = slog.Float64Value(math.Round(float64(a.Value.Duration())/1e3) / 1e3)
	}
	return a
}

// runServe builds the library, routers and proxy from cfg and serves until
// ctx ends. It listens before the routing index is built (embedding a large
// library with a remote model can take minutes): meanwhile /healthz answers,
// /readyz says 503, and chat requests go upstream unmodified with
// X-Skillrouter-Error saying the index is not ready. The upstream is checked
// at start and every upstream.check_interval, logged when its status
// changes and shown in /readyz's body.
func runServe(ctx context.Context, cfg config, roots []string, logw io.Writer) error {
	// SIGHUP reloads (reloadOnHangup), from the first moment to the last:
	// its default action ends the process at once, with no drain, and a
	// reload asked for while the library loads is done once it has.
	// Never stopped: during the drain the signal is ignored, not fatal.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	log := newLogger(cfg.Log, logw)
	warnMisspelledEnv(log)
	stopping := time.Time{}
	defer func() {
		// The last line of a stop, after every deferred step (the index
		// write, the traces' flush), so a log tells it from a crash.
		if !stopping.IsZero() {
			log.Info("skillrouter stopped", "drain", time.Since(stopping).Round(time.Millisecond))
		}
	}()
	tel, err := telemetry.Setup(ctx, telemetry.Options{Logger: log, ServiceVersion: buildVersion()})
	if err != nil {
		return err
	}
	defer flushTraces(tel, log)
	log = slog.New(tel.LogHandler(log.Handler())) // trace ids in the access log
	// A port in use fails now, not after the index is built.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return listenError(cfg.Listen, err)
	}
	if cfg.Debug.Listen != "" {
		if _, err := serveDebug(ctx, cfg.Debug.Listen, log); err != nil {
			ln.Close()
			return err
		}
	}
	// The upstream is checked at once, beside everything else, so a wrong
	// URL is reported in the first second, not after the index is built.
	checkers, err := cfg.upstreamCheckers(log)
	if err != nil {
		ln.Close()
		return err
	}
	checks := make([]proxy.UpstreamCheck, len(checkers))
	for i, c := range checkers {
		go c.Run(ctx, cfg.Upstream.CheckInterval)
		checks[i] = c
	}
	sv, err := buildServer(ctx, cfg, roots, log, cfg.MCP.Enabled, tel, checks...)
	if err != nil {
		ln.Close()
		return err
	}
	srv, reg, mcpSrv, build := sv.srv, sv.reg, sv.mcp, sv.build
	// After shutdown: an index write the build started (the warm index for
	// the next start) finishes instead of being abandoned half-written.
	defer sv.lib.close()
	var handler http.Handler = srv
	if mcpSrv != nil {
		// /mcp gets the proxy's access checks too (Origin, Host, keys).
		handler = withMCP(srv, srv.Protect(mcpSrv.Handler(ctx, srv.ClientID)))
		for _, c := range mcpSrv.Collectors() {
			_ = srv.Registry().Register(c)
		}
	}
	_ = srv.Registry().Register(buildInfo())
	var metricsSrv *metricsServer
	if cfg.Server.MetricsListen != "" {
		if metricsSrv, err = startMetrics(cfg.Server.MetricsListen, srv.MetricsHandler(), log); err != nil {
			ln.Close()
			return err
		}
		defer metricsSrv.close()
	}
	ln = apiListener(ln, capConnections(cfg.Server.MaxConnections, log), log, srv.Registry())
	snap := reg.Snapshot()
	snap.LogProblems(log, nil)
	if len(snap.Skills()) == 0 {
		// Requests pass through unrouted; most likely a wrong or empty mount.
		log.Warn("the skill library is empty: requests are forwarded without skills until a skill appears",
			"roots", strings.Join(roots, ","), "problems", len(snap.Problems()))
	}
	metricsAddr := "with the API"
	if metricsSrv != nil {
		metricsAddr = "http://" + metricsSrv.ln.Addr().String() + "/metrics"
	}
	for _, k := range []string{"upstream.api_key", "upstream.anthropic_api_key", "embedder.api_key"} {
		if w := cfg.src.where(k); strings.HasPrefix(w, "flag ") {
			// Every user of the machine can read a process's arguments.
			log.Warn("a key given on the command line is visible to every user of this machine (ps, /proc/PID/cmdline): set it in the environment or the config file",
				"key", k, "given", w)
		}
	}
	warnExposedSecrets(log, &cfg)
	if cfg.Upstream.OverrideAuth && cfg.Upstream.APIKey == "" && cfg.Upstream.AnthropicAPIKey == "" {
		// Most likely a variable that was empty ($OPENAI_API_KEY unset).
		log.Warn("upstream.override_auth is set but no upstream key is: the clients' keys are forwarded as they send them; set upstream.api_key (SKILLROUTER_UPSTREAM_API_KEY)")
	}
	if cfg.Exec.Enabled {
		warnNoInterpreters(log)
	}
	if scriptsUseUpstreamKey(cfg) {
		log.Warn("exec is on without client keys: a skill script can send requests to this proxy over loopback, which answers them with the upstream key as it answers any client; set auth.api_keys (scripts never see a client's key)",
			"addr", ln.Addr().String())
	}
	keys := hasClientKeys(cfg)
	if !keys && beyondLoopback(ln.Addr().String()) {
		log.Warn("the API listens beyond this machine without client keys: whoever reaches it uses the upstream (and its key), and with exec runs skill scripts; set auth.api_keys or auth.api_keys_file",
			"addr", ln.Addr().String(), "exec", cfg.Exec.Enabled)
	}
	log.Info("skillrouter proxy listening; preparing the routing index (loading one kept, or building it)", "version", buildVersion(),
		"addr", "http://"+ln.Addr().String()+"/v1", "client_keys", keys, "metrics", metricsAddr, "upstream", redact.URL(cfg.Upstream.URL),
		"skills", len(snap.Skills()), "problems", len(snap.Problems()), "roots", strings.Join(roots, ","),
		"strategy", cfg.Routing.Strategy, "embedder", providerName(cfg.Embedder), "exec", cfg.Exec.Enabled,
		"ab_arms", len(cfg.AB.Arms), "mcp", mcpURL(cfg, ln), "tracing", tel.Exporter())
	hs := httpServer(cfg, tel.Handler(handler, func(r *http.Request) string { return proxy.RouteLabel(r.URL.Path) }),
		log, context.WithoutCancel(ctx))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	go reloadOnHangup(ctx, hup, cfg, sv.lib, srv, log)
	buildc := make(chan error, 1)
	go func() {
		start := time.Now()
		if err := build(ctx); err != nil {
			buildc <- err
			return
		}
		if ctx.Err() == nil {
			log.Info("skillrouter proxy ready", "skills", len(reg.Snapshot().Skills()), "index_build", time.Since(start).Round(time.Millisecond))
			if cfg.Watch {
				watchLibrary(ctx, reg, log, "use POST /v1/skills/reload")
			}
		}
	}()
	var failed error
	select {
	case err := <-errc:
		return err
	case err := <-buildc:
		if ctx.Err() == nil {
			failed = fmt.Errorf("building the routing index: %w", err)
			log.Error("stopping: the routing index could not be built", "err", err)
		}
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for in-flight requests (a second signal exits at once)", "grace", cfg.Server.ShutdownGrace)
	forced := func() {
		log.Warn("second signal: exiting at once; in-flight requests are cut without an answer", "in_flight", srv.InFlight())
	}
	beforeForcedExit.Store(&forced)
	stopping = time.Now()
	shutdown(hs, srv, cfg.Server.ShutdownGrace, log)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return failed
}

// hasClientKeys reports whether clients must present a key (auth.api_keys
// or a keys file).
func hasClientKeys(cfg config) bool { return len(cfg.Auth.APIKeys) > 0 || cfg.Auth.APIKeysFile != "" }

// scriptsUseUpstreamKey reports whether skill scripts (exec) could use the
// upstream key (or a credential in the upstream URL) through this proxy: they reach it on loopback whatever it
// listens on, and without client keys it answers them as any client, with
// the key it adds.
func scriptsUseUpstreamKey(cfg config) bool {
	return cfg.Exec.Enabled && !hasClientKeys(cfg) && (cfg.Upstream.APIKey != "" || cfg.Upstream.AnthropicAPIKey != "" ||
		redact.HasCredential(cfg.Upstream.URL) || redact.HasCredential(cfg.Upstream.AnthropicURL))
}

// mcpURL is where MCP hosts connect ("off" when disabled).
func mcpURL(cfg config, ln net.Listener) string {
	if !cfg.MCP.Enabled {
		return "off"
	}
	return "http://" + ln.Addr().String() + "/mcp"
}

// beyondLoopback reports whether a listener at addr (host:port) is
// reachable from other machines: any address but a loopback one, the
// unspecified ones (0.0.0.0, ::) included.
func beyondLoopback(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// flushTraces exports the spans still buffered when the server stops.
func flushTraces(tel *telemetry.Provider, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		log.Warn("exporting the last traces failed", "err", err)
	}
}

func providerName(c embed.Config) string {
	if c.Provider == "" {
		return embed.ProviderBuiltin
	}
	return c.Provider
}

// buildProxy wires the library, the routers (one per A/B embedder) and tier 3
// into a proxy.Server. The server works at once; its rewriters become ready
// when build has built the routing indexes (the slow part) and warmed them.
func buildProxy(ctx context.Context, cfg config, roots []string, log *slog.Logger) (*proxy.Server, *skills.Registry, func(context.Context) error, error) {
	sv, err := buildServer(ctx, cfg, roots, log, false, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return sv.srv, sv.reg, sv.build, nil
}

// served is what buildServer wires.
type served struct {
	srv   *proxy.Server
	reg   *skills.Registry
	mcp   *mcpserver.Server // nil without MCP
	build func(context.Context) error
	lib   *syncedLibrary // its routers, once built
}

// buildServer is buildProxy plus, with withMCP, the MCP server over the same
// library, default router and sandbox (nil without), and tracing: tel's
// spans around routing, embedding and tool calls, and its transports for the
// upstream and remote embedders (a nil or disabled tel adds nothing). checks
// are reported in /readyz's body.
func buildServer(ctx context.Context, cfg config, roots []string, log *slog.Logger, withMCP bool, tel *telemetry.Provider, checks ...proxy.UpstreamCheck) (*served, error) {
	ropts := cfg.routerOptions(log)
	var wrapEmbedder func(router.Embedder) router.Embedder
	if tel.Enabled() {
		wrapEmbedder = func(e router.Embedder) router.Embedder { return tel.Embedder(e) }
		cfg.Embedder.Transport = tel.Transport(nil, "embedder")
	}
	if _, err := embed.New(cfg.Embedder); err != nil { // a bad embedder config fails before serving
		return nil, err
	}
	// The tokenizer's tables take ~65 ms of a core to build, and the
	// warm-up rewrite before /readyz needs them; reading the library
	// leaves a core idle for much of its time, so they are built meanwhile.
	go tokens.Default()
	reg, err := loadRegistry(ctx, roots, libraryOptions(&cfg))
	if err != nil {
		return nil, err
	}
	reg.SetLogger(log)
	libMetrics := newLibraryMetrics()
	libMetrics.follow(reg)
	ropts.OnIndex = libMetrics.onIndex
	tools, err := newSandbox(cfg, reg, log)
	if err != nil {
		return nil, err
	}
	if len(cfg.Exec.AllowedTools) > 0 {
		log.Info("client tools gated by skills' allowed-tools", "exec.allowed_tools", strings.Join(cfg.Exec.AllowedTools, ","))
	}
	rwOpts := cfg.rewriteOptions(tools)
	var mcpSrv *mcpserver.Server
	if withMCP {
		if mcpSrv, err = newMCPServer(cfg, reg, tools, log); err != nil {
			return nil, err
		}
	}
	// Each router-backed rewriter is a stand-in until build fills it.
	def := &lateRewriter{}
	late := []*lateRewriter{def} // built in this order: the default router first
	embedders := map[*lateRewriter]embed.Config{def: cfg.Embedder}
	var ab *proxy.ABConfig
	if len(cfg.AB.Arms) > 0 {
		ab = &proxy.ABConfig{HashHeader: cfg.AB.Header, Seed: cfg.AB.Seed}
		for _, a := range cfg.AB.Arms {
			// An arm without a strategy runs the default one: named, so
			// that X-Skillrouter-Strategy naming it finds the arm, and an
			// arm asked for with it keeps its label.
			arm := proxy.Arm{Name: a.Name, Percent: a.Percent, Strategy: router.Strategy(cmp.Or(a.Strategy, cfg.Routing.Strategy))}
			// An arm with its own embedder gets its own router over the same
			// registry; one that only changes the strategy shares the main one.
			if a.Embedder != nil {
				if _, err := embed.New(*a.Embedder); err != nil {
					return nil, fmt.Errorf("ab arm %q: %w", a.Name, err)
				}
				lr := &lateRewriter{arm: a.Name}
				ec := *a.Embedder
				if tel.Enabled() {
					ec.Transport = cfg.Embedder.Transport
				}
				late, embedders[lr] = append(late, lr), ec
				arm.Rewriter = traceRewriter(tel, lr, a.Name)
			} else {
				// The main router, its route spans named with the arm.
				arm.Rewriter = traceRewriter(tel, def, a.Name)
			}
			ab.Arms = append(ab.Arms, arm)
		}
	}
	pc := cfg.proxyConfig()
	if tel.Enabled() {
		pc.Transport = tel.Transport(proxy.NewTransport(cfg.Upstream.ConnectTimeout), "upstream")
	}
	access, err := accessConfig(cfg, cfg.Listen)
	if err != nil {
		return nil, err
	}
	lib := &syncedLibrary{Registry: reg}
	pc.Access, pc.MetricsElsewhere = access, cfg.Server.MetricsListen != ""
	pc.Stage, pc.Rewriter, pc.Ended = traceStage(tel), traceRewriter(tel, def, ""), traceEnded(tel)
	pc.Library, pc.AB, pc.Logger, pc.UpstreamChecks = lib, ab, log, checks
	srv, err := proxy.New(pc)
	if err != nil {
		return nil, err
	}
	for _, c := range libMetrics.collectors() {
		if err := srv.Registry().Register(c); err != nil {
			return nil, err
		}
	}
	build := func(ctx context.Context) error {
		var routers []*router.Router
		for _, lr := range late {
			opts := ropts
			if lr.arm != "" && opts.Logger != nil { // its lines say which arm they are about
				opts.Logger = opts.Logger.With("arm", lr.arm)
			}
			r, err := newRouter(ctx, reg, embedders[lr], opts, wrapEmbedder)
			if err != nil {
				if lr.arm != "" {
					return fmt.Errorf("ab arm %q: %w", lr.arm, err)
				}
				return err
			}
			lib.add(r)
			routers = append(routers, r)
			rw := proxy.NewRewriter(r, rwOpts)
			warmUp(ctx, rw, providerName(embedders[lr]) == embed.ProviderBuiltin)
			lr.set(rw)
			if lr == def && mcpSrv != nil {
				mcpSrv.SetRouter(r)
			}
		}
		// Learn executable skills' schemas (--help-json) off the request
		// path: now for the loaded library, and again after every reload.
		startWarm(ctx, cfg, reg, tools)
		packText(ctx, log, reg, routers...)
		return nil
	}
	return &served{srv: srv, reg: reg, mcp: mcpSrv, build: build, lib: lib}, nil
}

// warmUp rewrites a throw-away request before the rewriter goes live, so
// one-time initialisation (tokenizer tables, caches) is not paid by the
// first user. With a remote embedder it ranks with bm25: a start-up makes
// no embedding call the library does not need (none from a prebuilt index).
func warmUp(ctx context.Context, rw proxy.Rewriter, inProcessEmbedder bool) {
	req := &wire.Request{API: wire.APIChat, Model: "warm-up", Turns: []wire.Turn{{Role: "user", Text: "warm up the skill router"}}}
	ov := router.Overrides{}
	if !inProcessEmbedder {
		ov.Strategy = router.StrategyBM25
	}
	_, _ = rw.Rewrite(ctx, req, ov)
}

// lateRewriter stands in for a router's rewriter while its index is built:
// not ready, so /readyz answers 503 and the proxy forwards chat requests
// unmodified with X-Skillrouter-Error; POST /v1/skills/route gets its error.
type lateRewriter struct {
	arm string // A/B arm name; "" for the default router
	rw  atomic.Pointer[proxy.Rewriter]
}

var errIndexBuilding = errors.New("the routing index is still being built")

func (l *lateRewriter) set(rw proxy.Rewriter) { l.rw.Store(&rw) }

func (l *lateRewriter) Ready() bool {
	rw := l.rw.Load()
	return rw != nil && (*rw).Ready()
}

// Degraded is the built rewriter's (router.Router.Degraded).
func (l *lateRewriter) Degraded() string {
	if rw := l.rw.Load(); rw != nil {
		return proxy.Degraded(*rw)
	}
	return ""
}

func (l *lateRewriter) Rewrite(ctx context.Context, req *wire.Request, ov router.Overrides) (*proxy.Rewrite, error) {
	rw := l.rw.Load()
	if rw == nil {
		return nil, errIndexBuilding
	}
	return (*rw).Rewrite(ctx, req, ov)
}

// reloadOnHangup reloads, on each SIGHUP until ctx ends, what serve reads
// from files that change while it runs, as nginx and Prometheus do on
// theirs: the library (as POST /v1/skills/reload does) and the client
// keys of auth.api_keys_file, so that a key revoked there stops working
// without a restart. A key file that cannot be read, or holds no key,
// leaves the keys in force. Without this the signal's default ended the
// process at once, with no drain and no log line.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, cfg config, lib *syncedLibrary, srv *proxy.Server, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if cfg.Auth.APIKeysFile != "" {
			keys, err := clientKeys(cfg)
			if err == nil {
				err = srv.SetAPIKeys(keys)
			}
			if err != nil {
				log.Error("SIGHUP: the client keys in force stay", "err", err)
			} else {
				log.Info("SIGHUP: client keys read again", "file", cfg.Auth.APIKeysFile, "keys", len(keys))
			}
		}
		snap := lib.Reload(ctx)
		log.Info("SIGHUP: skill library reloaded", "skills", len(snap.Skills()), "problems", len(snap.Problems()))
	}
}

// syncedLibrary is the registry as the proxy's POST /v1/skills/reload sees
// it: the reload returns once every router's indexes follow the new
// library (routers build in the background; see newRouter).
type syncedLibrary struct {
	*skills.Registry
	mu      sync.Mutex
	routers []*router.Router
}

// close stops the routers' background work, waiting for an index write
// in progress.
func (l *syncedLibrary) close() {
	l.mu.Lock()
	routers := slices.Clone(l.routers)
	l.mu.Unlock()
	for _, r := range routers {
		r.Close()
	}
}

func (l *syncedLibrary) add(r *router.Router) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.routers = append(l.routers, r)
}

func (l *syncedLibrary) Reload(ctx context.Context) *skills.Snapshot {
	snap := l.Registry.Reload(ctx)
	l.mu.Lock()
	routers := slices.Clone(l.routers)
	l.mu.Unlock()
	for _, r := range routers {
		_ = r.Synced(ctx) // fails only when ctx ends: the client is gone
	}
	return snap
}

// warnNoInterpreters warns when exec is on where no shell or Python is
// found on PATH (the default container image, FROM scratch, has neither):
// every skill script would fail at request time.
func warnNoInterpreters(log *slog.Logger) {
	for _, name := range []string{"sh", "bash", "python3"} {
		if _, err := exec.LookPath(name); err == nil {
			return
		}
	}
	log.Warn("exec is on, but no sh, bash or python3 is on PATH: skill scripts will fail; in a container use the exec image (Containerfile --target exec)", "path", os.Getenv("PATH"))
}
