package main

// Configuration of `router serve`: a YAML file (--config), SKILLROUTER_*
// environment variables and flags, applied in that order over the defaults,
// so flags win. Every scalar key is described once in serveKeys, which
// drives the environment lookup, the flags and the table in --help.

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// serveConfig is the whole configuration; its YAML form is documented in
// examples/config.yaml.
type serveConfig struct {
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
		return 0, fmt.Errorf("size %q: want bytes, optionally with a unit (KiB, MiB, GiB, KB, MB, GB)", s)
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

// defaultServeConfig is the configuration with nothing set.
func defaultServeConfig() serveConfig {
	return serveConfig{
		Listen:     "127.0.0.1:8080",
		Upstream:   upstreamConfig{URL: "http://127.0.0.1:11434/v1", Timeout: 10 * time.Minute},
		Watch:      true,
		Embedder:   embed.Config{Provider: embed.ProviderBuiltin},
		Routing:    routingConfig{Strategy: string(router.DefaultStrategy), MaxAutoLoad: router.DefaultMaxAutoLoad, EmbedTimeout: router.DefaultEmbedTimeout},
		ToolRounds: 4,
		BodyLimit:  8 << 20,
		Rewrite: rewriteConfig{
			CatalogFormat: string(skills.FormatAgentSkills), CatalogMode: string(router.CatalogAuto),
			CatalogBudgetTokens: router.DefaultCatalogBudgetTokens, DescriptionLimit: router.DefaultDescriptionLimit,
			AutoLoadRole: router.DefaultAutoLoadRole, AutoLoadBudgetTokens: router.DefaultAutoLoadBudgetTokens,
		},
		Log:  logConfig{Format: "text", Level: "info"},
		Exec: execConfig{Timeout: 60 * time.Second, OutputLimit: 100 << 10, Confinement: "auto"},
		AB:   abConfig{Header: "X-Session-Id"},
		MCP:  mcpConfig{Enabled: true},
	}
}

// configKey is one scalar (or list) setting reachable from env and flags.
type configKey struct {
	path string // YAML path, e.g. upstream.url
	flag string // "" = file and env only
	kind string // string, int, bool, duration, size, list (comma-separated), paths (os.PathListSeparator)
	help string
	// ptr returns the field the key sets.
	ptr func(c *serveConfig) any
}

// env is the environment variable of the key: SKILLROUTER_ + path in upper
// case with dots as underscores.
func (k configKey) env() string {
	return "SKILLROUTER_" + strings.ToUpper(strings.ReplaceAll(k.path, ".", "_"))
}

var serveKeys = []configKey{
	{"listen", "listen", "string", "address to listen on (host:port)", func(c *serveConfig) any { return &c.Listen }},
	{"upstream.url", "upstream", "string", "base URL of the OpenAI-compatible upstream, including /v1", func(c *serveConfig) any { return &c.Upstream.URL }},
	{"upstream.api_key", "upstream-api-key", "string", "API key sent upstream when the client sends no Authorization", func(c *serveConfig) any { return &c.Upstream.APIKey }},
	{"upstream.anthropic_url", "anthropic-upstream", "string", "base URL of the Anthropic Messages upstream, including /v1 (default: upstream.url; Ollama serves both)", func(c *serveConfig) any { return &c.Upstream.AnthropicURL }},
	{"upstream.anthropic_api_key", "anthropic-api-key", "string", "sent as x-api-key on Messages requests when the client sends no key (default: upstream.api_key when the Anthropic upstream is upstream.url)", func(c *serveConfig) any { return &c.Upstream.AnthropicAPIKey }},
	{"upstream.override_auth", "upstream-override-auth", "bool", "always send upstream.api_key, replacing the client's Authorization", func(c *serveConfig) any { return &c.Upstream.OverrideAuth }},
	{"upstream.timeout", "upstream-timeout", "duration", "bound on each upstream exchange, headers and body (504 when hit)", func(c *serveConfig) any { return &c.Upstream.Timeout }},
	{"skills", "", "paths", "skill library folders (flag --skills, repeatable; env: separated by " + string(os.PathListSeparator) + ")", func(c *serveConfig) any { return &c.Skills }},
	{"watch", "watch", "bool", "reload the library when its files change", func(c *serveConfig) any { return &c.Watch }},
	{"embedder.provider", "embedder", "string", "embedding provider: builtin, ollama or openai", func(c *serveConfig) any { return &c.Embedder.Provider }},
	{"embedder.model", "embed-model", "string", "embedding model (ollama: nomic-embed-text, openai: text-embedding-3-small)", func(c *serveConfig) any { return &c.Embedder.Model }},
	{"embedder.base_url", "embed-url", "string", "embedding endpoint base URL", func(c *serveConfig) any { return &c.Embedder.BaseURL }},
	{"embedder.api_key", "embed-key", "string", "API key of the openai embedding provider (default $OPENAI_API_KEY)", func(c *serveConfig) any { return &c.Embedder.APIKey }},
	{"embedder.dimensions", "", "int", "embedding dimensions (openai `dimensions`; builtin vector size)", func(c *serveConfig) any { return &c.Embedder.Dimensions }},
	{"embedder.batch_size", "", "int", "texts per remote embedding call (default 64)", func(c *serveConfig) any { return &c.Embedder.BatchSize }},
	{"embedder.timeout", "", "duration", "per remote embedding call (default 30s)", func(c *serveConfig) any { return &c.Embedder.Timeout }},
	{"embedder.retries", "", "int", "retries of a failed remote embedding call (default 2)", func(c *serveConfig) any { return &c.Embedder.Retries }},
	{"embedder.cache_dir", "", "string", "embedding cache folder (default $XDG_CACHE_HOME/skillrouter; - disables)", func(c *serveConfig) any { return &c.Embedder.CacheDir }},
	{"routing.strategy", "strategy", "string", "ranking strategy: keyword, bm25, embedding or hybrid", func(c *serveConfig) any { return &c.Routing.Strategy }},
	{"routing.max_auto_load", "max-auto-load", "int", "skills auto-loaded per request at most (0 = none)", func(c *serveConfig) any { return &c.Routing.MaxAutoLoad }},
	{"routing.embed_timeout", "embed-timeout", "duration", "latency budget of the query embedding before falling back to bm25", func(c *serveConfig) any { return &c.Routing.EmbedTimeout }},
	{"routing.index_dir", "", "string", "where the routing index persists, loaded instead of rebuilt at the next start with an unchanged library (default: a folder per library under embedder.cache_dir)", func(c *serveConfig) any { return &c.Routing.IndexDir }},
	{"routing.prebuilt_index", "index", "string", "prebuilt routing index folder (router index build), read-only; loaded instead of embedding the library when it matches", func(c *serveConfig) any { return &c.Routing.Prebuilt }},
	{"routing.rank_cache", "", "int", "recent rankings remembered, reused while a conversation's user turns repeat (agent tool rounds); -1 = off", func(c *serveConfig) any { return &c.Routing.RankCache }},
	{"rewrite.catalog_format", "catalog-format", "string", "catalog format: agent-skills, anthropic or qark", func(c *serveConfig) any { return &c.Rewrite.CatalogFormat }},
	{"rewrite.catalog_mode", "catalog-mode", "string", "catalog mode: all, enabled or auto", func(c *serveConfig) any { return &c.Rewrite.CatalogMode }},
	{"rewrite.catalog_budget_tokens", "catalog-budget", "int", "catalog budget in tokens (auto and enabled modes)", func(c *serveConfig) any { return &c.Rewrite.CatalogBudgetTokens }},
	{"rewrite.description_limit", "", "int", "catalog description length in characters before entries are dropped", func(c *serveConfig) any { return &c.Rewrite.DescriptionLimit }},
	{"rewrite.allowlist", "", "list", "skill ids shown in enabled mode besides opted-in skills (env: comma-separated)", func(c *serveConfig) any { return &c.Rewrite.Allowlist }},
	{"rewrite.auto_load_role", "auto-load-role", "string", "role of auto-loaded skill messages: user, system or developer", func(c *serveConfig) any { return &c.Rewrite.AutoLoadRole }},
	{"rewrite.auto_load_budget_tokens", "auto-load-budget", "int", "tokens of skill bodies auto-loaded per request at most", func(c *serveConfig) any { return &c.Rewrite.AutoLoadBudgetTokens }},
	{"rewrite.no_tools", "no-tools", "bool", "add no load_skill tool (catalog and auto-load only)", func(c *serveConfig) any { return &c.Rewrite.NoTools }},
	{"rewrite.catalog_per_turn", "", "bool", "rank a shortened catalog against every turn (default: the first user message, cache-friendly)", func(c *serveConfig) any { return &c.Rewrite.CatalogPerTurn }},
	{"tool_rounds", "tool-rounds", "int", "server-side tool rounds per request at most (0 = none)", func(c *serveConfig) any { return &c.ToolRounds }},
	{"body_limit", "body-limit", "size", "chat request body limit (413 beyond)", func(c *serveConfig) any { return &c.BodyLimit }},
	{"log.format", "log-format", "string", "log format: text or json", func(c *serveConfig) any { return &c.Log.Format }},
	{"log.level", "log-level", "string", "log level: debug, info, warn or error (debug logs message contents)", func(c *serveConfig) any { return &c.Log.Level }},
	{"exec.enabled", "exec", "bool", "tier 3: let the model read skill files and run skill scripts in the sandbox", func(c *serveConfig) any { return &c.Exec.Enabled }},
	{"exec.timeout", "exec-timeout", "duration", "per script execution, then the process tree is killed", func(c *serveConfig) any { return &c.Exec.Timeout }},
	{"exec.output_limit", "exec-output-limit", "size", "stdout+stderr kept per execution", func(c *serveConfig) any { return &c.Exec.OutputLimit }},
	{"exec.env", "", "list", "extra environment for scripts: NAME (pass through) or NAME=value (env: comma-separated)", func(c *serveConfig) any { return &c.Exec.Env }},
	{"exec.concurrency", "exec-concurrency", "int", "script executions at once (default max(2, CPUs))", func(c *serveConfig) any { return &c.Exec.Concurrency }},
	{"exec.allowed_tools", "exec-allowed-tools", "list", "client tools withheld upstream unless an active skill's allowed-tools names them (names, x* prefixes, * all; comma-separated)", func(c *serveConfig) any { return &c.Exec.AllowedTools }},
	{"exec.confinement", "", "string", "write confinement of scripts: auto, landlock or none", func(c *serveConfig) any { return &c.Exec.Confinement }},
	{"exec.output_dir", "", "string", "root of per-conversation output folders (default $TMPDIR/skillrouter-out)", func(c *serveConfig) any { return &c.Exec.OutputDir }},
	{"mcp.enabled", "mcp", "bool", "serve MCP (streamable HTTP) at /mcp: the library's tools, skill:// resources and prompts (docs/mcp.md)", func(c *serveConfig) any { return &c.MCP.Enabled }},
	{"ab.header", "", "string", "A/B: request header hashed to pick an arm (else the user field, else the first user message)", func(c *serveConfig) any { return &c.AB.Header }},
	{"ab.seed", "", "string", "A/B: hash seed; change it to reshuffle assignments", func(c *serveConfig) any { return &c.AB.Seed }},
}

// shownDefaults replaces a zero default in --help where the real default
// is decided downstream (by the embedding provider or the sandbox).
var shownDefaults = map[string]string{
	"embedder.model":      "per provider",
	"embedder.dimensions": "per provider",
	"embedder.batch_size": "64",
	"embedder.timeout":    "30s",
	"embedder.retries":    "2",
	"embedder.cache_dir":  "$XDG_CACHE_HOME/skillrouter",
	"routing.rank_cache":  "up to 1024 (32 MiB)",
	"exec.concurrency":    "max(2, CPUs)",
	"exec.output_dir":     "$TMPDIR/skillrouter-out",
}

// envAliases are the shorter variables the route and bench commands read;
// serve honours them too, below the canonical name.
var envAliases = map[string]string{
	"routing.strategy":  "SKILLROUTER_STRATEGY",
	"embedder.provider": "SKILLROUTER_EMBEDDER",
	"embedder.model":    "SKILLROUTER_EMBED_MODEL",
	"embedder.base_url": "SKILLROUTER_EMBED_URL",
	"embedder.api_key":  "SKILLROUTER_EMBED_KEY",
}

func shownDefault(k configKey, def *serveConfig) string {
	if d, ok := shownDefaults[k.path]; ok {
		return d
	}
	return valueString(k.ptr(def))
}

// setValue parses s into the field ptr points at.
func setValue(ptr any, kind, s string) error {
	switch p := ptr.(type) {
	case *string:
		*p = s
	case *bool:
		v, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not a boolean", s)
		}
		*p = v
	case *int:
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not an integer", s)
		}
		*p = v
	case *time.Duration:
		v, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not a duration (e.g. 90s, 10m)", s)
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
		for _, f := range strings.Split(s, sep) {
			if f = strings.TrimSpace(f); f != "" {
				*p = append(*p, f)
			}
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

// serveFlags are the flags of `router serve` besides the key flags.
type serveFlags struct {
	config      string
	skills      []string
	printConfig bool
	keyFlags    map[string]*keyFlag // by flag name
}

// registerServeFlags adds every key's flag to fs, with the default in its help.
func registerServeFlags(fs *pflag.FlagSet, sf *serveFlags) {
	fs.StringVarP(&sf.config, "config", "c", "", "YAML configuration file (env SKILLROUTER_CONFIG)")
	addSkillsFlag(fs, &sf.skills)
	fs.BoolVar(&sf.printConfig, "print-config", false, "print the effective configuration as YAML (secrets redacted) and exit")
	registerKeyFlags(fs, sf, func(configKey) bool { return true })
}

// registerKeyFlags adds the flags of the keys keep accepts (commands that
// read the serve configuration for part of it, such as index build).
func registerKeyFlags(fs *pflag.FlagSet, sf *serveFlags, keep func(configKey) bool) {
	def := defaultServeConfig()
	sf.keyFlags = map[string]*keyFlag{}
	for _, k := range serveKeys {
		if k.flag == "" || !keep(k) {
			continue
		}
		kf := &keyFlag{kind: k.kind}
		sf.keyFlags[k.flag] = kf
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

// loadServeConfig builds the configuration: defaults, then the file, then
// the environment, then the flags that were set.
func loadServeConfig(fs *pflag.FlagSet, sf *serveFlags, getenv func(string) (string, bool)) (serveConfig, error) {
	cfg := defaultServeConfig()
	path := sf.config
	if path == "" {
		path, _ = getenv("SKILLROUTER_CONFIG")
	}
	if path != "" {
		if err := loadConfigFile(path, &cfg); err != nil {
			return cfg, err
		}
	}
	for _, k := range serveKeys {
		v, ok := getenv(k.env())
		if !ok && envAliases[k.path] != "" {
			v, ok = getenv(envAliases[k.path])
		}
		if ok {
			if err := setValue(k.ptr(&cfg), k.kind, v); err != nil {
				return cfg, fmt.Errorf("%s: %w", k.env(), err)
			}
		}
	}
	for _, k := range serveKeys {
		if k.flag == "" || !fs.Changed(k.flag) {
			continue
		}
		if err := setValue(k.ptr(&cfg), k.kind, sf.keyFlags[k.flag].val); err != nil {
			return cfg, fmt.Errorf("--%s: %w", k.flag, err)
		}
	}
	if fs.Changed("skills") {
		cfg.Skills = sf.skills
	}
	return cfg, cfg.validate()
}

// loadConfigFile decodes a YAML file over cfg. Unknown keys are errors that
// name the key, its line and the keys allowed there.
func loadConfigFile(path string, cfg *serveConfig) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty file: defaults
	}
	lines := map[int]string{}
	if err := checkKeys(doc.Content[0], reflect.TypeOf(serveConfig{}), "", lines); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("config %s: %s", path, nameKeys(err.Error(), lines))
	}
	// Relative library folders are relative to the file, not to where the
	// proxy happens to start.
	for i, s := range cfg.Skills {
		if s != "" && !filepath.IsAbs(s) && !strings.HasPrefix(s, "~") {
			cfg.Skills[i] = filepath.Join(filepath.Dir(path), s)
		}
	}
	return nil
}

// checkKeys walks a YAML mapping against the struct type t.
// lines maps each key's line to its path, to name keys in decode errors.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string, lines map[int]string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		known := map[string]reflect.StructField{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			known[name] = f
			names = append(names, name)
		}
		sort.Strings(names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			f, ok := known[kn.Value]
			if !ok {
				return fmt.Errorf("line %d: unknown key %q (known keys%s: %s)", kn.Line, prefix+kn.Value,
					atPrefix(prefix), strings.Join(names, ", "))
			}
			lines[kn.Line] = prefix + kn.Value
			if err := checkKeys(vn, f.Type, prefix+kn.Value+".", lines); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, el := range n.Content {
			if err := checkKeys(el, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(prefix, "."), i), lines); err != nil {
				return err
			}
		}
	}
	return nil
}

var lineRE = regexp.MustCompile(`line (\d+): `)

// nameKeys adds the key path after each "line N: " of a yaml error.
func nameKeys(msg string, lines map[int]string) string {
	return lineRE.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(lineRE.FindStringSubmatch(m)[1])
		if k, ok := lines[n]; ok {
			return fmt.Sprintf("line %d (%s): ", n, k)
		}
		return m
	})
}

func atPrefix(prefix string) string {
	if prefix == "" {
		return ""
	}
	return " under " + strings.TrimSuffix(prefix, ".")
}

// validate reports the first bad value, naming its key.
func (c *serveConfig) validate() error {
	u, err := url.Parse(c.Upstream.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("upstream.url %q: want an absolute http(s) URL such as http://127.0.0.1:11434/v1", c.Upstream.URL)
	}
	if c.Upstream.AnthropicURL != "" {
		u, err := url.Parse(c.Upstream.AnthropicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("upstream.anthropic_url %q: want an absolute http(s) URL such as https://api.anthropic.com/v1", c.Upstream.AnthropicURL)
		}
	}
	if c.Listen == "" {
		return errors.New("listen: empty address")
	}
	if !router.ValidStrategy(router.Strategy(c.Routing.Strategy)) {
		return fmt.Errorf("routing.strategy %q: want keyword, bm25, embedding or hybrid", c.Routing.Strategy)
	}
	switch c.Embedder.Provider {
	case "", embed.ProviderBuiltin, embed.ProviderOllama, embed.ProviderOpenAI:
	default:
		return fmt.Errorf("embedder.provider %q: want builtin, ollama or openai", c.Embedder.Provider)
	}
	switch skills.Format(c.Rewrite.CatalogFormat) {
	case skills.FormatAgentSkills, skills.FormatAnthropic, skills.FormatQARK:
	default:
		return fmt.Errorf("rewrite.catalog_format %q: want agent-skills, anthropic or qark", c.Rewrite.CatalogFormat)
	}
	switch router.CatalogMode(c.Rewrite.CatalogMode) {
	case router.CatalogAll, router.CatalogEnabled, router.CatalogAuto:
	default:
		return fmt.Errorf("rewrite.catalog_mode %q: want all, enabled or auto", c.Rewrite.CatalogMode)
	}
	switch c.Rewrite.AutoLoadRole {
	case "user", "system", "developer":
	default:
		return fmt.Errorf("rewrite.auto_load_role %q: want user, system or developer", c.Rewrite.AutoLoadRole)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return fmt.Errorf("log.format %q: want text or json", c.Log.Format)
	}
	if _, err := parseLevel(c.Log.Level); err != nil {
		return err
	}
	for name, v := range map[string]int{
		"routing.max_auto_load": c.Routing.MaxAutoLoad, "tool_rounds": c.ToolRounds,
		"rewrite.catalog_budget_tokens": c.Rewrite.CatalogBudgetTokens, "rewrite.auto_load_budget_tokens": c.Rewrite.AutoLoadBudgetTokens,
		"rewrite.description_limit": c.Rewrite.DescriptionLimit, "exec.concurrency": c.Exec.Concurrency,
	} {
		if v < 0 {
			return fmt.Errorf("%s: %d must not be negative", name, v)
		}
	}
	if c.BodyLimit <= 0 {
		return fmt.Errorf("body_limit: must be positive")
	}
	if c.Upstream.Timeout <= 0 {
		return fmt.Errorf("upstream.timeout: must be positive")
	}
	for k := range c.Routing.MinScore {
		if !router.ValidStrategy(router.Strategy(k)) {
			return fmt.Errorf("routing.min_score: unknown strategy %q", k)
		}
	}
	if n := len(c.AB.Arms); n == 1 {
		return errors.New("ab.arms: an A/B split needs at least two arms")
	}
	for i, a := range c.AB.Arms {
		if a.Strategy != "" && !router.ValidStrategy(router.Strategy(a.Strategy)) {
			return fmt.Errorf("ab.arms[%d] (%s): strategy %q: want keyword, bm25, embedding or hybrid", i, a.Name, a.Strategy)
		}
	}
	return nil
}

// redacted returns a copy with secrets replaced, for --print-config.
func (c serveConfig) redacted() serveConfig {
	hide := func(s *string) {
		if *s != "" {
			*s = "REDACTED"
		}
	}
	hide(&c.Upstream.APIKey)
	hide(&c.Embedder.APIKey)
	arms := make([]armConfig, len(c.AB.Arms))
	for i, a := range c.AB.Arms {
		if a.Embedder != nil {
			e := *a.Embedder
			hide(&e.APIKey)
			a.Embedder = &e
		}
		arms[i] = a
	}
	c.AB.Arms = arms
	return c
}

// configHelp is the table of keys in `router serve --help`.
func configHelp() string {
	def := defaultServeConfig()
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  KEY\tENVIRONMENT\tFLAG\tDEFAULT")
	for _, k := range serveKeys {
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
	fmt.Fprintln(tw, "  routing.min_score\t-\t-\tcalibrated (map strategy: score)")
	fmt.Fprintln(tw, "  ab.arms\t-\t-\tnone (list of name, percent, strategy, embedder)")
	tw.Flush()
	return b.String()
}
