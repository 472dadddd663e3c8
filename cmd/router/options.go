package main

// What the configuration means to each package, in one place. The
// configuration holds explicit values, the packages' own defaults already
// filled in by defaultConfig. router.Options and proxy.Config read a zero
// count as "take the default" and a negative one as "none"; so an explicit
// 0 here ("none", as the configuration documents it) is handed over as
// none by countOrNone, and nowhere else.

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/upstreamcheck"
)

// countOrNone maps a configured count, 0 meaning none, to the packages'
// spelling of none.
func countOrNone(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// routerOptions is the routing section as router.Options (without the
// embedder: see withEmbedder).
func (c *config) routerOptions(log *slog.Logger) router.Options {
	o := router.Options{
		Strategy:     router.Strategy(c.Routing.Strategy),
		MaxAutoLoad:  countOrNone(c.Routing.MaxAutoLoad),
		EmbedTimeout: c.Routing.EmbedTimeout,
		IndexDir:     c.Routing.IndexDir,
		Prebuilt:     c.Routing.Prebuilt,
		RankCache:    c.Routing.RankCache,
		Logger:       log,
	}
	if len(c.Routing.MinScore) > 0 {
		o.MinScore = map[router.Strategy]float64{}
		for k, v := range c.Routing.MinScore {
			o.MinScore[router.Strategy(k)] = v
		}
	}
	return o
}

// rewriteOptions is the rewrite section as router.RewriteOptions, with the
// tier-3 tools (nil: none).
func (c *config) rewriteOptions(tools router.ToolProvider) router.RewriteOptions {
	return router.RewriteOptions{
		CatalogFormat:        skills.Format(c.Rewrite.CatalogFormat),
		CatalogMode:          router.CatalogMode(c.Rewrite.CatalogMode),
		CatalogBudgetTokens:  c.Rewrite.CatalogBudgetTokens,
		DescriptionLimit:     c.Rewrite.DescriptionLimit,
		Allowlist:            c.Rewrite.Allowlist,
		AutoLoadRole:         c.Rewrite.AutoLoadRole,
		AutoLoadBudgetTokens: c.Rewrite.AutoLoadBudgetTokens,
		// No tool rounds: the proxy could not answer its tools, so it offers
		// none (catalog and auto-load only, as with no_tools).
		NoTools:        c.Rewrite.NoTools || c.ToolRounds == 0,
		CatalogPerTurn: c.Rewrite.CatalogPerTurn,
		Tools:          tools,
	}
}

// sandboxConfig is the exec section as sandbox.Config; lookup resolves
// skill ids in the current library.
func (c *config) sandboxConfig(roots []string, lookup func(id string) (*skills.Skill, bool)) sandbox.Config {
	return sandbox.Config{
		LibraryRoots: roots,
		Enabled:      c.Exec.Enabled,
		Timeout:      c.Exec.Timeout,
		OutputLimit:  int(c.Exec.OutputLimit),
		Env:          c.Exec.Env,
		Concurrency:  c.Exec.Concurrency,
		AllowedTools: c.Exec.AllowedTools,
		Confinement:  sandbox.Confinement(c.Exec.Confinement),
		OutputRoot:   c.Exec.OutputDir,
		Limits:       sandbox.Limits{Memory: int64(c.Exec.MemoryLimit), FileSize: int64(c.Exec.FileSize), Processes: int64(c.Exec.MaxProcesses)},
		Lookup:       lookup,
	}
}

// proxyConfig is the upstream and limits as proxy.Config; the caller adds
// the rewriter, library, A/B split and logger.
func (c *config) proxyConfig() proxy.Config {
	up, _ := url.Parse(c.Upstream.URL) // validated
	var anthropic *url.URL
	if c.Upstream.AnthropicURL != "" {
		anthropic, _ = url.Parse(c.Upstream.AnthropicURL) // validated
	}
	// Empty, or null in the file: nothing passes (nil would be the
	// proxy's default, everything).
	pass := append([]string{}, c.Upstream.PassThrough...)
	return proxy.Config{
		Upstream:          up,
		PassThrough:       pass,
		AnthropicUpstream: anthropic,
		AnthropicAPIKey:   c.Upstream.AnthropicAPIKey,
		APIKey:            c.Upstream.APIKey,
		OverrideAuth:      c.Upstream.OverrideAuth,
		ForwardHeaders:    c.Upstream.ForwardHeaders,
		MergeSkillBodies:  c.Rewrite.SkillPlacement == placementUserMessage,
		MaxToolRounds:     countOrNone(c.ToolRounds),
		ProxyTool:         func(name string) bool { return router.IsTool(name) || sandbox.IsTool(name) },
		BodyLimit:         int64(c.BodyLimit),
		BodyMemory:        int64(c.Server.BodyMemory),
		UpstreamTimeout:   c.Upstream.Timeout,
		ConnectTimeout:    c.Upstream.ConnectTimeout,
		HeaderTimeout:     c.Upstream.HeaderTimeout,
		IdleTimeout:       c.Upstream.IdleTimeout,
	}
}

// upstreamCheckers check upstream.url, and upstream.anthropic_url when it
// is another server, each with its configured key.
func (c *config) upstreamCheckers(log *slog.Logger) ([]*upstreamcheck.Checker, error) {
	// The proxy's Via: a check that reaches the proxy itself (a loop
	// through another name) is refused 508, not passed round.
	h := http.Header{"Via": {proxy.Via()}}
	if c.Upstream.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.Upstream.APIKey)
	}
	main, err := upstreamcheck.New(upstreamcheck.Config{Name: "upstream.url", URL: c.Upstream.URL, Header: h, Logger: log,
		Default: c.src.where("upstream.url") == ""})
	if err != nil {
		return nil, err
	}
	out := []*upstreamcheck.Checker{main}
	if a := c.Upstream.AnthropicURL; a != "" && strings.TrimRight(a, "/") != strings.TrimRight(c.Upstream.URL, "/") {
		// Anthropic's GET /v1/models wants its version header and x-api-key.
		h := http.Header{"Anthropic-Version": {"2023-06-01"}, "Via": {proxy.Via()}}
		if c.Upstream.AnthropicAPIKey != "" {
			h.Set("X-Api-Key", c.Upstream.AnthropicAPIKey)
		}
		ac, err := upstreamcheck.New(upstreamcheck.Config{Name: "upstream.anthropic_url", URL: a, Header: h,
			KeyName: "upstream.anthropic_api_key", Logger: log})
		if err != nil {
			return nil, err
		}
		out = append(out, ac)
	}
	return out, nil
}
