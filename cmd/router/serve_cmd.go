package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
)

// watchDebounce batches bursts of file events (an editor saving, git checkout).
const watchDebounce = 300 * time.Millisecond

// shutdownGrace lets in-flight requests (long streams included) finish on
// SIGINT/SIGTERM before connections are closed.
const shutdownGrace = 30 * time.Second

func newServeCmd() *cobra.Command {
	var sf serveFlags
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--listen ADDR] [--upstream URL] [--skills DIR]...",
		Short: "Run the OpenAI-compatible proxy that selects skills for every chat request",
		Long: "Serve an OpenAI-compatible API on --listen. Chat completions are routed against the skill\n" +
			"library (catalog in the system prompt, relevant skill bodies appended, a load_skill tool the\n" +
			"proxy answers itself) and forwarded to --upstream; every other /v1/* path passes through.\n" +
			"Also: GET /healthz, /readyz, /metrics, /v1/skills; POST /v1/skills/route, /v1/skills/reload.\n\n" +
			"Configuration: defaults < YAML file (--config) < SKILLROUTER_* environment < flags.\n" +
			"A/B arms (ab.arms) and routing.min_score are set in the file only; see examples/config.yaml.\n\n" +
			"Client tools and skills: exec.allowed_tools (--exec-allowed-tools bash,mcp_*) gates the client's\n" +
			"tools of those function names (exact and case-sensitive, x* prefixes, * all): a gated tool is\n" +
			"withheld from the upstream request unless an active skill (auto-loaded, #mentioned, loaded\n" +
			"earlier in the conversation or by load_skill in this request) lists it in its allowed-tools\n" +
			"frontmatter (Bash or Bash(git:*) enables bash: that comparison ignores case), or tool_choice names\n" +
			"it. It works with or without --exec; empty (the default) gates nothing. Withheld tools are\n" +
			"listed in the X-Skillrouter-Tools-Withheld response header. See docs/sandbox.md.\n\n" +
			"Conversations: the request header X-Skillrouter-Session (else the body's \"user\") names the\n" +
			"conversation; tier-3 output folders are keyed by it together with the opening messages.\n\n" +
			configHelp(),
		Example: "  router serve --skills examples/skills\n" +
			"  router serve --upstream https://api.openai.com/v1 --upstream-api-key $OPENAI_API_KEY\n" +
			"  router serve --config examples/config.yaml --log-format json\n" +
			"  SKILLROUTER_ROUTING_STRATEGY=bm25 router serve --print-config",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadServeConfig(cmd.Flags(), &sf, os.LookupEnv)
			if err != nil {
				return err
			}
			if sf.printConfig {
				enc := yaml.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent(2)
				defer enc.Close()
				return enc.Encode(cfg.redacted())
			}
			return runServe(cmd.Context(), cfg, cmd.ErrOrStderr())
		},
	}
	registerServeFlags(cmd.Flags(), &sf)
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
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// runServe builds the library, routers and proxy from cfg and serves until ctx ends.
func runServe(ctx context.Context, cfg serveConfig, logw io.Writer) error {
	log := newLogger(cfg.Log, logw)
	roots, err := requireRoots(cfg.Skills)
	if err != nil {
		return err
	}
	srv, reg, err := buildProxy(ctx, cfg, roots, log)
	if err != nil {
		return err
	}
	if cfg.Watch {
		go func() {
			if err := reg.Watch(ctx, watchDebounce); err != nil && ctx.Err() == nil {
				log.Warn("skills: watching the library failed; use POST /v1/skills/reload", "err", err)
			}
		}()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	snap := reg.Snapshot()
	log.Info("skillrouter proxy listening",
		"addr", "http://"+ln.Addr().String()+"/v1", "upstream", cfg.Upstream.URL,
		"skills", len(snap.Skills()), "problems", len(snap.Problems()), "roots", strings.Join(roots, ","),
		"strategy", cfg.Routing.Strategy, "embedder", providerName(cfg.Embedder), "exec", cfg.Exec.Enabled,
		"ab_arms", len(cfg.AB.Arms))
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for in-flight requests", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func providerName(c embed.Config) string {
	if c.Provider == "" {
		return embed.ProviderBuiltin
	}
	return c.Provider
}

// buildProxy wires the library, the routers (one per A/B embedder) and tier 3
// into a proxy.Server.
func buildProxy(ctx context.Context, cfg serveConfig, roots []string, log *slog.Logger) (*proxy.Server, *skills.Registry, error) {
	ropts := routerOptions(cfg, log)
	reg, r, err := buildRouter(ctx, roots, cfg.Embedder, ropts)
	if err != nil {
		return nil, nil, err
	}
	reg.SetLogger(log)
	tools, err := sandbox.New(sandbox.Config{
		Enabled:      cfg.Exec.Enabled,
		Timeout:      cfg.Exec.Timeout,
		OutputLimit:  int(cfg.Exec.OutputLimit),
		Env:          cfg.Exec.Env,
		Concurrency:  cfg.Exec.Concurrency,
		AllowedTools: cfg.Exec.AllowedTools,
		Confinement:  sandbox.Confinement(cfg.Exec.Confinement),
		OutputRoot:   cfg.Exec.OutputDir,
		Lookup:       func(id string) (*skills.Skill, bool) { return reg.Snapshot().Get(id) },
	}, log)
	if err != nil {
		return nil, nil, fmt.Errorf("exec: %w", err)
	}
	if len(cfg.Exec.AllowedTools) > 0 {
		log.Info("client tools gated by skills' allowed-tools", "exec.allowed_tools", strings.Join(cfg.Exec.AllowedTools, ","))
	}
	if cfg.Exec.Enabled {
		// Learn executable skills' schemas (--help-json) off the request path:
		// now for the loaded library, and again after every reload.
		go tools.Warm(ctx, reg.Snapshot().Skills())
		reg.OnReload(func(s *skills.Snapshot) { go tools.Warm(ctx, s.Skills()) })
	}
	rwOpts := router.RewriteOptions{
		CatalogFormat:        skills.Format(cfg.Rewrite.CatalogFormat),
		CatalogMode:          router.CatalogMode(cfg.Rewrite.CatalogMode),
		CatalogBudgetTokens:  cfg.Rewrite.CatalogBudgetTokens,
		DescriptionLimit:     cfg.Rewrite.DescriptionLimit,
		Allowlist:            cfg.Rewrite.Allowlist,
		AutoLoadRole:         cfg.Rewrite.AutoLoadRole,
		AutoLoadBudgetTokens: cfg.Rewrite.AutoLoadBudgetTokens,
		NoTools:              cfg.Rewrite.NoTools,
		CatalogPerTurn:       cfg.Rewrite.CatalogPerTurn,
		Tools:                tools,
	}
	ab, err := buildArms(ctx, cfg, reg, ropts, rwOpts, log)
	if err != nil {
		return nil, nil, err
	}
	up, _ := url.Parse(cfg.Upstream.URL) // validated
	rounds := cfg.ToolRounds
	if rounds == 0 {
		rounds = -1 // proxy.Config: 0 is the default, <0 none
	}
	defaultRW := proxy.NewRewriter(r, rwOpts)
	warmUp(ctx, defaultRW, ab)
	srv, err := proxy.New(proxy.Config{
		Upstream:        up,
		APIKey:          cfg.Upstream.APIKey,
		OverrideAuth:    cfg.Upstream.OverrideAuth,
		Rewriter:        defaultRW,
		Library:         reg,
		AB:              ab,
		MaxToolRounds:   rounds,
		BodyLimit:       int64(cfg.BodyLimit),
		UpstreamTimeout: cfg.Upstream.Timeout,
		Logger:          log,
	})
	if err != nil {
		return nil, nil, err
	}
	return srv, reg, nil
}

// warmUp rewrites a throw-away request on every router before the listener
// opens, so one-time initialisation (tokenizer tables, caches) is not paid by
// the first user.
func warmUp(ctx context.Context, def proxy.Rewriter, ab *proxy.ABConfig) {
	body := []byte(`{"model":"warm-up","messages":[{"role":"user","content":"warm up the skill router"}]}`)
	rws := []proxy.Rewriter{def}
	if ab != nil {
		for _, a := range ab.Arms {
			if a.Rewriter != nil {
				rws = append(rws, a.Rewriter)
			}
		}
	}
	for _, rw := range rws {
		_, _ = rw.RewriteChat(ctx, body, router.Overrides{})
	}
}

// routerOptions maps the routing section to router.Options.
func routerOptions(cfg serveConfig, log *slog.Logger) router.Options {
	o := router.Options{
		Strategy:     router.Strategy(cfg.Routing.Strategy),
		MaxAutoLoad:  cfg.Routing.MaxAutoLoad,
		EmbedTimeout: cfg.Routing.EmbedTimeout,
		IndexDir:     cfg.Routing.IndexDir,
		RankCache:    cfg.Routing.RankCache,
		Logger:       log,
	}
	if o.MaxAutoLoad == 0 {
		o.MaxAutoLoad = -1 // router.Options: 0 is the default, <0 none
	}
	if len(cfg.Routing.MinScore) > 0 {
		o.MinScore = map[router.Strategy]float64{}
		for k, v := range cfg.Routing.MinScore {
			o.MinScore[router.Strategy(k)] = v
		}
	}
	return o
}

// buildArms turns ab.arms into proxy arms. An arm with its own embedder gets
// its own router over the same registry (kept in step with reloads); an arm
// that only changes the strategy shares the main router.
func buildArms(ctx context.Context, cfg serveConfig, reg *skills.Registry, ropts router.Options, rwOpts router.RewriteOptions, log *slog.Logger) (*proxy.ABConfig, error) {
	if len(cfg.AB.Arms) == 0 {
		return nil, nil
	}
	ab := &proxy.ABConfig{HashHeader: cfg.AB.Header, Seed: cfg.AB.Seed}
	for _, a := range cfg.AB.Arms {
		arm := proxy.Arm{Name: a.Name, Percent: a.Percent, Strategy: router.Strategy(a.Strategy)}
		if a.Embedder != nil {
			r, err := armRouter(ctx, reg, *a.Embedder, ropts, log)
			if err != nil {
				return nil, fmt.Errorf("ab arm %q: %w", a.Name, err)
			}
			arm.Rewriter = proxy.NewRewriter(r, rwOpts)
		}
		ab.Arms = append(ab.Arms, arm)
	}
	return ab, nil
}

// armRouter is the router factory of an A/B arm with its own embedder.
func armRouter(ctx context.Context, reg *skills.Registry, ec embed.Config, ropts router.Options, log *slog.Logger) (*router.Router, error) {
	opts, err := withEmbedder(ec, ropts)
	if err != nil {
		return nil, err
	}
	r, err := router.New(ctx, reg.Snapshot(), opts)
	if err != nil {
		return nil, err
	}
	reg.OnReload(func(s *skills.Snapshot) {
		if err := r.Update(context.Background(), s); err != nil {
			log.Error("rebuilding an A/B arm's index after reload", "err", err)
		}
	})
	return r, nil
}
