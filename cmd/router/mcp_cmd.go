package main

// `router mcp`: the skill library as an MCP server over stdio, for hosts
// that launch a command (Claude Desktop, Claude Code, Codex, Cursor...).
// `router serve` serves the same at /mcp (see mcpHandler).

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrouter/skillrouter/mcpserver"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
)

func newMCPCmd() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "mcp [--config FILE] [--skills DIR]...",
		Short: "Serve the skill library to an MCP host over stdio",
		Long: "Speak the Model Context Protocol on stdin/stdout: the tools search_skills, load_skill,\n" +
			"read_skill_resource (and skill_execute with --exec), every skill's files as skill:// resources\n" +
			"with the Skills Extension (skills/list, skills/get, resources/directory/read), one prompt per\n" +
			"skill, and list_changed notifications when the library changes. Logs go to stderr.\n" +
			"The answers are the proxy's own (docs/mcp.md). `router serve` serves the same at /mcp.\n\n" +
			"It reads the same configuration as `router serve` (file, SKILLROUTER_* environment, flags);\n" +
			"of it the library, embedder, routing, exec, log and debug settings and rewrite.description_limit\n" +
			"apply, and only those have flags here: the HTTP server's (listen, upstream, server, auth, the\n" +
			"rest of rewrite, tool_rounds, body_limit, mcp, ab) are serve's.\n\n" +
			configHelp(mcpKeys()...),
		Example: "  router mcp --skills examples/skills\n" +
			"  router mcp --config examples/config.yaml --exec\n" +
			"  claude mcp add skills -- router mcp --skills ~/skills",
		Args: noArgs,
		RunE: runConfigured(&cf, runMCP),
	}
	cf.registerServing(cmd.Flags(), mcpKeys()...)
	cmd.Flags().SortFlags = false
	return cmd
}

// mcpKeys are the configuration keys `router mcp` reads: a flag of serve's
// HTTP side here would be taken and silently ignored. A configuration file
// shared with serve may still hold those keys.
func mcpKeys() []string {
	var keys []string
	for _, k := range configKeys {
		p := k.path
		switch {
		case p == "listen", p == "tool_rounds", p == "body_limit",
			strings.HasPrefix(p, "rewrite.") && p != "rewrite.description_limit",
			strings.HasPrefix(p, "upstream."), strings.HasPrefix(p, "server."), strings.HasPrefix(p, "auth."),
			strings.HasPrefix(p, "mcp."), strings.HasPrefix(p, "ab."):
			continue
		}
		keys = append(keys, p)
	}
	return keys
}

// runMCP serves stdio until the client disconnects or ctx ends. The session
// starts at once; tool calls wait for the routing index, which builds
// meanwhile (resources, prompts and skills/* need only the library).
func runMCP(ctx context.Context, cfg config, roots []string, logw io.Writer) error {
	start := time.Now()
	log := newLogger(cfg.Log, logw)
	warnMisspelledEnv(log)
	warnExposedSecrets(log, &cfg)
	reg, err := loadRegistry(ctx, roots, libraryOptions(&cfg))
	if err != nil {
		return err
	}
	reg.SetLogger(log)
	snap := reg.Snapshot()
	snap.LogProblems(log, nil)
	tools, err := newSandbox(cfg, reg, log)
	if err != nil {
		return err
	}
	srv, err := newMCPServer(cfg, reg, tools, log)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	log.Info("skillrouter MCP server on stdio; preparing the routing index (loading one kept, or building it)",
		"skills", len(snap.Skills()), "problems", len(snap.Problems()), "roots", strings.Join(roots, ","),
		"strategy", cfg.Routing.Strategy, "embedder", providerName(cfg.Embedder), "exec", cfg.Exec.Enabled)
	built := make(chan *router.Router, 1)
	go func() {
		r, err := newRouter(ctx, reg, cfg.Embedder, cfg.routerOptions(log), nil)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("stopping: the routing index could not be built", "err", err)
				cancel(fmt.Errorf("building the routing index: %w", err))
			}
			built <- nil
			return
		}
		srv.SetRouter(r)
		startWarm(ctx, cfg, reg, tools)
		packText(ctx, log, reg, r)
		log.Info("skillrouter MCP server ready", "skills", len(reg.Snapshot().Skills()), "since_start", time.Since(start).Round(time.Millisecond))
		if cfg.Watch && ctx.Err() == nil {
			watchLibrary(ctx, reg, log, "changes need a restart")
		}
		built <- r
	}()
	runErr := srv.RunStdio(ctx)
	cancel(nil)
	if r := <-built; r != nil {
		r.Close()
	}
	if cause := context.Cause(ctx); cause != nil && cause != context.Canceled {
		return cause
	}
	return runErr
}

// newSandbox builds tier 3 from cfg.exec; disabled it only validates.
func newSandbox(cfg config, reg *skills.Registry, log *slog.Logger) (*sandbox.Provider, error) {
	tools, err := sandbox.New(cfg.sandboxConfig(reg.Roots(), func(id string) (*skills.Skill, bool) { return reg.Snapshot().Resolve(id) }), log)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	return tools, nil
}

// newMCPServer builds the MCP server over reg and keeps it in step with
// reloads.
func newMCPServer(cfg config, reg *skills.Registry, tools *sandbox.Provider, log *slog.Logger) (*mcpserver.Server, error) {
	// The MCP server offers no executable skill's tool: their --help-json
	// is not run for its sessions.
	srv, err := mcpserver.New(mcpserver.Config{Version: buildVersion(), Rewrite: cfg.rewriteOptions(tools.Builtins()), Sandbox: tools, Logger: log})
	if err != nil {
		return nil, err
	}
	srv.Sync(reg.Snapshot())
	reg.OnReload(srv.Sync)
	return srv, nil
}

// startWarm learns executable skills' schemas off the request path, now
// and after every reload (tier 3 only).
func startWarm(ctx context.Context, cfg config, reg *skills.Registry, tools *sandbox.Provider) {
	if !cfg.Exec.Enabled {
		return
	}
	go tools.Warm(ctx, reg.Snapshot().Skills())
	reg.OnReload(func(s *skills.Snapshot) { go tools.Warm(ctx, s.Skills()) })
}

// withMCP routes /mcp to the MCP server and everything else to next,
// leaving other paths exactly as next would see them.
func withMCP(next, mcp http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			mcp.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
