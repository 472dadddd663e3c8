package main

// Configuration of every command that reads a library (serve, doctor, route,
// bench, skills): a YAML file (--config), SKILLROUTER_* environment variables
// and flags, applied in that order over the defaults, so flags win. Every
// scalar key is described once in configKeys, which drives the environment
// lookup, the flags each command offers, the accepted values, and the table
// in `router serve --help`. What the values mean to each package is mapped
// in one place: options.go.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/editdistance"
	"github.com/skillrouter/skillrouter/internal/npmcache"
	"github.com/skillrouter/skillrouter/internal/private"
	"github.com/skillrouter/skillrouter/internal/redact"
	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
)

// config is the whole configuration; its YAML form is documented in
// examples/config.yaml.
type config struct {
	Listen     string         `yaml:"listen"`
	Upstream   upstreamConfig `yaml:"upstream"`
	Skills     []string       `yaml:"skills"`
	Watch      bool           `yaml:"watch"`
	Embedder   embed.Config   `yaml:"embedder"`
	Routing    routingConfig  `yaml:"routing"`
	Rewrite    rewriteConfig  `yaml:"rewrite"`
	ToolRounds int            `yaml:"tool_rounds"`
	BodyLimit  byteSize       `yaml:"body_limit"`
	Log        logConfig      `yaml:"log"`
	Exec       execConfig     `yaml:"exec"`
	AB         abConfig       `yaml:"ab"`
	MCP        mcpConfig      `yaml:"mcp"`
	Debug      debugConfig    `yaml:"debug"`
	Server     serverConfig   `yaml:"server"`
	Auth       authConfig     `yaml:"auth"`

	// src says where each value came from, for error messages.
	src *provenance
}

// serverConfig is the HTTP server: timeouts, the connection cap, shutdown,
// browser protections and where /metrics is served (docs/security.md).
type serverConfig struct {
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	BodyTimeout       time.Duration `yaml:"body_timeout"`
	WriteTimeout      time.Duration `yaml:"write_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	MaxConnections    int           `yaml:"max_connections"`
	BodyMemory        byteSize      `yaml:"body_memory"`
	ShutdownGrace     time.Duration `yaml:"shutdown_grace"`
	AllowedOrigins    []string      `yaml:"allowed_origins"`
	AllowedHosts      []string      `yaml:"allowed_hosts"`
	MetricsListen     string        `yaml:"metrics_listen"`
}

// authConfig is who may use the proxy: client keys and the admin token.
type authConfig struct {
	APIKeys     []string `yaml:"api_keys"`
	APIKeysFile string   `yaml:"api_keys_file"`
	AdminToken  string   `yaml:"admin_token"`
	// ClientIDSecret keys the access log's client ids (proxy.Access).
	ClientIDSecret string `yaml:"client_id_secret"`
	// AdminLoopback serves the admin endpoints to loopback clients when
	// there is no admin token (default true); the Helm chart turns it off.
	AdminLoopback bool `yaml:"admin_loopback"`
}

// debugConfig is the opt-in profiling endpoint of `router serve`.
type debugConfig struct {
	// Listen, when set, serves /debug/pprof/ on this address of its own
	// (never on the proxy's listener, whose clients must not read it).
	Listen string `yaml:"listen"`
}

// mcpConfig is the MCP face of `router serve` (streamable HTTP at /mcp);
// `router mcp` serves stdio whatever it says.
type mcpConfig struct {
	Enabled bool `yaml:"enabled"`
}

type upstreamConfig struct {
	URL             string        `yaml:"url"`
	APIKey          string        `yaml:"api_key"`
	AnthropicURL    string        `yaml:"anthropic_url"`
	AnthropicAPIKey string        `yaml:"anthropic_api_key"`
	OverrideAuth    bool          `yaml:"override_auth"`
	Timeout         time.Duration `yaml:"timeout"`
	CheckInterval   time.Duration `yaml:"check_interval"`
	ConnectTimeout  time.Duration `yaml:"connect_timeout"`
	HeaderTimeout   time.Duration `yaml:"header_timeout"`
	IdleTimeout     time.Duration `yaml:"idle_timeout"`
	PassThrough     []string      `yaml:"passthrough"`
	ForwardHeaders  []string      `yaml:"forward_headers"`
}

type routingConfig struct {
	Strategy     string             `yaml:"strategy"`
	MaxAutoLoad  int                `yaml:"max_auto_load"`
	EmbedTimeout time.Duration      `yaml:"embed_timeout"`
	MinScore     map[string]float64 `yaml:"min_score"`
	IndexDir     string             `yaml:"index_dir"`
	Prebuilt     string             `yaml:"prebuilt_index"`
	RankCache    int                `yaml:"rank_cache"`
}

type rewriteConfig struct {
	CatalogFormat        string   `yaml:"catalog_format"`
	CatalogMode          string   `yaml:"catalog_mode"`
	CatalogBudgetTokens  int      `yaml:"catalog_budget_tokens"`
	DescriptionLimit     int      `yaml:"description_limit"`
	Allowlist            []string `yaml:"allowlist"`
	AutoLoadRole         string   `yaml:"auto_load_role"`
	AutoLoadBudgetTokens int      `yaml:"auto_load_budget_tokens"`
	NoTools              bool     `yaml:"no_tools"`
	CatalogPerTurn       bool     `yaml:"catalog_per_turn"`
	SkillPlacement       string   `yaml:"skill_placement"`
}

type logConfig struct {
	Format string `yaml:"format"`
	Level  string `yaml:"level"`
}

type execConfig struct {
	Enabled      bool          `yaml:"enabled"`
	Timeout      time.Duration `yaml:"timeout"`
	OutputLimit  byteSize      `yaml:"output_limit"`
	Env          []string      `yaml:"env"`
	Concurrency  int           `yaml:"concurrency"`
	AllowedTools []string      `yaml:"allowed_tools"`
	Confinement  string        `yaml:"confinement"`
	OutputDir    string        `yaml:"output_dir"`
	MemoryLimit  byteSize      `yaml:"memory_limit"`
	FileSize     byteSize      `yaml:"file_size_limit"`
	MaxProcesses int           `yaml:"max_processes"`
}

type abConfig struct {
	Header string      `yaml:"header"`
	Seed   string      `yaml:"seed"`
	Arms   []armConfig `yaml:"arms"`
}

type armConfig struct {
	Name     string        `yaml:"name"`
	Percent  float64       `yaml:"percent"`
	Strategy string        `yaml:"strategy"`
	Embedder *embed.Config `yaml:"embedder"`
}

// byteSize is a size in bytes written as a number or with a unit (8MiB, 512KB).
type byteSize int64

func (b *byteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = byteSize(v)
	return nil
}

func (b byteSize) MarshalYAML() (any, error) { return formatSize(int64(b)), nil }

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1},
}

// wantSize, wantDuration, ... say what a value of each kind must look like.
const (
	wantSize     = "want bytes, optionally with a unit (KiB, MiB, GiB, KB, MB, GB), such as 8MiB"
	wantDuration = "want a duration in Go syntax, such as 250ms, 30s, 10m or 1h30m"
	wantInt      = "want a whole number"
	wantNumber   = "want a number"
	wantBool     = "want true or false"
)

// parseSize reads "8388608", "8MiB", "8 MB", "512k".
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: %s", s, wantSize)
	}
	return int64(n * float64(mult)), nil
}

func formatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatInt(n, 10)
}

// defaultListen is where `router serve` listens unless told otherwise.
const defaultListen = "127.0.0.1:8080"

// defaultUpstreamCheckInterval is how often serve re-checks the upstream.
const defaultUpstreamCheckInterval = 30 * time.Second

// defaultConfig is the configuration with nothing set: each package's own
// defaults, so a value shown in --help or --print-config is the one in use.
func defaultConfig() config {
	return config{
		Listen: defaultListen,
		Upstream: upstreamConfig{URL: proxy.DefaultUpstream, Timeout: proxy.DefaultUpstreamTimeout, CheckInterval: defaultUpstreamCheckInterval,
			ConnectTimeout: proxy.DefaultConnectTimeout, HeaderTimeout: proxy.DefaultHeaderTimeout, IdleTimeout: proxy.DefaultIdleTimeout,
			PassThrough: []string{proxy.PassAll}},
		Watch:      true,
		Embedder:   embed.Config{Provider: embed.ProviderBuiltin},
		Routing:    routingConfig{Strategy: string(router.DefaultStrategy), MaxAutoLoad: router.DefaultMaxAutoLoad, EmbedTimeout: router.DefaultEmbedTimeout},
		ToolRounds: proxy.DefaultMaxToolRounds,
		BodyLimit:  proxy.DefaultBodyLimit,
		Rewrite: rewriteConfig{
			CatalogFormat: string(skills.FormatAgentSkills), CatalogMode: string(router.CatalogAuto),
			CatalogBudgetTokens: router.DefaultCatalogBudgetTokens, DescriptionLimit: router.DefaultDescriptionLimit,
			AutoLoadRole: router.DefaultAutoLoadRole, AutoLoadBudgetTokens: router.DefaultAutoLoadBudgetTokens, SkillPlacement: placementAuto,
		},
		Log:  logConfig{Format: "text", Level: "info"},
		Exec: execConfig{Timeout: sandbox.DefaultTimeout, OutputLimit: sandbox.DefaultOutputLimit, Confinement: string(sandbox.ConfineAuto)},
		AB:   abConfig{Header: proxy.DefaultABHeader},
		MCP:  mcpConfig{Enabled: true},
		Auth: authConfig{AdminLoopback: true},
		Server: serverConfig{ReadHeaderTimeout: 10 * time.Second, BodyTimeout: proxy.DefaultBodyTimeout, WriteTimeout: proxy.DefaultWriteTimeout, IdleTimeout: time.Minute,
			MaxConnections: defaultMaxConnections, ShutdownGrace: 30 * time.Second},
		src: newProvenance(),
	}
}

// configKey is one scalar (or list) setting reachable from env and flags.
type configKey struct {
	path string // YAML path, e.g. upstream.url
	flag string // "" = file and env only
	kind string // string, int, bool, duration, size, list (comma-separated), paths (os.PathListSeparator)
	help string
	// ptr returns the field the key sets.
	ptr func(c *config) any
	// choices are the accepted values of an enumerated key.
	choices []string
}

// env is the environment variable of the key: SKILLROUTER_ + path in upper
// case with dots as underscores.
func (k configKey) env() string {
	return "SKILLROUTER_" + strings.ToUpper(strings.ReplaceAll(k.path, ".", "_"))
}

// Accepted values of the enumerated keys, from the packages that define them.
var (
	strategyNames    = names(router.Strategies)
	catalogModeNames = names(router.CatalogModes)
	formatNames      = names(skills.Formats)
	providerNames    = embed.Providers
	confinementNames = names([]sandbox.Confinement{sandbox.ConfineAuto, sandbox.ConfineLandlock, sandbox.ConfineNone})
	logFormatNames   = []string{"text", "json"}
	placementNames   = []string{placementAuto, placementUserMessage}
	logLevelNames    = []string{"debug", "info", "warn", "error"}
)

// rewrite.skill_placement's values (proxy.Config.MergeSkillBodies).
const (
	placementAuto        = "auto"
	placementUserMessage = "user_message"
)

func names[S ~string](list []S) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = string(s)
	}
	return out
}

// oneOf renders accepted values for messages: "a, b or c".
func oneOf(list []string) string {
	switch len(list) {
	case 0:
		return ""
	case 1:
		return list[0]
	}
	return strings.Join(list[:len(list)-1], ", ") + " or " + list[len(list)-1]
}

var configKeys = []configKey{
	{path: "listen", flag: "listen", kind: "string", help: "address to listen on (host:port)", ptr: func(c *config) any { return &c.Listen }},
	{path: "upstream.url", flag: "upstream", kind: "string", help: "base URL of the OpenAI-compatible upstream, including /v1", ptr: func(c *config) any { return &c.Upstream.URL }},
	{path: "upstream.api_key", flag: "upstream-api-key", kind: "string", help: "API key sent upstream when the client sends no Authorization", ptr: func(c *config) any { return &c.Upstream.APIKey }},
	{path: "upstream.anthropic_url", flag: "anthropic-upstream", kind: "string", help: "base URL of the Anthropic Messages upstream, including /v1 (default: upstream.url; Ollama serves both)", ptr: func(c *config) any { return &c.Upstream.AnthropicURL }},
	{path: "upstream.anthropic_api_key", flag: "anthropic-api-key", kind: "string", help: "sent as x-api-key on Messages requests when the client sends no key (default: upstream.api_key when the Anthropic upstream is upstream.url)", ptr: func(c *config) any { return &c.Upstream.AnthropicAPIKey }},
	{path: "upstream.forward_headers", kind: "list", help: "request headers the proxy keeps from the upstream by default (Cookie, X-Forwarded-For, True-Client-IP, ...) that go upstream anyway, e.g. [Cookie] for a gateway that authenticates by cookie", ptr: func(c *config) any { return &c.Upstream.ForwardHeaders }},
	{path: "upstream.override_auth", flag: "upstream-override-auth", kind: "bool", help: "always send upstream.api_key, replacing the client's Authorization", ptr: func(c *config) any { return &c.Upstream.OverrideAuth }},
	{path: "upstream.timeout", flag: "upstream-timeout", kind: "duration", help: "bound on a non-streaming exchange, headers and body, and on the headers of a pass-through request (504 when hit)", ptr: func(c *config) any { return &c.Upstream.Timeout }},
	{path: "upstream.connect_timeout", flag: "upstream-connect-timeout", kind: "duration", help: "bound on connecting to the upstream, TLS included (504 when hit)", ptr: func(c *config) any { return &c.Upstream.ConnectTimeout }},
	{path: "upstream.header_timeout", flag: "upstream-header-timeout", kind: "duration", help: "bound on the wait for a streamed answer's response headers: a hung upstream fails within it (504)", ptr: func(c *config) any { return &c.Upstream.HeaderTimeout }},
	{path: "upstream.idle_timeout", flag: "upstream-idle-timeout", kind: "duration", help: "bound on the silence between two reads of an upstream body; no bound on a whole stream (error event when hit)", ptr: func(c *config) any { return &c.Upstream.IdleTimeout }},
	{path: "upstream.passthrough", flag: "upstream-passthrough", kind: "list", help: "requests relayed to the upstream as the client addressed them (paths the proxy does not route, stored responses read back): [METHOD ]PATH patterns relative to /v1/, * one segment, a last ** the rest; others get 404; empty: none (comma-separated)", ptr: func(c *config) any { return &c.Upstream.PassThrough }},
	{path: "upstream.check_interval", flag: "upstream-check-interval", kind: "duration", help: "how often GET {upstream}/models is checked for /readyz and the log (0 = only at start)", ptr: func(c *config) any { return &c.Upstream.CheckInterval }},
	{path: "skills", kind: "paths", help: "skill library folders, or builtin:examples (flag --skills, repeatable; env: separated by " + string(os.PathListSeparator) + ")", ptr: func(c *config) any { return &c.Skills }},
	{path: "watch", flag: "watch", kind: "bool", help: "reload the library when its files change", ptr: func(c *config) any { return &c.Watch }},
	{path: "embedder.provider", flag: "embedder", kind: "string", help: "embedding provider: " + oneOf(providerNames), ptr: func(c *config) any { return &c.Embedder.Provider }, choices: providerNames},
	{path: "embedder.model", flag: "embed-model", kind: "string", help: "embedding model (ollama: " + embed.DefaultOllamaModel + ", openai: " + embed.DefaultOpenAIModel + ")", ptr: func(c *config) any { return &c.Embedder.Model }},
	{path: "embedder.base_url", flag: "embed-url", kind: "string", help: "embedding endpoint base URL (ollama: $OLLAMA_HOST or http://127.0.0.1:11434, openai: " + embed.DefaultOpenAIBaseURL + ")", ptr: func(c *config) any { return &c.Embedder.BaseURL }},
	{path: "embedder.api_key", flag: "embed-key", kind: "string", help: "API key of the openai embedding provider (default $OPENAI_API_KEY)", ptr: func(c *config) any { return &c.Embedder.APIKey }},
	{path: "embedder.dimensions", kind: "int", help: "embedding dimensions (openai `dimensions`; builtin vector size)", ptr: func(c *config) any { return &c.Embedder.Dimensions }},
	{path: "embedder.batch_size", kind: "int", help: "texts per remote embedding call", ptr: func(c *config) any { return &c.Embedder.BatchSize }},
	{path: "embedder.timeout", kind: "duration", help: "per remote embedding call", ptr: func(c *config) any { return &c.Embedder.Timeout }},
	{path: "embedder.retries", kind: "int", help: "retries of a failed remote embedding call; -1 = none", ptr: func(c *config) any { return &c.Embedder.Retries }},
	{path: "embedder.cache_dir", kind: "string", help: "embedding cache folder (- disables)", ptr: func(c *config) any { return &c.Embedder.CacheDir }},
	{path: "routing.strategy", flag: "strategy", kind: "string", help: "ranking strategy: " + oneOf(strategyNames), ptr: func(c *config) any { return &c.Routing.Strategy }, choices: strategyNames},
	{path: "routing.max_auto_load", flag: "max-auto-load", kind: "int", help: "skills auto-loaded per request at most (0 = none)", ptr: func(c *config) any { return &c.Routing.MaxAutoLoad }},
	{path: "routing.embed_timeout", flag: "embed-timeout", kind: "duration", help: "latency budget of the query embedding before falling back to bm25", ptr: func(c *config) any { return &c.Routing.EmbedTimeout }},
	{path: "routing.index_dir", kind: "string", help: "where the routing index persists, loaded instead of rebuilt at the next start with an unchanged library (default: a folder per library under embedder.cache_dir)", ptr: func(c *config) any { return &c.Routing.IndexDir }},
	{path: "routing.prebuilt_index", flag: "index", kind: "string", help: "prebuilt routing index folder (router index build), read-only; loaded instead of embedding the library when it matches", ptr: func(c *config) any { return &c.Routing.Prebuilt }},
	{path: "routing.rank_cache", kind: "int", help: "recent rankings remembered, reused while a conversation's user turns repeat (agent tool rounds); -1 = off", ptr: func(c *config) any { return &c.Routing.RankCache }},
	{path: "rewrite.catalog_format", flag: "catalog-format", kind: "string", help: "catalog format: " + oneOf(formatNames), ptr: func(c *config) any { return &c.Rewrite.CatalogFormat }, choices: formatNames},
	{path: "rewrite.catalog_mode", flag: "catalog-mode", kind: "string", help: "catalog mode: " + oneOf(catalogModeNames), ptr: func(c *config) any { return &c.Rewrite.CatalogMode }, choices: catalogModeNames},
	{path: "rewrite.catalog_budget_tokens", flag: "catalog-budget", kind: "int", help: "catalog budget in tokens (auto and enabled modes)", ptr: func(c *config) any { return &c.Rewrite.CatalogBudgetTokens }},
	{path: "rewrite.description_limit", kind: "int", help: "catalog description length in characters before entries are dropped", ptr: func(c *config) any { return &c.Rewrite.DescriptionLimit }},
	{path: "rewrite.allowlist", kind: "list", help: "skill ids shown in enabled mode besides opted-in skills (env: comma-separated)", ptr: func(c *config) any { return &c.Rewrite.Allowlist }},
	{path: "rewrite.auto_load_role", flag: "auto-load-role", kind: "string", help: "role of auto-loaded skill messages: " + oneOf(router.AutoLoadRoles), ptr: func(c *config) any { return &c.Rewrite.AutoLoadRole }, choices: router.AutoLoadRoles},
	{path: "rewrite.auto_load_budget_tokens", flag: "auto-load-budget", kind: "int", help: "tokens of skill bodies auto-loaded per request at most", ptr: func(c *config) any { return &c.Rewrite.AutoLoadBudgetTokens }},
	{path: "rewrite.no_tools", flag: "no-tools", kind: "bool", help: "add no load_skill tool (catalog and auto-load only)", ptr: func(c *config) any { return &c.Rewrite.NoTools }},
	{path: "rewrite.skill_placement", kind: "string", help: "where Chat requests get skill bodies: auto (a message of their own after the last message; inside the last user message for a model whose upstream refused that) or user_message (there from the start: Mistral's API, strict chat templates)", ptr: func(c *config) any { return &c.Rewrite.SkillPlacement }, choices: placementNames},
	{path: "rewrite.catalog_per_turn", kind: "bool", help: "rank a shortened catalog against every turn (default: the first user message, cache-friendly)", ptr: func(c *config) any { return &c.Rewrite.CatalogPerTurn }},
	{path: "tool_rounds", flag: "tool-rounds", kind: "int", help: "server-side tool rounds per request at most (0 = none: the proxy then offers no tools, as with no_tools)", ptr: func(c *config) any { return &c.ToolRounds }},
	{path: "body_limit", flag: "body-limit", kind: "size", help: "chat request body limit (413 beyond)", ptr: func(c *config) any { return &c.BodyLimit }},
	{path: "log.format", flag: "log-format", kind: "string", help: "log format: " + oneOf(logFormatNames), ptr: func(c *config) any { return &c.Log.Format }, choices: logFormatNames},
	{path: "log.level", flag: "log-level", kind: "string", help: "log level: " + oneOf(logLevelNames) + " (debug logs message contents)", ptr: func(c *config) any { return &c.Log.Level }, choices: logLevelNames},
	{path: "exec.enabled", flag: "exec", kind: "bool", help: "tier 3: let the model read skill files and run skill scripts in the sandbox", ptr: func(c *config) any { return &c.Exec.Enabled }},
	{path: "exec.timeout", flag: "exec-timeout", kind: "duration", help: "per script execution, then the process tree is killed", ptr: func(c *config) any { return &c.Exec.Timeout }},
	{path: "exec.output_limit", flag: "exec-output-limit", kind: "size", help: "stdout+stderr kept per execution", ptr: func(c *config) any { return &c.Exec.OutputLimit }},
	{path: "exec.env", kind: "list", help: "extra environment for scripts: NAME (pass through) or NAME=value (env: comma-separated)", ptr: func(c *config) any { return &c.Exec.Env }},
	{path: "exec.concurrency", flag: "exec-concurrency", kind: "int", help: "script executions at once", ptr: func(c *config) any { return &c.Exec.Concurrency }},
	{path: "exec.allowed_tools", flag: "exec-allowed-tools", kind: "list", help: "client tools withheld upstream unless an active skill's allowed-tools names them (names, x* prefixes, * all; comma-separated)", ptr: func(c *config) any { return &c.Exec.AllowedTools }},
	{path: "exec.confinement", kind: "string", help: "write confinement of scripts: " + oneOf(confinementNames), ptr: func(c *config) any { return &c.Exec.Confinement }, choices: confinementNames},
	{path: "exec.output_dir", kind: "string", help: "root of per-conversation output folders", ptr: func(c *config) any { return &c.Exec.OutputDir }},
	{path: "exec.memory_limit", flag: "exec-memory-limit", kind: "size", help: "data segment of each script process, heap and private writable mappings (0: none; at least 64MiB)", ptr: func(c *config) any { return &c.Exec.MemoryLimit }},
	{path: "exec.file_size_limit", flag: "exec-file-size-limit", kind: "size", help: "largest file a script process may write (0: none)", ptr: func(c *config) any { return &c.Exec.FileSize }},
	{path: "exec.max_processes", flag: "exec-max-processes", kind: "int", help: "processes and threads of the proxy's user while a script runs, the proxy's own included (0: none; not enforced for root)", ptr: func(c *config) any { return &c.Exec.MaxProcesses }},
	{path: "debug.listen", flag: "debug-listen", kind: "string", help: "serve Go's /debug/pprof/ profiles on this address of its own, e.g. 127.0.0.1:6060 (empty: off)", ptr: func(c *config) any { return &c.Debug.Listen }},
	{path: "mcp.enabled", flag: "mcp", kind: "bool", help: "serve MCP (streamable HTTP) at /mcp: the library's tools, skill:// resources and prompts (docs/mcp.md)", ptr: func(c *config) any { return &c.MCP.Enabled }},
	{path: "server.read_header_timeout", kind: "duration", help: "time a client has to send the request headers", ptr: func(c *config) any { return &c.Server.ReadHeaderTimeout }},
	{path: "server.body_timeout", flag: "body-timeout", kind: "duration", help: "time a client has to send the request body (408 beyond; large pass-through uploads may need more)", ptr: func(c *config) any { return &c.Server.BodyTimeout }},
	{path: "server.write_timeout", kind: "duration", help: "time a write to a client may wait: a client that reads nothing for that long (a stream or an answer left unread) is disconnected, logged 499, and its upstream request cancelled", ptr: func(c *config) any { return &c.Server.WriteTimeout }},
	{path: "server.idle_timeout", kind: "duration", help: "how long an idle keep-alive connection is kept open", ptr: func(c *config) any { return &c.Server.IdleTimeout }},
	{path: "server.max_connections", flag: "max-connections", kind: "int", help: "client connections at once; more are answered 503 and closed (lowered to fit the open-file limit)", ptr: func(c *config) any { return &c.Server.MaxConnections }},
	{path: "server.body_memory", kind: "size", help: "routed request bodies held at once (0: 4 × body_limit); a request that finds no room waits up to 30s, then gets 503 server_busy", ptr: func(c *config) any { return &c.Server.BodyMemory }},
	{path: "server.shutdown_grace", flag: "shutdown-grace", kind: "duration", help: "on SIGINT/SIGTERM, time in-flight requests get to finish before streams are ended with an error event (a second signal exits at once)", ptr: func(c *config) any { return &c.Server.ShutdownGrace }},
	{path: "server.allowed_origins", flag: "allowed-origins", kind: "list", help: "browser origins allowed to call the proxy (CORS; * any); requests with any other Origin get 403", ptr: func(c *config) any { return &c.Server.AllowedOrigins }},
	{path: "server.allowed_hosts", flag: "allowed-hosts", kind: "list", help: "Host names served besides IP literals, localhost and this machine's name (*.example.com, * any); others get 403 (DNS rebinding)", ptr: func(c *config) any { return &c.Server.AllowedHosts }},
	{path: "server.metrics_listen", flag: "metrics-listen", kind: "string", help: "serve /metrics on this address instead of with the API (host:port)", ptr: func(c *config) any { return &c.Server.MetricsListen }},
	{path: "auth.api_keys", kind: "list", help: "client keys: clients must send one (Authorization: Bearer; x-api-key on /v1/messages); never forwarded (env: comma-separated)", ptr: func(c *config) any { return &c.Auth.APIKeys }},
	{path: "auth.api_keys_file", flag: "api-keys-file", kind: "string", help: "file of client keys, one a line (# comments), added to auth.api_keys", ptr: func(c *config) any { return &c.Auth.APIKeysFile }},
	{path: "auth.admin_token", kind: "string", help: "bearer token of the admin endpoints (POST /v1/skills/reload); without it they are served to loopback clients only (auth.admin_loopback)", ptr: func(c *config) any { return &c.Auth.AdminToken }},
	{path: "auth.client_id_secret", kind: "string", help: "secret keying the access log's client ids (digests of client keys); unset: a random one per process, so ids change on restart and differ between replicas: set the same on every replica to compare them", ptr: func(c *config) any { return &c.Auth.ClientIDSecret }},
	{path: "auth.admin_loopback", kind: "bool", help: "without auth.admin_token, serve the admin endpoints to loopback clients; false where a sidecar proxy (Istio, Linkerd) forwards every client from a loopback address (the Helm chart sets false)", ptr: func(c *config) any { return &c.Auth.AdminLoopback }},
	{path: "ab.header", kind: "string", help: "A/B: request header hashed to pick an arm (else the user field, else the first user message)", ptr: func(c *config) any { return &c.AB.Header }},
	{path: "ab.seed", kind: "string", help: "A/B: hash seed; change it to reshuffle assignments", ptr: func(c *config) any { return &c.AB.Seed }},
}

// pathKeys are the keys holding folders or files: relative values in a
// config file are relative to the file's folder.
var pathKeys = []string{"routing.index_dir", "routing.prebuilt_index", "embedder.cache_dir", "exec.output_dir", "auth.api_keys_file"}

// shownDefaults replaces a zero default in --help where the real default
// is decided downstream (by the embedding provider or the sandbox).
var shownDefaults = map[string]string{
	"skills":                 "the default folders that exist (router skills roots)",
	"embedder.model":         "per provider",
	"embedder.dimensions":    "per provider",
	"embedder.batch_size":    strconv.Itoa(embed.DefaultBatchSize),
	"embedder.timeout":       embed.DefaultTimeout.String(),
	"embedder.retries":       strconv.Itoa(embed.DefaultRetries),
	"embedder.cache_dir":     "$XDG_CACHE_HOME/skillrouter",
	"routing.rank_cache":     "up to 1024 (32 MiB)",
	"exec.concurrency":       "max(2, CPUs)",
	"exec.output_dir":        "$XDG_CACHE_HOME/skillrouter/out",
	"exec.memory_limit":      "none",
	"exec.file_size_limit":   "none",
	"exec.max_processes":     "none",
	"server.allowed_origins": "none",
}

// envAliases are shorter variables that route and bench have always read;
// every command honours them, below the canonical name.
var envAliases = map[string]string{
	"routing.strategy":  "SKILLROUTER_STRATEGY",
	"embedder.provider": "SKILLROUTER_EMBEDDER",
	"embedder.model":    "SKILLROUTER_EMBED_MODEL",
	"embedder.base_url": "SKILLROUTER_EMBED_URL",
	"embedder.api_key":  "SKILLROUTER_EMBED_KEY",
}

// misspelledEnv returns, for each SKILLROUTER_* variable in environ that no
// configuration key reads but that looks like the name of one (a typo, or
// the key's name without its section: SKILLROUTER_ADMIN_TOKEN), that
// variable and the name meant. Other SKILLROUTER_ variables (those the
// tests and scripts use) are left alone. Unknown keys in a file are errors;
// a variable cannot be, as anything may share the prefix.
func misspelledEnv(environ []string) [][2]string {
	known := configEnv()
	// Read elsewhere: the cache of the real-client tests, and what the
	// sandbox sets for scripts (a script may run router itself).
	for _, name := range []string{npmcache.EnvRoot, sandbox.EnvOutputDir, sandbox.EnvSkillDir} {
		known[name] = true
	}
	var out [][2]string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, "SKILLROUTER_")
		if !ok || known[name] || rest == "" {
			continue
		}
		best, bestD, tie := "", 3, false // at most two edits; a tie names none
		for k := range known {
			d := editdistance.Of(name, k)
			if strings.HasSuffix(k, "_"+rest) {
				d = 1 // the section left out
			}
			switch {
			case d < bestD:
				best, bestD, tie = k, d, false
			case d == bestD:
				tie = true
			}
		}
		if best != "" && !tie {
			out = append(out, [2]string{name, best})
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

// configEnv is the set of SKILLROUTER_* variables the configuration reads:
// one per key, the older aliases, SKILLROUTER_CONFIG and
// SKILLROUTER_DEFAULTS.
func configEnv() map[string]bool {
	known := map[string]bool{"SKILLROUTER_CONFIG": true, envDefaults: true}
	for _, k := range configKeys {
		known[k.env()] = true
	}
	for _, name := range envAliases {
		known[name] = true
	}
	return known
}

// printMisspelledEnv writes misspelledEnv's findings for the running
// process to w, one line each.
func printMisspelledEnv(w io.Writer) {
	for _, m := range misspelledEnv(os.Environ()) {
		fmt.Fprintf(w, "router: %s is not read by skillrouter; did you mean %s?\n", m[0], m[1])
	}
}

// warnMisspelledEnv logs misspelledEnv's findings for the running process.
func warnMisspelledEnv(log *slog.Logger) {
	for _, m := range misspelledEnv(os.Environ()) {
		log.Warn("environment variable not read by skillrouter; did you mean another?", "variable", m[0], "did_you_mean", m[1])
	}
}

func keyByPath(path string) (configKey, bool) {
	for _, k := range configKeys {
		if k.path == path {
			return k, true
		}
	}
	return configKey{}, false
}

func shownDefault(k configKey, def *config) string {
	if d, ok := shownDefaults[k.path]; ok {
		return d
	}
	return valueString(k.ptr(def))
}

// setValue parses s into the field ptr points at; errors say what was
// expected, not what went wrong inside a parser.
func setValue(ptr any, kind, s string) error {
	switch p := ptr.(type) {
	case *string:
		*p = s
	case *bool:
		v, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q: %s", s, wantBool)
		}
		*p = v
	case *int:
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q: %s", s, wantInt)
		}
		*p = v
	case *time.Duration:
		v, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q: %s", s, wantDuration)
		}
		*p = v
	case *byteSize:
		v, err := parseSize(s)
		if err != nil {
			return err
		}
		*p = byteSize(v)
	case *[]string:
		sep := ","
		if kind == "paths" { // folder names may hold commas
			sep = string(os.PathListSeparator)
		}
		*p = nil
		parts := strings.Split(s, sep)
		for i := 0; i < len(parts); i++ {
			f := strings.TrimSpace(parts[i])
			if kind == "paths" && sep == ":" && f+":" == builtinPrefix && i+1 < len(parts) {
				// builtin:examples names the built-in library, not two
				// folders "builtin" and "examples".
				i++
				f = builtinPrefix + strings.TrimSpace(parts[i])
			}
			if f != "" {
				*p = append(*p, f)
			}
		}
		if *p == nil && strings.TrimSpace(s) != "" {
			// ", ," is a list with nothing in it, most likely a value that
			// did not expand: for auth.api_keys that would open the proxy
			// to everyone, where a keys file without a key is refused.
			return fmt.Errorf("%q lists nothing: leave it empty for none", s)
		}
	default:
		return fmt.Errorf("unsupported setting type %T", ptr)
	}
	return nil
}

// valueString renders the field for --help and --print-config.
func valueString(ptr any) string {
	switch p := ptr.(type) {
	case *string:
		return *p
	case *bool:
		return strconv.FormatBool(*p)
	case *int:
		return strconv.Itoa(*p)
	case *time.Duration:
		return p.String()
	case *byteSize:
		return formatSize(int64(*p))
	case *[]string:
		return strings.Join(*p, ",")
	}
	return ""
}

// provenance records where values came from: the config file and the line
// of each key in it, and the variable or flag that overrode a key since.
type provenance struct {
	file   string            // the config file as given; "" when none
	lines  map[string]int    // key path -> line in file (ab.arms[0].strategy, routing.min_score.bm25, ...)
	origin map[string]string // key path -> "environment X" or "flag --x", when set after the file
	// The defaults file (SKILLROUTER_DEFAULTS) and its lines: named in
	// errors, though its values count as defaults (fromFile is false).
	defaultsFile  string
	defaultsLines map[string]int
	// skillsWritten holds the skills entries as written, parallel to
	// config.Skills (which holds them resolved).
	skillsWritten []string
	// secrets and defaultsSecrets name the keys the config file and the
	// defaults file set to a secret (secretKeys), for exposedSecrets.
	secrets         []string
	defaultsSecrets []string
}

func newProvenance() *provenance {
	return &provenance{lines: map[string]int{}, origin: map[string]string{}}
}

// where names the origin of key's value: "config c.yaml:4", "environment
// SKILLROUTER_X", "flag --x"; "" for a default.
func (p *provenance) where(key string) string {
	if p == nil {
		return ""
	}
	if o := p.origin[key]; o != "" {
		return o
	}
	if l, ok := p.lines[key]; ok {
		return fmt.Sprintf("config %s:%d", p.file, l)
	}
	if l, ok := p.defaultsLines[key]; ok {
		return fmt.Sprintf("%s %s:%d", envDefaults, p.defaultsFile, l)
	}
	return ""
}

// fromFile reports whether key's value was written in the config file.
func (p *provenance) fromFile(key string) bool {
	if p == nil || p.origin[key] != "" {
		return false
	}
	_, ok := p.lines[key]
	return ok
}

// valueError is a bad value of one key, with what the key accepts.
type valueError struct {
	key   string
	value string
	want  string
}

func (e *valueError) Error() string { return fmt.Sprintf("%s %q: %s", e.key, e.value, e.want) }
func (e *valueError) Key() string   { return e.key }

// keyError is a problem of a key's value found by the package that uses it.
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string { return e.key + ": " + e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }
func (e *keyError) Key() string   { return e.key }

// keyFlag is a pflag.Value that records the raw text of a key's flag; the
// text is parsed when the flags are applied, after file and environment.
type keyFlag struct {
	kind string
	val  string
}

func (f *keyFlag) String() string { return f.val }
func (f *keyFlag) Set(s string) error {
	f.val = s
	return nil
}
func (f *keyFlag) Type() string {
	switch f.kind {
	case "bool", "int", "duration":
		return f.kind
	}
	return "string"
}

// configFlags are the configuration flags of one command.
type configFlags struct {
	config      string
	skills      []string
	printConfig bool
	keyFlags    map[string]*keyFlag // by flag name
	aliases     map[string][]string // flag name -> older names that set it too
}

// registerServing registers the flags of the keys at paths (every key when
// none) and --print-config, for the commands that serve (serve, mcp).
func (cf *configFlags) registerServing(fs *pflag.FlagSet, paths ...string) {
	cf.register(fs, paths...)
	fs.BoolVar(&cf.printConfig, "print-config", false, "print the effective configuration as YAML (secrets redacted) and exit")
}

// runConfigured is the RunE of a serving command: it loads the
// configuration, prints it for --print-config, else finds the skill roots
// and calls run.
func runConfigured(cf *configFlags, run func(ctx context.Context, cfg config, roots []string, logw io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cfg, err := loadConfig(cmd.Flags(), cf, os.LookupEnv)
		if err != nil {
			return err
		}
		if cf.printConfig {
			// serve and mcp log a misspelled variable once they run; the
			// configuration printed to check the variables must say it too.
			printMisspelledEnv(cmd.ErrOrStderr())
			enc := yaml.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent(2)
			defer enc.Close()
			return enc.Encode(cfg.effective().redacted())
		}
		roots, err := requireRoots(&cfg, tryCommand(cmd, args))
		if err != nil {
			return err
		}
		return run(cmd.Context(), cfg, roots, cmd.ErrOrStderr())
	}
}

// configAndRoots loads the configuration as cmd's flags, the environment and
// the file give it, and the skill roots it chooses (an error saying how to
// get a library when there is none).
func configAndRoots(cmd *cobra.Command, cf *configFlags, args []string) (config, []string, error) {
	cfg, err := loadConfig(cmd.Flags(), cf, os.LookupEnv)
	if err != nil {
		return cfg, nil, err
	}
	roots, err := requireRoots(&cfg, tryCommand(cmd, args))
	return cfg, roots, err
}

// register adds --config and the flags of the keys at paths to fs (every key
// with a flag when paths is empty), each with its key, variable and default
// in its help. "skills" adds the repeatable --skills.
func (cf *configFlags) register(fs *pflag.FlagSet, paths ...string) {
	def := defaultConfig()
	cf.keyFlags = map[string]*keyFlag{}
	cf.aliases = map[string][]string{}
	fs.StringVarP(&cf.config, "config", "c", "", "YAML configuration file (env SKILLROUTER_CONFIG); relative paths in it are relative to its folder")
	if len(paths) == 0 || slices.Contains(paths, "skills") {
		addSkillsFlag(fs, &cf.skills)
	}
	for _, k := range configKeys {
		if k.flag == "" || (len(paths) > 0 && !slices.Contains(paths, k.path)) {
			continue
		}
		kf := &keyFlag{kind: k.kind}
		cf.keyFlags[k.flag] = kf
		help := k.help + " (" + k.path + ", env " + k.env()
		if d := shownDefault(k, &def); d != "" && !strings.Contains(k.path, "api_key") {
			help += ", default " + d
		}
		help += ")"
		fs.Var(kf, k.flag, help)
		if k.kind == "bool" {
			fs.Lookup(k.flag).NoOptDefVal = "true"
		}
	}
}

// alias adds a hidden older name for a registered key flag.
func (cf *configFlags) alias(fs *pflag.FlagSet, old, flag string) {
	kf := cf.keyFlags[flag]
	if kf == nil {
		panic("alias of unregistered flag --" + flag)
	}
	fs.Var(kf, old, "same as --"+flag)
	_ = fs.MarkHidden(old)
	cf.aliases[flag] = append(cf.aliases[flag], old)
}

// changed returns the name the key flag was set under, or "".
func (cf *configFlags) changed(fs *pflag.FlagSet, flag string) string {
	if cf.keyFlags[flag] == nil {
		return ""
	}
	if fs.Changed(flag) {
		return flag
	}
	for _, a := range cf.aliases[flag] {
		if fs.Changed(a) {
			return a
		}
	}
	return ""
}

// loadConfig builds the configuration: defaults, then the file, then the
// environment, then the flags that were set. Errors name where the bad
// value was written (file:line, variable or flag) and what is accepted.
func loadConfig(fs *pflag.FlagSet, cf *configFlags, getenv func(string) (string, bool)) (config, error) {
	cfg := defaultConfig()
	if path, _ := getenv(envDefaults); path != "" {
		if err := loadDefaultsFile(path, &cfg); err != nil {
			return cfg, err
		}
	}
	path := cf.config
	if path == "" {
		path, _ = getenv("SKILLROUTER_CONFIG")
	}
	if path != "" {
		if err := loadConfigFile(path, &cfg); err != nil {
			return cfg, err
		}
	}
	for _, k := range configKeys {
		name := k.env()
		v, ok := getenv(name)
		if !ok && envAliases[k.path] != "" {
			name = envAliases[k.path]
			v, ok = getenv(name)
		}
		if ok {
			if err := setValue(k.ptr(&cfg), k.kind, v); err != nil {
				return cfg, fmt.Errorf("environment %s: %s %w", name, k.path, err)
			}
			cfg.src.origin[k.path] = "environment " + name
			if k.path == "skills" {
				cfg.Skills = expandHomes(cfg.Skills)
				cfg.src.skillsWritten = slices.Clone(cfg.Skills)
			}
		}
	}
	for _, k := range configKeys {
		name := cf.changed(fs, k.flag)
		if name == "" {
			continue
		}
		if err := setValue(k.ptr(&cfg), k.kind, cf.keyFlags[k.flag].val); err != nil {
			return cfg, usageError{fmt.Errorf("flag --%s: %s %w", name, k.path, err)}
		}
		cfg.src.origin[k.path] = "flag --" + name
	}
	if fs.Lookup("skills") != nil && fs.Changed("skills") {
		cfg.Skills = expandHomes(cf.skills)
		cfg.src.skillsWritten = slices.Clone(cf.skills)
		cfg.src.origin["skills"] = "flag --skills"
	}
	if err := cfg.validate(); err != nil {
		var ke interface{ Key() string }
		if errors.As(err, &ke) {
			if w := cfg.src.where(ke.Key()); w != "" {
				err = fmt.Errorf("%s: %w", w, err)
				if strings.HasPrefix(w, "flag --") {
					// A bad value on the command line: exit 2, as a bad
					// value of a command's own flags.
					err = usageError{err}
				}
				return cfg, err
			}
		}
		return cfg, err
	}
	return cfg, nil
}

// envDefaults names a YAML file of defaults: a config file read before
// the real one, whose values count as defaults. The container images set it
// (deploy/image), so that a container listens on every interface and serves
// /skills unless a config file, a variable or a flag says otherwise; set as
// SKILLROUTER_LISTEN and the like, those defaults would beat the config file.
const envDefaults = "SKILLROUTER_DEFAULTS"

// loadDefaultsFile decodes the defaults file over cfg. What it sets is not
// the config file's: provenance still reports it as a default.
func loadDefaultsFile(path string, cfg *config) error {
	src := cfg.src
	cfg.src = newProvenance()
	err := loadConfigFile(path, cfg)
	src.defaultsFile, src.defaultsLines = path, cfg.src.lines
	src.skillsWritten = cfg.src.skillsWritten
	src.defaultsSecrets = cfg.src.secrets
	cfg.src = src
	if err != nil {
		return fmt.Errorf("%s: %w", envDefaults, err)
	}
	return nil
}

// loadConfigFile decodes a YAML file over cfg. Every error names the file
// and line; unknown keys name the keys allowed there, bad values what the
// key accepts. Relative folders are resolved against the file's folder.
func loadConfigFile(path string, cfg *config) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	cfg.src.file = path
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		msg := err.Error()
		if strings.Contains(msg, "did not find expected alphabetic or numeric character") || strings.Contains(msg, "unknown anchor") {
			// A * or & that starts a value is an alias or anchor to YAML: the patterns
			// of upstream.passthrough ("**", "*/items") must be quoted.
			msg += ` (a value that starts with * or & must be quoted: "**", "*/items")`
		}
		if strings.Contains(msg, "found character that cannot start any token") {
			// yaml.v3 names no line for a tab that indents.
			for i, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(strings.TrimLeft(l, " "), "\t") {
					return fmt.Errorf("config %s:%d: %s (a tab indents this line: YAML indents with spaces)", path, i+1, strings.TrimPrefix(msg, "yaml: "))
				}
			}
		}
		return fmt.Errorf("config %s", fileLines(path, msg, nil))
	}
	if len(doc.Content) == 0 {
		return nil // empty file: defaults
	}
	if err := checkNode(doc.Content[0], reflect.TypeOf(config{}), "", cfg.src.lines); err != nil {
		var le *lineError
		if errors.As(err, &le) {
			return fmt.Errorf("config %s:%d: %s", path, le.line, le.msg)
		}
		return fmt.Errorf("config %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("config %s", fileLines(path, err.Error(), cfg.src.lines))
	}
	// A second document (after ---) would be read by nothing: its keys,
	// typos included, would go unnoticed.
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		// A closing --- with nothing after it is no second document.
		if len(more.Content) > 0 && more.Content[0].Tag != "!!null" {
			return fmt.Errorf("config %s:%d: a second YAML document (after ---): the configuration is one document; merge the two", path, more.Content[0].Line)
		}
	} else if !errors.Is(err, io.EOF) {
		return fmt.Errorf("config %s", fileLines(path, err.Error(), cfg.src.lines))
	}
	// The secrets the file itself holds (not the defaults or other files'):
	// it should be readable by this user alone (exposedSecrets).
	var own config
	if doc.Decode(&own) == nil { // the tree parsed above, not the text again
		cfg.src.secrets = secretKeys(own)
	}
	// Relative folders are relative to the file, not to where the command
	// happens to run, so a config file works from anywhere.
	base := filepath.Dir(path)
	cfg.src.skillsWritten = slices.Clone(cfg.Skills)
	for i, s := range cfg.Skills {
		cfg.Skills[i] = resolvePath(base, s)
	}
	for _, key := range pathKeys {
		p := configPathPtr(cfg, key)
		*p = resolvePath(base, *p)
	}
	for _, a := range cfg.AB.Arms {
		if a.Embedder != nil {
			a.Embedder.CacheDir = resolvePath(base, a.Embedder.CacheDir)
		}
	}
	return nil
}

func configPathPtr(cfg *config, key string) *string {
	k, _ := keyByPath(key)
	return k.ptr(cfg).(*string)
}

// resolvePath makes a folder written in a config file usable from anywhere:
// ~/x is under the home folder, a relative path is under base. Empty
// values, "-" (disabled) and builtin: libraries are kept as they are.
func resolvePath(base, p string) string {
	if p == "" || p == "-" || strings.HasPrefix(p, builtinPrefix) {
		return p
	}
	p = expandHome(p)
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

// expandHome turns a leading ~/ into the home folder (the shell does it for
// flags, but not for values in files and environment variables).
func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

func expandHomes(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = expandHome(p)
	}
	return out
}

// lineError is a problem at a line of the config file.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

var (
	durationType = reflect.TypeOf(time.Duration(0))
	sizeType     = reflect.TypeOf(byteSize(0))
)

// checkNode walks a YAML node against the Go type t before decoding: keys
// must exist, scalars must parse as their field's type. lines receives the
// line of every key, by path, for later messages.
func checkNode(n *yaml.Node, t reflect.Type, prefix string, lines map[string]int) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	key := strings.TrimSuffix(prefix, ".")
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // "key:" with no value: the default stays
	}
	switch {
	case t == durationType:
		if _, err := time.ParseDuration(n.Value); err != nil || n.Kind != yaml.ScalarNode {
			return &lineError{n.Line, fmt.Sprintf("%s %q: %s", key, n.Value, wantDuration)}
		}
		if n.ShortTag() == "!!int" {
			// A bare 0 parses as a duration but YAML reads it as a number,
			// which the decoder refuses with a message that names no fix.
			return &lineError{n.Line, fmt.Sprintf("%s %q: %s (write 0s: YAML reads a bare 0 as a number)", key, n.Value, wantDuration)}
		}
	case t == sizeType:
		if _, err := parseSize(n.Value); err != nil || n.Kind != yaml.ScalarNode {
			return &lineError{n.Line, fmt.Sprintf("%s %q: %s", key, n.Value, wantSize)}
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			what := key
			if what == "" {
				what = "the configuration" // the whole document: a list or a bare value
			}
			return &lineError{n.Line, fmt.Sprintf("%s: want a mapping with the keys %s", what, strings.Join(structKeys(t), ", "))}
		}
		known := map[string]reflect.StructField{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name != "" && name != "-" {
				known[name] = f
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			f, ok := known[kn.Value]
			if !ok {
				return &lineError{kn.Line, fmt.Sprintf("unknown key %q (known keys%s: %s)", prefix+kn.Value,
					atPrefix(prefix), strings.Join(structKeys(t), ", "))}
			}
			lines[prefix+kn.Value] = kn.Line
			if err := checkNode(vn, f.Type, prefix+kn.Value+".", lines); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			msg := fmt.Sprintf("%s: want a mapping", key)
			if ex := mappingExamples[key]; ex != "" {
				msg += " such as " + ex
			}
			return &lineError{n.Line, msg}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			lines[prefix+kn.Value] = kn.Line
			if err := checkNode(vn, t.Elem(), prefix+kn.Value+".", lines); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return &lineError{n.Line, fmt.Sprintf("%s: want a list, such as [a, b] or one \"- item\" per line", key)}
		}
		for i, el := range n.Content {
			p := fmt.Sprintf("%s[%d]", key, i)
			lines[p] = el.Line
			if err := checkNode(el, t.Elem(), p+".", lines); err != nil {
				return err
			}
		}
	case n.Kind != yaml.ScalarNode:
		return &lineError{n.Line, fmt.Sprintf("%s: want a single value, not a list or mapping", key)}
	case t.Kind() == reflect.Bool:
		var v bool
		if yaml.Unmarshal([]byte(n.Value), &v) != nil || n.Tag != "!!bool" {
			return &lineError{n.Line, fmt.Sprintf("%s %q: %s", key, n.Value, wantBool)}
		}
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		if _, err := strconv.Atoi(n.Value); err != nil {
			return &lineError{n.Line, fmt.Sprintf("%s %q: %s", key, n.Value, wantInt)}
		}
		if quoted(n) {
			return &lineError{n.Line, fmt.Sprintf("%s %q: %s, written without quotes (%s: %s)", key, n.Value, wantInt, key, n.Value)}
		}
	case t.Kind() == reflect.Float64:
		if _, err := strconv.ParseFloat(n.Value, 64); err != nil {
			return &lineError{n.Line, fmt.Sprintf("%s %q: %s", key, n.Value, wantNumber)}
		}
		if quoted(n) {
			return &lineError{n.Line, fmt.Sprintf("%s %q: %s, written without quotes (%s: %s)", key, n.Value, wantNumber, key, n.Value)}
		}
	}
	return nil
}

// quoted reports whether a scalar was written in quotes: YAML reads "4" as
// text, which a number setting does not take.
func quoted(n *yaml.Node) bool {
	return n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
}

func structKeys(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

var lineRE = regexp.MustCompile(`(?:yaml: )?line (\d+): `)

// fileLines rewrites each "line N: " of a yaml error as "FILE:N: " (and the
// key written there, when known), so every message points at the file.
func fileLines(path, msg string, lines map[string]int) string {
	byLine := map[int]string{}
	for k, l := range lines {
		if prev, ok := byLine[l]; !ok || len(k) > len(prev) {
			byLine[l] = k
		}
	}
	out := lineRE.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(lineRE.FindStringSubmatch(m)[1])
		if k, ok := byLine[n]; ok {
			return fmt.Sprintf("%s:%d: %s: ", path, n, k)
		}
		return fmt.Sprintf("%s:%d: ", path, n)
	})
	if out == msg {
		return path + ": " + msg
	}
	return strings.TrimPrefix(out, "yaml: unmarshal errors:\n  ")
}

func atPrefix(prefix string) string {
	if prefix == "" {
		return ""
	}
	return " under " + strings.TrimSuffix(prefix, ".")
}

// selfAddressed reports whether u names the address listen serves: the
// same port on listen's own host, on localhost when listen is a loopback
// address, or on any local address when listen is every address. A proxy
// on one address leaves the same port on others to other servers.
func selfAddressed(u *url.URL, listen string) bool {
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil || lport == "0" {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != lport {
		return false
	}
	host := u.Hostname()
	if host == lhost {
		return true
	}
	local := func(h string) bool { // this machine's loopback or any address
		ip := net.ParseIP(h)
		return h == "localhost" || ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
	}
	switch lip := net.ParseIP(lhost); {
	case lhost == "" || lip != nil && lip.IsUnspecified():
		return local(host) // every address: the loopback ones too
	case lip != nil && lip.IsLoopback():
		// localhost resolves to it; another loopback address (::1 beside
		// 127.0.0.1) may be another server's.
		return host == "localhost"
	}
	return false
}

// mappingExamples show the keys whose value is a mapping of the user's
// own keys what such a mapping looks like.
var mappingExamples = map[string]string{
	"routing.min_score": "{hybrid: 0.03, bm25: 0.2} (a strategy's least confidence to auto-load)",
}

// validate reports the first bad value as a *valueError naming its key and
// what the key accepts.
func (c *config) validate() error {
	for _, up := range []struct{ key, v, example, keyKey string }{
		{"upstream.url", c.Upstream.URL, proxy.DefaultUpstream, "upstream.api_key"},
		{"upstream.anthropic_url", c.Upstream.AnthropicURL, "https://api.anthropic.com/v1", "upstream.anthropic_api_key"},
	} {
		if up.v == "" && up.key == "upstream.anthropic_url" {
			continue // upstream.url's
		}
		u, err := url.Parse(up.v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &valueError{up.key, redact.Userinfo(up.v), "want an absolute http(s) URL such as " + up.example}
		}
		if u.User != nil {
			// The check's client would send them, the proxy's requests not.
			return &valueError{up.key, redact.Userinfo(up.v), "credentials in the URL are not sent with requests: set " + up.keyKey + " instead"}
		}
		if selfAddressed(u, c.Listen) {
			// Every request would be sent to the proxy again (508 after
			// one round, the proxy's Via check), and the start-up check too.
			return &valueError{up.key, redact.Userinfo(up.v), "this is the proxy's own listen address (" + c.Listen + "): set it to the model server's address"}
		}
	}
	for _, l := range []struct{ key, v string }{
		{"listen", c.Listen}, {"server.metrics_listen", c.Server.MetricsListen}, {"debug.listen", c.Debug.Listen},
	} {
		if l.v == "" && l.key != "listen" {
			continue // off
		}
		if _, port, err := net.SplitHostPort(l.v); err != nil || port == "" {
			return &valueError{l.key, l.v, "want host:port, such as " + defaultListen}
		} else if port[0] >= '0' && port[0] <= '9' || port[0] == '+' || port[0] == '-' {
			// A number (a name such as "http" is the system's to resolve).
			if _, err := strconv.ParseUint(port, 10, 16); err != nil {
				return &valueError{l.key, l.v, "want a port from 0 to 65535"}
			}
		}
	}
	for i, k := range c.Auth.APIKeys {
		if strings.TrimSpace(k) == "" {
			// It would match no client's key: every request refused.
			return &valueError{fmt.Sprintf("auth.api_keys[%d]", i), k, "want a key, not an empty string"}
		}
	}
	for _, k := range configKeys {
		if k.choices == nil {
			continue
		}
		v := *k.ptr(c).(*string)
		if k.path == "embedder.provider" && v == "" {
			continue // the builtin
		}
		if !slices.Contains(k.choices, v) {
			return &valueError{k.path, v, "want " + oneOf(k.choices)}
		}
	}
	for _, k := range configKeys {
		switch p := k.ptr(c).(type) {
		case *int:
			switch {
			case k.path == "routing.rank_cache" || k.path == "embedder.retries":
				// -1 turns them off; 0 is the default.
				if *p < -1 {
					return &valueError{k.path, strconv.Itoa(*p), "want -1 (off), 0 (the default) or more"}
				}
			case *p < 0:
				return &valueError{k.path, strconv.Itoa(*p), "want 0 or more"}
			}
		case *time.Duration:
			if *p < 0 {
				return &valueError{k.path, p.String(), "want 0 or more"}
			}
		}
	}
	if c.BodyLimit < 1024 {
		// A bare number is bytes: "8" meant as 8 MiB would refuse every request.
		return &valueError{"body_limit", formatSize(int64(c.BodyLimit)), "want at least 1KiB (a number without a unit is bytes), such as " + formatSize(proxy.DefaultBodyLimit)}
	}
	for _, d := range []struct {
		key       string
		v, sample time.Duration
	}{
		{"upstream.timeout", c.Upstream.Timeout, proxy.DefaultUpstreamTimeout},
		{"upstream.connect_timeout", c.Upstream.ConnectTimeout, proxy.DefaultConnectTimeout},
		{"upstream.header_timeout", c.Upstream.HeaderTimeout, proxy.DefaultHeaderTimeout},
		{"upstream.idle_timeout", c.Upstream.IdleTimeout, proxy.DefaultIdleTimeout},
		{"server.read_header_timeout", c.Server.ReadHeaderTimeout, 10 * time.Second},
		{"server.body_timeout", c.Server.BodyTimeout, proxy.DefaultBodyTimeout},
		{"server.write_timeout", c.Server.WriteTimeout, proxy.DefaultWriteTimeout},
		{"server.idle_timeout", c.Server.IdleTimeout, time.Minute},
		{"server.shutdown_grace", c.Server.ShutdownGrace, 30 * time.Second},
	} {
		if d.v <= 0 {
			return &valueError{d.key, d.v.String(), "want a positive duration, such as " + d.sample.String()}
		}
	}
	if err := proxy.CheckPassThrough(c.Upstream.PassThrough); err != nil {
		var pe *proxy.PatternError
		if !errors.As(err, &pe) {
			return &keyError{"upstream.passthrough", err}
		}
		key := "upstream.passthrough"
		if c.src.fromFile(key) { // the pattern's own line
			key = fmt.Sprintf("%s[%d]", key, pe.Index)
		}
		return &valueError{key, pe.Pattern, pe.Reason}
	}
	if m := c.Server.BodyMemory; m != 0 && m < c.BodyLimit {
		// A body may be body_limit long: it would wait for room that never comes.
		return &valueError{"server.body_memory", formatSize(int64(m)), "want 0 (4 × body_limit) or at least body_limit (" + formatSize(int64(c.BodyLimit)) + ")"}
	}
	if c.Server.MaxConnections <= 0 {
		return &valueError{"server.max_connections", strconv.Itoa(c.Server.MaxConnections), "want a positive number, such as " + strconv.Itoa(defaultMaxConnections)}
	}
	// Two servers on one address: the second fails at start with "address
	// already in use", which names neither key.
	for _, l := range []struct{ key, addr string }{{"server.metrics_listen", c.Server.MetricsListen}, {"debug.listen", c.Debug.Listen}} {
		if l.addr != "" && l.addr == c.Listen && !strings.HasSuffix(c.Listen, ":0") {
			return &valueError{l.key, l.addr, "must differ from listen"}
		}
	}
	if a := c.Debug.Listen; a != "" && a == c.Server.MetricsListen && !strings.HasSuffix(a, ":0") {
		return &valueError{"debug.listen", a, "must differ from server.metrics_listen"}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Routing.MinScore)) {
		if !router.ValidStrategy(router.Strategy(k)) {
			return &valueError{"routing.min_score." + k, k, "a strategy: want " + oneOf(strategyNames)}
		}
	}
	arms := make([]proxy.Arm, len(c.AB.Arms))
	for i, a := range c.AB.Arms {
		if a.Strategy != "" && !router.ValidStrategy(router.Strategy(a.Strategy)) {
			return &valueError{fmt.Sprintf("ab.arms[%d].strategy", i), a.Strategy, "want " + oneOf(strategyNames)}
		}
		if a.Embedder != nil && a.Embedder.Provider != "" && !slices.Contains(providerNames, a.Embedder.Provider) {
			return &valueError{fmt.Sprintf("ab.arms[%d].embedder.provider", i), a.Embedder.Provider, "want " + oneOf(providerNames)}
		}
		arms[i] = proxy.Arm{Name: a.Name, Percent: a.Percent, Strategy: router.Strategy(a.Strategy)}
	}
	if err := proxy.CheckArms(arms); err != nil {
		return &keyError{"ab.arms", err}
	}
	// The embedders' own checks (dimensions, base URL); building one
	// contacts nothing.
	if _, err := embed.New(c.Embedder); err != nil {
		return &keyError{"embedder", err}
	}
	for i, a := range c.AB.Arms {
		if a.Embedder != nil {
			if _, err := embed.New(*a.Embedder); err != nil {
				return &keyError{fmt.Sprintf("ab.arms[%d].embedder", i), err}
			}
		}
	}
	return nil
}

// effective returns a copy with the values zero fields stand for, which
// the packages that read them decide, for --print-config: it prints what
// the server will use.
func (c config) effective() config {
	c.Embedder = c.Embedder.Effective() // cache_dir stays: resolving it creates the folder
	if c.Routing.RankCache == 0 {
		c.Routing.RankCache = router.DefaultRankCache
	}
	if sc, err := (sandbox.Config{Timeout: c.Exec.Timeout, OutputLimit: int(c.Exec.OutputLimit), Concurrency: c.Exec.Concurrency, OutputRoot: c.Exec.OutputDir}).Effective(); err == nil {
		c.Exec.Timeout, c.Exec.OutputLimit = sc.Timeout, byteSize(sc.OutputLimit)
		c.Exec.Concurrency, c.Exec.OutputDir = sc.Concurrency, sc.OutputRoot
	}
	return c
}

// secretKeys names the keys of c that hold a secret: those whose value
// redacted changes, so that redacted's list of secrets is the only one
// (list items count under their list: auth.api_keys, exec.env,
// ab.arms.embedder.api_key).
func secretKeys(c config) []string {
	var keys []string
	var walk func(a, b reflect.Value, key string)
	walk = func(a, b reflect.Value, key string) {
		switch a.Kind() {
		case reflect.Struct:
			for i := range a.NumField() {
				f := a.Type().Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if !f.IsExported() || name == "" || name == "-" {
					continue
				}
				if key != "" {
					name = key + "." + name
				}
				walk(a.Field(i), b.Field(i), name)
			}
		case reflect.Pointer:
			if !a.IsNil() && !b.IsNil() {
				walk(a.Elem(), b.Elem(), key)
			}
		case reflect.Slice:
			for i := range min(a.Len(), b.Len()) {
				walk(a.Index(i), b.Index(i), key)
			}
		case reflect.String:
			if a.String() != b.String() && !slices.Contains(keys, key) {
				keys = append(keys, key)
			}
		}
	}
	walk(reflect.ValueOf(c), reflect.ValueOf(c.redacted()), "")
	return keys
}

// secretFile is a file the configuration reads that holds secrets, and
// how other users can read it.
type secretFile struct {
	path    string
	holds   string // the keys, or what the file is
	exposed string // private.Exposed
}

// exposedSecrets lists the files holding secrets that other users can read
// (private.Exposed): the config file and the defaults file when they set a
// key --print-config redacts, and auth.api_keys_file. serve and mcp warn of
// each at start, doctor in a row; a file without secrets may be readable.
func exposedSecrets(cfg *config) []secretFile {
	var files []secretFile
	if cfg.src != nil && cfg.src.file != "" && len(cfg.src.secrets) > 0 {
		files = append(files, secretFile{path: cfg.src.file, holds: strings.Join(cfg.src.secrets, ", ")})
	}
	if cfg.src != nil && cfg.src.defaultsFile != "" && len(cfg.src.defaultsSecrets) > 0 {
		files = append(files, secretFile{path: cfg.src.defaultsFile, holds: strings.Join(cfg.src.defaultsSecrets, ", ")})
	}
	if cfg.Auth.APIKeysFile != "" {
		files = append(files, secretFile{path: cfg.Auth.APIKeysFile, holds: "client keys (auth.api_keys_file)"})
	}
	var out []secretFile
	for _, f := range files {
		if how, err := private.Exposed(f.path); err == nil && how != "" {
			f.exposed = how
			out = append(out, f)
		}
	}
	return out
}

// warnExposedSecrets logs a warning for each of exposedSecrets.
func warnExposedSecrets(log *slog.Logger, cfg *config) {
	for _, f := range exposedSecrets(cfg) {
		log.Warn("a file holding secrets can be read by other users: "+f.exposed+"; chmod 600 it (or keep the secrets in the environment)",
			"file", f.path, "holds", f.holds)
	}
}

// redacted returns a copy with secrets replaced, for --print-config.
func (c config) redacted() config {
	hide := func(s *string) {
		if *s != "" {
			*s = "REDACTED"
		}
	}
	hide(&c.Upstream.APIKey)
	hide(&c.Upstream.AnthropicAPIKey)
	// A password in a URL is a credential too (sent as Basic auth).
	c.Upstream.URL = redact.URL(c.Upstream.URL)
	c.Upstream.AnthropicURL = redact.URL(c.Upstream.AnthropicURL)
	c.Embedder.BaseURL = redact.URL(c.Embedder.BaseURL)
	hide(&c.Auth.AdminToken)
	hide(&c.Auth.ClientIDSecret)
	keys := make([]string, len(c.Auth.APIKeys))
	for i := range keys {
		keys[i] = "REDACTED"
	}
	c.Auth.APIKeys = keys
	hide(&c.Embedder.APIKey)
	arms := make([]armConfig, len(c.AB.Arms))
	for i, a := range c.AB.Arms {
		if a.Embedder != nil {
			e := *a.Embedder
			hide(&e.APIKey)
			e.BaseURL = redact.URL(e.BaseURL)
			a.Embedder = &e
		}
		arms[i] = a
	}
	c.AB.Arms = arms
	// exec.env NAME=value entries set a value for scripts, often a token;
	// NAME alone passes the proxy's own and shows nothing.
	env := make([]string, len(c.Exec.Env))
	for i, e := range c.Exec.Env {
		if name, _, ok := strings.Cut(e, "="); ok {
			e = name + "=REDACTED"
		}
		env[i] = e
	}
	c.Exec.Env = env
	return c
}

// configHelp is the table of keys in `router serve --help`: the keys at
// paths (every key when none), as the command registered them.
func configHelp(paths ...string) string {
	def := defaultConfig()
	shown := func(path string) bool { return len(paths) == 0 || slices.Contains(paths, path) }
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  KEY\tENVIRONMENT\tFLAG\tDEFAULT")
	for _, k := range configKeys {
		if !shown(k.path) {
			continue
		}
		flag := "-"
		if k.flag != "" {
			flag = "--" + k.flag
		} else if k.path == "skills" {
			flag = "--skills"
		}
		d := shownDefault(k, &def)
		if d == "" {
			d = "-"
		}
		env := k.env()
		if a := envAliases[k.path]; a != "" {
			env += " or " + a
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", k.path, env, flag, d)
	}
	// Keys of the file only.
	if shown("routing.strategy") {
		fmt.Fprintln(tw, "  routing.min_score\t-\t-\tcalibrated (map strategy: score)")
	}
	if shown("ab.header") {
		fmt.Fprintln(tw, "  ab.arms\t-\t-\tnone (list of name, percent, strategy, embedder)")
	}
	tw.Flush()
	// Keys with a flag are described under Flags; the others here.
	b.WriteString("\nKeys without a flag of their own:\n")
	for _, k := range configKeys {
		if k.flag == "" && k.help != "" && shown(k.path) {
			fmt.Fprintf(&b, "  %s: %s\n", k.path, k.help)
		}
	}
	b.WriteString("\nDurations use Go syntax (250ms, 30s, 10m, 1h30m); sizes take a unit (8MiB, 512KB).\n" +
		"Relative paths in a config file are relative to the file's folder.\n")
	return b.String()
}
