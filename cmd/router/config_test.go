package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// loadFor parses args as `router serve` flags and loads the configuration
// with env as the whole environment.
func loadFor(t *testing.T, args []string, env map[string]string) (config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	var cf configFlags
	cf.register(fs)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	return loadConfig(fs, &cf, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServeConfigDefaults(t *testing.T) {
	cfg, err := loadFor(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:8080" || cfg.Upstream.URL != "http://127.0.0.1:11434/v1" ||
		cfg.Embedder.Provider != "builtin" || cfg.Routing.Strategy != "hybrid" || cfg.Routing.MaxAutoLoad != 2 ||
		cfg.ToolRounds != 4 || cfg.BodyLimit != 32<<20 || cfg.Upstream.Timeout != 10*time.Minute ||
		cfg.Rewrite.CatalogMode != "auto" || cfg.Rewrite.CatalogBudgetTokens != 1500 ||
		cfg.Rewrite.AutoLoadBudgetTokens != 6000 || cfg.Rewrite.AutoLoadRole != "user" ||
		cfg.Log.Format != "text" || cfg.Log.Level != "info" || cfg.Exec.Enabled || !cfg.Watch {
		t.Fatalf("defaults: %+v", cfg)
	}
}

func TestServeConfigPrecedence(t *testing.T) {
	file := writeFile(t, "c.yaml", "listen: 127.0.0.1:9000\nrouting:\n  strategy: bm25\n  max_auto_load: 1\ntool_rounds: 2\nbody_limit: 1MiB\nupstream:\n  timeout: 30s\n")
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(c config) bool
	}{
		{"file over defaults", []string{"--config", file}, nil, func(c config) bool {
			return c.Listen == "127.0.0.1:9000" && c.Routing.Strategy == "bm25" && c.ToolRounds == 2 &&
				c.BodyLimit == 1<<20 && c.Upstream.Timeout == 30*time.Second && c.Upstream.URL == "http://127.0.0.1:11434/v1"
		}},
		{"config from env", nil, map[string]string{"SKILLROUTER_CONFIG": file}, func(c config) bool { return c.Listen == "127.0.0.1:9000" }},
		{"env over file", []string{"--config", file}, map[string]string{"SKILLROUTER_LISTEN": "0.0.0.0:1", "SKILLROUTER_ROUTING_STRATEGY": "keyword", "SKILLROUTER_BODY_LIMIT": "512k"},
			func(c config) bool {
				return c.Listen == "0.0.0.0:1" && c.Routing.Strategy == "keyword" && c.BodyLimit == 512<<10 && c.ToolRounds == 2
			}},
		{"alias env below canonical", nil, map[string]string{"SKILLROUTER_STRATEGY": "bm25", "SKILLROUTER_EMBEDDER": "ollama"},
			func(c config) bool { return c.Routing.Strategy == "bm25" && c.Embedder.Provider == "ollama" }},
		{"canonical env beats alias", nil, map[string]string{"SKILLROUTER_STRATEGY": "bm25", "SKILLROUTER_ROUTING_STRATEGY": "keyword"},
			func(c config) bool { return c.Routing.Strategy == "keyword" }},
		{"flags over env", []string{"--config", file, "--listen", "127.0.0.1:7", "--strategy", "embedding", "--exec", "--tool-rounds", "0", "--watch=false"},
			map[string]string{"SKILLROUTER_LISTEN": "0.0.0.0:1", "SKILLROUTER_EXEC_ENABLED": "false"},
			func(c config) bool {
				return c.Listen == "127.0.0.1:7" && c.Routing.Strategy == "embedding" && c.Exec.Enabled && c.ToolRounds == 0 && !c.Watch
			}},
		{"skills: env list, flag replaces", []string{"--skills", "a,b", "--skills", "c"}, map[string]string{"SKILLROUTER_SKILLS": "x" + string(os.PathListSeparator) + "y"},
			func(c config) bool { return strings.Join(c.Skills, "|") == "a,b|c" }},
		// The built-in library's name holds the list separator (Unix).
		{"builtin:examples in the env list", nil, map[string]string{"SKILLROUTER_SKILLS": "builtin:examples:/srv/skills"},
			func(c config) bool {
				return os.PathListSeparator != ':' || (len(c.Skills) == 2 && c.Skills[0] == "builtin:examples" && c.Skills[1] == "/srv/skills")
			}},
		{"skills from env", nil, map[string]string{"SKILLROUTER_SKILLS": "x" + string(os.PathListSeparator) + "y"},
			func(c config) bool { return strings.Join(c.Skills, "|") == "x|y" }},
		{"exec env list", nil, map[string]string{"SKILLROUTER_EXEC_ENV": "LANG, TZ=UTC"},
			func(c config) bool { return strings.Join(c.Exec.Env, "|") == "LANG|TZ=UTC" }},
		// The container images' defaults file: below the config file, the
		// environment and flags (the file sets listen, not skills or exec).
		{"image defaults alone", nil, map[string]string{"SKILLROUTER_DEFAULTS": "../../deploy/image/defaults-exec.yaml"},
			func(c config) bool {
				return c.Listen == "0.0.0.0:8080" && strings.Join(c.Skills, "|") == "/skills" && c.Exec.Enabled &&
					strings.HasPrefix(c.src.where("listen"), "SKILLROUTER_DEFAULTS ../../deploy/image/defaults-exec.yaml:") && !c.src.fromFile("listen")
			}},
		{"config file over image defaults", []string{"--config", file}, map[string]string{"SKILLROUTER_DEFAULTS": "../../deploy/image/defaults-exec.yaml"},
			func(c config) bool {
				return c.Listen == "127.0.0.1:9000" && strings.Join(c.Skills, "|") == "/skills" && c.Exec.Enabled && c.ToolRounds == 2
			}},
		{"env over image defaults", nil, map[string]string{"SKILLROUTER_DEFAULTS": "../../deploy/image/defaults-exec.yaml", "SKILLROUTER_EXEC_ENABLED": "false"},
			func(c config) bool { return c.Listen == "0.0.0.0:8080" && !c.Exec.Enabled }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadFor(t, tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

// TestConfigErrors: every bad value is reported with where it was written
// (FILE:line, the variable or the flag) and what the key accepts. FILE
// stands for the config file's path.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		args []string
		env  map[string]string
		want string // the whole message, or a part of it when partial
	}{
		{name: "unknown top-level key", file: "listen: x:1\nlistn: y\n",
			want: `config FILE:2: unknown key "listn" (known keys: ab, auth, body_limit, debug, embedder, exec, listen, log, mcp, rewrite, routing, server, skills, tool_rounds, upstream, watch)`},
		{name: "unknown nested key", file: "upstream:\n  timout: 10m\n",
			want: `config FILE:2: unknown key "upstream.timout" (known keys under upstream: anthropic_api_key, anthropic_url, api_key, check_interval, connect_timeout, forward_headers, header_timeout, idle_timeout, override_auth, passthrough, timeout, url)`},
		{name: "unknown arm key", file: "ab:\n  arms:\n    - name: a\n      percnt: 50\n",
			want: `config FILE:4: unknown key "ab.arms[0].percnt" (known keys under ab.arms[0]: embedder, name, percent, strategy)`},
		{name: "unknown embedder key", file: "embedder:\n  provder: ollama\n", want: `config FILE:2: unknown key "embedder.provder"`},
		{name: "bad yaml", file: "listen: [\n", want: "config FILE:"},
		{name: "duration in words", file: "upstream:\n  timeout: 10 minutes\n",
			want: `config FILE:2: upstream.timeout "10 minutes": want a duration in Go syntax, such as 250ms, 30s, 10m or 1h30m`},
		{name: "duration without unit", file: "routing:\n  embed_timeout: 250\n",
			want: `config FILE:2: routing.embed_timeout "250": want a duration in Go syntax, such as 250ms, 30s, 10m or 1h30m`},
		{name: "bare zero duration", file: "upstream:\n  check_interval: 0\n",
			want: `config FILE:2: upstream.check_interval "0": want a duration in Go syntax, such as 250ms, 30s, 10m or 1h30m (write 0s: YAML reads a bare 0 as a number)`},
		{name: "bare zero duration in an arm's embedder", file: "ab:\n  arms:\n    - {name: a, percent: 50}\n    - name: b\n      percent: 50\n      embedder: {timeout: -0}\n",
			want: `config FILE:6: ab.arms[1].embedder.timeout "-0": want a duration in Go syntax`},
		{name: "embedder duration", file: "embedder:\n  timeout: half a minute\n",
			want: `config FILE:2: embedder.timeout "half a minute": want a duration in Go syntax`},
		{name: "bad size", file: "body_limit: lots\n",
			want: `config FILE:1: body_limit "lots": want bytes, optionally with a unit (KiB, MiB, GiB, KB, MB, GB), such as 8MiB`},
		{name: "bad int", file: "tool_rounds: many\n", want: `config FILE:1: tool_rounds "many": want a whole number`},
		{name: "quoted int", file: "tool_rounds: \"4\"\n", want: `config FILE:1: tool_rounds "4": want a whole number, written without quotes (tool_rounds: 4)`},
		{name: "quoted float", file: "routing:\n  min_score:\n    hybrid: '0.2'\n", want: `config FILE:3: routing.min_score.hybrid "0.2": want a number, written without quotes`},
		{name: "second document", file: "listen: 127.0.0.1:1\n---\nroutng: x\n", want: `config FILE:3: a second YAML document (after ---)`},
		{name: "tab indent", file: "\tlisten: x\n", want: `config FILE:1: found character that cannot start any token (a tab indents this line: YAML indents with spaces)`},
		{name: "bad bool", file: "watch: sometimes\n", want: `config FILE:1: watch "sometimes": want true or false`},
		{name: "list as scalar", file: "skills: a\n", want: `config FILE:1: skills: want a list, such as [a, b] or one "- item" per line`},
		{name: "document as a list", file: "- listen: 127.0.0.1:1\n",
			want: `config FILE:1: the configuration: want a mapping with the keys ab, auth, body_limit, debug, embedder, exec, listen, log, mcp, rewrite, routing, server, skills, tool_rounds, upstream, watch`},
		{name: "document as text", file: "listen 127.0.0.1:1\n", want: `config FILE:1: the configuration: want a mapping with the keys ab, auth,`},
		{name: "section as scalar", file: "upstream: http://x/v1\n",
			want: `config FILE:1: upstream: want a mapping with the keys anthropic_api_key, anthropic_url, api_key, check_interval, connect_timeout, forward_headers, header_timeout, idle_timeout, override_auth, passthrough, timeout, url`},
		{name: "debug on the API's address", file: "listen: 127.0.0.1:8080\ndebug:\n  listen: 127.0.0.1:8080\n",
			want: `config FILE:3: debug.listen "127.0.0.1:8080": must differ from listen`},
		{name: "debug on the metrics address", file: "listen: 127.0.0.1:8080\nserver:\n  metrics_listen: 127.0.0.1:9090\ndebug:\n  listen: 127.0.0.1:9090\n",
			want: `config FILE:5: debug.listen "127.0.0.1:9090": must differ from server.metrics_listen`},
		{name: "bad strategy", file: "listen: 127.0.0.1:1\nrouting:\n  strategy: hybird\n",
			want: `config FILE:3: routing.strategy "hybird": want keyword, bm25, embedding or hybrid`},
		{name: "bad catalog mode", file: "rewrite:\n  catalog_mode: most\n",
			want: `config FILE:2: rewrite.catalog_mode "most": want all, enabled or auto`},
		{name: "bad role", file: "rewrite:\n  auto_load_role: assistant\n",
			want: `config FILE:2: rewrite.auto_load_role "assistant": want user, system or developer`},
		{name: "bad provider", file: "embedder:\n  provider: cohere\n",
			want: `config FILE:2: embedder.provider "cohere": want builtin, ollama or openai`},
		{name: "bad confinement", file: "exec:\n  confinement: jail\n",
			want: `config FILE:2: exec.confinement "jail": want auto, landlock or none`},
		{name: "min_score as a number", file: "routing:\n  min_score: 0.03\n",
			want: `config FILE:2: routing.min_score: want a mapping such as {hybrid: 0.03, bm25: 0.2}`},
		{name: "bad min_score key", file: "routing:\n  min_score:\n    hybird: 0.1\n",
			want: `config FILE:3: routing.min_score.hybird "hybird": a strategy: want keyword, bm25, embedding or hybrid`},
		{name: "bad arm strategy", file: "ab:\n  arms:\n    - {name: a, percent: 50}\n    - {name: b, percent: 50, strategy: magic}\n",
			want: `config FILE:4: ab.arms[1].strategy "magic": want keyword, bm25, embedding or hybrid`},
		{name: "one arm", file: "ab:\n  arms:\n    - {name: a, percent: 100}\n", want: `config FILE:2: ab.arms: an A/B split needs at least two arms`},
		{name: "size without its unit", file: "body_limit: 8\n",
			want: `config FILE:1: body_limit "8": want at least 1KiB (a number without a unit is bytes), such as 32MiB`},
		{name: "debug listen without a port", file: "debug:\n  listen: localhost\n",
			want: `config FILE:2: debug.listen "localhost": want host:port, such as 127.0.0.1:8080`},
		{name: "arms that do not add up", file: "ab:\n  arms:\n    - {name: a, percent: 70}\n    - {name: b, percent: 50}\n",
			want: `config FILE:2: ab.arms: A/B arm percents add up to 120, want 100`},
		{name: "negative", file: "tool_rounds: -1\n", want: `config FILE:1: tool_rounds "-1": want 0 or more`},
		{name: "below off", file: "routing:\n  rank_cache: -2\n", want: `config FILE:2: routing.rank_cache "-2": want -1 (off), 0 (the default) or more`},
		{name: "embedder's own check", file: "listen: 127.0.0.1:1\nembedder:\n  dimensions: 1\n",
			want: `config FILE:2: embedder: builtin: embedder misconfigured: dimensions must be at least 2`},
		{name: "arm embedder's own check", file: "ab:\n  arms:\n    - {name: a, percent: 50}\n    - name: b\n      percent: 50\n      embedder: {provider: builtin, dimensions: 1}\n",
			want: `config FILE:6: ab.arms[1].embedder: builtin: embedder misconfigured: dimensions must be at least 2`},
		{name: "bad upstream flag", args: []string{"--upstream", "ftp://x"},
			want: `flag --upstream: upstream.url "ftp://x": want an absolute http(s) URL such as http://127.0.0.1:11434/v1`},
		{name: "port out of range", file: "listen: 127.0.0.1:99999\n",
			want: `config FILE:1: listen "127.0.0.1:99999": want a port from 0 to 65535`},
		{name: "port past any integer", file: "listen: 127.0.0.1:99999999999999999999\n",
			want: `config FILE:1: listen "127.0.0.1:99999999999999999999": want a port from 0 to 65535`},
		{name: "signed port", file: "listen: 127.0.0.1:+80\n", want: `config FILE:1: listen "127.0.0.1:+80": want a port from 0 to 65535`},
		{name: "empty client key", file: "auth:\n  api_keys: [sk-a, \"\"]\n",
			want: `config FILE:2: auth.api_keys[1] "": want a key, not an empty string`},
		{name: "credentials in the upstream URL", file: "upstream:\n  url: http://u:secret@gw.example/v1\n",
			want: `config FILE:2: upstream.url "http://xxxxx@gw.example/v1": credentials in the URL are not sent with requests: set upstream.api_key instead`},
		{name: "upstream is the proxy itself", args: []string{"--listen", "127.0.0.1:7748", "--upstream", "http://127.0.0.1:7748/v1"},
			want: `flag --upstream: upstream.url "http://127.0.0.1:7748/v1": this is the proxy's own listen address (127.0.0.1:7748): set it to the model server's address`},
		{name: "upstream is the proxy itself, by name", file: "listen: 0.0.0.0:8080\nupstream:\n  anthropic_url: http://localhost:8080/v1\n",
			want: `config FILE:3: upstream.anthropic_url "http://localhost:8080/v1": this is the proxy's own listen address (0.0.0.0:8080): set it to the model server's address`},
		{name: "credentials in the Anthropic URL", args: []string{"--anthropic-upstream", "https://k@api.example/v1"},
			want: `flag --anthropic-upstream: upstream.anthropic_url "https://xxxxx@api.example/v1": credentials in the URL are not sent with requests: set upstream.anthropic_api_key instead`},
		{name: "bad strategy flag over a good file", file: "routing:\n  strategy: bm25\n", args: []string{"--strategy", "hybird"},
			want: `flag --strategy: routing.strategy "hybird": want keyword, bm25, embedding or hybrid`},
		{name: "bad catalog mode env", env: map[string]string{"SKILLROUTER_REWRITE_CATALOG_MODE": "most"},
			want: `environment SKILLROUTER_REWRITE_CATALOG_MODE: rewrite.catalog_mode "most": want all, enabled or auto`},
		{name: "bad strategy alias env", env: map[string]string{"SKILLROUTER_STRATEGY": "fast"},
			want: `environment SKILLROUTER_STRATEGY: routing.strategy "fast": want keyword, bm25, embedding or hybrid`},
		{name: "bad int env", env: map[string]string{"SKILLROUTER_TOOL_ROUNDS": "many"},
			want: `environment SKILLROUTER_TOOL_ROUNDS: tool_rounds "many": want a whole number`},
		{name: "bad duration env", env: map[string]string{"SKILLROUTER_UPSTREAM_TIMEOUT": "10 minutes"},
			want: `environment SKILLROUTER_UPSTREAM_TIMEOUT: upstream.timeout "10 minutes": want a duration in Go syntax, such as 250ms, 30s, 10m or 1h30m`},
		{name: "bad int flag", args: []string{"--tool-rounds", "x"}, want: `flag --tool-rounds: tool_rounds "x": want a whole number`},
		{name: "bad log level", args: []string{"--log-level", "loud"}, want: `flag --log-level: log.level "loud": want debug, info, warn or error`},
		{name: "missing file", args: []string{"--config", "/nonexistent/x.yaml"}, want: "config: open /nonexistent/x.yaml: no such file or directory"},
		{name: "bad pass-through pattern", file: "upstream:\n  passthrough:\n    - models\n    - /v1/files\n",
			want: `config FILE:4: upstream.passthrough[1] "/v1/files": want a path relative to /v1/ (models/*, not /v1/models/*)`},
		{name: "bad pass-through method", file: "upstream:\n  passthrough: [get models]\n",
			want: `config FILE:2: upstream.passthrough[0] "get models": want an HTTP method in upper case`},
		{name: "bad pass-through pattern env", env: map[string]string{"SKILLROUTER_UPSTREAM_PASSTHROUGH": "models,files/**/x"},
			want: `environment SKILLROUTER_UPSTREAM_PASSTHROUGH: upstream.passthrough "files/**/x": "**" matches the rest of the path: only as the whole last segment (files/**)`},
		{name: "bad pass-through pattern env over a good file", file: "upstream:\n  passthrough: [models]\n",
			env:  map[string]string{"SKILLROUTER_UPSTREAM_PASSTHROUGH": "files/["},
			want: `environment SKILLROUTER_UPSTREAM_PASSTHROUGH: upstream.passthrough "files/[": segment "[": bad pattern syntax`},
		{name: "bad pass-through pattern flag", args: []string{"--upstream-passthrough", "models/"},
			want: `flag --upstream-passthrough: upstream.passthrough "models/": empty segment`},
		// YAML reads a * that starts a value as an alias: the patterns of
		// upstream.passthrough must then be quoted, which the error says.
		{name: "unquoted ** pattern", file: "upstream:\n  passthrough:\n    - GET models\n    - **\n",
			want: `config FILE:4: did not find expected alphabetic or numeric character (a value that starts with * or & must be quoted: "**", "*/items")`},
		{name: "unquoted * pattern in a flow list", file: "upstream:\n  passthrough: [models, *]\n",
			want: `config FILE:2: did not find expected alphabetic or numeric character (a value that starts with * or & must be quoted`},
		{name: "unquoted *- pattern", file: "upstream:\n  passthrough: [*-jobs]\n",
			want: `config FILE: yaml: unknown anchor '-jobs' referenced (a value that starts with * or & must be quoted`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			want := tc.want
			if tc.file != "" {
				f := writeFile(t, "c.yaml", tc.file)
				args = append([]string{"--config", f}, args...)
				want = strings.ReplaceAll(want, "FILE", f)
			}
			_, err := loadFor(t, args, tc.env)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got  %v\nwant %s", err, want)
			}
			// A bad value on the command line exits 2, as any command-line
			// error; one from a file or the environment 1.
			if fromFlag := strings.HasPrefix(want, "flag --"); isUsage(err) != fromFlag {
				t.Errorf("usage error %v for %q", isUsage(err), err)
			}
		})
	}
}

// TestPassThroughConfig: upstream.passthrough passes everything by
// default; a list, from any source, passes what it allows; an empty one
// (written [], left without a value, or an empty variable) nothing, and
// reaches the proxy as empty, not as nil (its default, everything).
func TestPassThroughConfig(t *testing.T) {
	tests := []struct {
		name string
		file string
		args []string
		env  map[string]string
		want []string
	}{
		{name: "default", want: []string{"**"}},
		{name: "file", file: "upstream:\n  passthrough: [models, GET models/*]\n", want: []string{"models", "GET models/*"}},
		{name: "file empty list", file: "upstream:\n  passthrough: []\n", want: []string{}},
		{name: "file key without a value", file: "upstream:\n  passthrough:\n", want: []string{}},
		{name: "file without the key", file: "upstream:\n  timeout: 1m\n", want: []string{"**"}},
		{name: "env", env: map[string]string{"SKILLROUTER_UPSTREAM_PASSTHROUGH": "models, GET models/*"}, want: []string{"models", "GET models/*"}},
		{name: "env empty", file: "upstream:\n  passthrough: [models]\n", env: map[string]string{"SKILLROUTER_UPSTREAM_PASSTHROUGH": ""}, want: []string{}},
		{name: "flag over env", args: []string{"--upstream-passthrough", "responses/*"},
			env: map[string]string{"SKILLROUTER_UPSTREAM_PASSTHROUGH": "models"}, want: []string{"responses/*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, "c.yaml", tc.file)}, args...)
			}
			cfg, err := loadFor(t, args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.proxyConfig().PassThrough
			if got == nil || !slices.Equal(got, tc.want) {
				t.Fatalf("proxy.Config.PassThrough = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestConfigRelativePaths: folders in a config file are relative to the
// file's folder (and ~ to the home folder); on the command line, to where
// the command runs.
func TestConfigRelativePaths(t *testing.T) {
	home := isolate(t)
	// A closing --- changes nothing (it once skipped resolving the paths).
	file := writeFile(t, "c.yaml", "skills: [lib, /abs/lib, ~/mine, builtin:examples]\nrouting:\n  index_dir: idx\nembedder:\n  cache_dir: \"-\"\nexec:\n  output_dir: out\nauth:\n  api_keys_file: keys\n---\n")
	dir := filepath.Dir(file)
	cfg, err := loadFor(t, []string{"--config", file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "lib"), "/abs/lib", filepath.Join(home, "mine"), "builtin:examples"}
	if !slices.Equal(cfg.Skills, want) {
		t.Errorf("skills %q, want %q", cfg.Skills, want)
	}
	if cfg.Routing.IndexDir != filepath.Join(dir, "idx") || cfg.Exec.OutputDir != filepath.Join(dir, "out") || cfg.Embedder.CacheDir != "-" ||
		cfg.Auth.APIKeysFile != filepath.Join(dir, "keys") {
		t.Errorf("paths: %q %q %q %q", cfg.Routing.IndexDir, cfg.Exec.OutputDir, cfg.Embedder.CacheDir, cfg.Auth.APIKeysFile)
	}
	cfg, err = loadFor(t, []string{"--config", file, "--skills", "lib"}, map[string]string{"SKILLROUTER_EXEC_OUTPUT_DIR": "o2"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Skills, []string{"lib"}) || cfg.Exec.OutputDir != "o2" {
		t.Errorf("flag and env paths are relative to the working folder: %q %q", cfg.Skills, cfg.Exec.OutputDir)
	}
}

func TestExampleConfigLoads(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "config.yaml")
	cfg, err := loadFor(t, []string{"--config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	def := defaultConfig()
	// The example shows the defaults, plus the example library.
	if len(cfg.Skills) != 1 || cfg.Skills[0] != filepath.Join("..", "..", "examples", "skills") {
		t.Fatalf("skills %v", cfg.Skills)
	}
	cfg.Skills = nil
	cfg.Rewrite.Allowlist, cfg.Exec.Env, cfg.Exec.AllowedTools, cfg.AB.Arms, cfg.Upstream.ForwardHeaders = nil, nil, nil, nil, nil
	a, _ := json.Marshal(cfg)
	b, _ := json.Marshal(def)
	if !bytes.Equal(a, b) {
		t.Fatalf("example config drifted from the defaults:\n%s\n%s", a, b)
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"8388608": 8 << 20, "8MiB": 8 << 20, "8 mib": 8 << 20, "8MB": 8e6, "512k": 512 << 10, "1.5KiB": 1536, "1GiB": 1 << 30} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "8XB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
	if formatSize(8<<20) != "8MiB" || formatSize(1000) != "1000" {
		t.Fatal("formatSize")
	}
}

func TestServeHelpDocumentsEveryKey(t *testing.T) {
	cmd := newServeCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	for _, k := range configKeys {
		if !strings.Contains(help, k.path) || !strings.Contains(help, k.env()) {
			t.Errorf("--help misses %s / %s", k.path, k.env())
		}
		if k.flag != "" && !strings.Contains(help, "--"+k.flag) {
			t.Errorf("--help misses --%s", k.flag)
		}
	}
	for _, s := range []string{"ab.arms", "routing.min_score", "--config", "--skills"} {
		if !strings.Contains(help, s) {
			t.Errorf("--help misses %s", s)
		}
	}
}

func TestPrintConfigRedacts(t *testing.T) {
	cmd := newServeCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	t.Setenv("SKILLROUTER_UPSTREAM_API_KEY", "sk-secret")
	t.Setenv("SKILLROUTER_EXEC_ENV", "GITHUB_TOKEN=ghp-secret,MODE")
	cmd.SetArgs([]string{"--print-config", "--strategy", "bm25"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "sk-secret") || !strings.Contains(s, "api_key: REDACTED") || !strings.Contains(s, "strategy: bm25") {
		t.Fatalf("print-config:\n%s", s)
	}
	// exec.env values set for scripts are often tokens; names passed through are not secrets.
	if strings.Contains(s, "ghp-secret") || !strings.Contains(s, "GITHUB_TOKEN=REDACTED") || !strings.Contains(s, "- MODE") {
		t.Fatalf("print-config exec.env:\n%s", s)
	}
	// It prints the values in use, not the zeros that stand for them.
	for _, want := range []string{"batch_size: 64", "retries: 2", "rank_cache: 1024", "dimensions: 1024", "output_dir: /"} {
		if !strings.Contains(s, want) {
			t.Errorf("print-config lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "concurrency: 0") {
		t.Errorf("print-config shows exec.concurrency 0:\n%s", s)
	}
	// What it prints loads back.
	p := writeFile(t, "printed.yaml", strings.ReplaceAll(s, "REDACTED", ""))
	if _, err := loadFor(t, []string{"--config", p}, nil); err != nil {
		t.Fatalf("printed config does not load: %v", err)
	}
}

// TestServeWiring builds the whole proxy from a configuration, as `router
// serve` does, and sends one chat request through it to a stand-in upstream.
func TestServeWiring(t *testing.T) {
	up, last := recordingUpstream(t)
	cfg, err := loadFor(t, []string{"--upstream", up.URL + "/v1", "--skills", filepath.Join("..", "..", "examples", "skills"),
		"--catalog-mode", "all"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AB.Arms = []armConfig{{Name: "a", Percent: 50}, {Name: "b", Percent: 50, Strategy: "bm25"}}
	srv, reg, build, err := buildProxy(context.Background(), cfg, cfg.Skills, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(reg.Snapshot().Skills()) < 8 {
		t.Fatalf("example library: %d skills", len(reg.Snapshot().Skills()))
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"write a git commit message for my staged changes"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"hi"`) {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if arm := resp.Header.Get("X-Skillrouter-Arm"); arm != "a" && arm != "b" {
		t.Fatalf("arm header %q", arm)
	}
	if got := last(); !strings.Contains(got, "<available_skills>") || !strings.Contains(got, `"load_skill"`) {
		t.Fatalf("upstream did not get a rewritten request: %.400s", got)
	}
	r, err := http.Get(ts.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("readyz %d", r.StatusCode)
	}
}

func TestMisspelledEnv(t *testing.T) {
	env := []string{
		"SKILLROUTER_ADMIN_TOKEN=x",          // the section left out
		"SKILLROUTER_UPSTREAM_URLL=http://h", // a typo
		"SKILLROUTER_UPSTREAM_URL=http://h",  // known
		"SKILLROUTER_STRATEGY=bm25",          // an alias
		"SKILLROUTER_CONFIG=f.yaml",          // not a key, read all the same
		"SKILLROUTER_SBS_SECONDS=30",         // a test's, like no key
		"SKILLROUTER_OUTPUT_DIR=/tmp/x",      // set for scripts
		"SKILLROUTER_API_KEY=k",              // several keys end so: no guess
		"SKILLROUTER_=x",
		"PATH=/bin",
	}
	got := misspelledEnv(env)
	want := [][2]string{{"SKILLROUTER_ADMIN_TOKEN", "SKILLROUTER_AUTH_ADMIN_TOKEN"}, {"SKILLROUTER_UPSTREAM_URLL", "SKILLROUTER_UPSTREAM_URL"}}
	if !slices.Equal(got, want) {
		t.Errorf("misspelledEnv = %v, want %v", got, want)
	}
}

// The exec image's defaults turn tier 3 on; a config file that turns it off
// is obeyed (the images once set SKILLROUTER_EXEC_ENABLED, which beat it),
// and a broken defaults file is reported with its variable, file and line.
func TestImageDefaultsFile(t *testing.T) {
	env := map[string]string{"SKILLROUTER_DEFAULTS": "../../deploy/image/defaults-exec.yaml"}
	off := writeFile(t, "c.yaml", "exec:\n  enabled: false\nskills: [/library]\n")
	cfg, err := loadFor(t, []string{"--config", off}, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Exec.Enabled || strings.Join(cfg.Skills, "|") != "/library" || cfg.Listen != "0.0.0.0:8080" {
		t.Errorf("exec %v, skills %v, listen %s", cfg.Exec.Enabled, cfg.Skills, cfg.Listen)
	}
	bad := writeFile(t, "d.yaml", "listen: 0.0.0.0:8080\nexec:\n  enabled: maybe\n")
	_, err = loadFor(t, nil, map[string]string{"SKILLROUTER_DEFAULTS": bad})
	if err == nil || !strings.Contains(err.Error(), "SKILLROUTER_DEFAULTS: config "+bad+":3") {
		t.Errorf("bad defaults file: %v", err)
	}
	if _, err = loadFor(t, nil, map[string]string{"SKILLROUTER_DEFAULTS": "/nonexistent/defaults.yaml"}); err == nil {
		t.Error("a missing defaults file is not an error")
	}
	if m := misspelledEnv([]string{"SKILLROUTER_DEFAULTS=/usr/share/skillrouter/defaults.yaml"}); len(m) != 0 {
		t.Errorf("SKILLROUTER_DEFAULTS taken for a misspelling: %v", m)
	}
}

// An upstream URL refused for any reason never shows what stands before
// its "@": a password with "#" or "%" does not parse as a URL at all.
func TestUpstreamURLErrorsHideCredentials(t *testing.T) {
	for _, u := range []string{"https://team:pa#ss@llm.internal/v1", "https://team:pa%zzword@llm.internal/v1",
		"https://team:sec ret@llm.internal/v1", "ftp://team:secret@llm.internal/v1", "https://team:secret@/v1", "https://tok@llm.internal/v1",
		"https://team:pa/ss@llm.internal/v1", "https://team:pa?ss@llm.internal/v1"} {
		for _, env := range []string{"SKILLROUTER_UPSTREAM_URL", "SKILLROUTER_UPSTREAM_ANTHROPIC_URL"} {
			_, err := loadFor(t, nil, map[string]string{env: u})
			if err == nil || strings.Contains(err.Error(), "team") || strings.Contains(err.Error(), "tok@") || strings.Contains(err.Error(), "pa") && strings.Contains(err.Error(), "ss@") {
				t.Errorf("%s=%s: %v", env, u, err)
			}
		}
	}
}

// A list that names nothing (", ,", a variable that did not expand) is an
// error, not an empty list: SKILLROUTER_AUTH_API_KEYS=", ," opened the
// proxy to everyone, where a keys file with no key is refused.
func TestListNamingNothing(t *testing.T) {
	for _, v := range []string{",", " , ,", ","} {
		_, err := loadFor(t, nil, map[string]string{"SKILLROUTER_AUTH_API_KEYS": v})
		if err == nil || !strings.Contains(err.Error(), "SKILLROUTER_AUTH_API_KEYS") || !strings.Contains(err.Error(), "lists nothing") {
			t.Errorf("SKILLROUTER_AUTH_API_KEYS=%q: %v", v, err)
		}
	}
	if cfg, err := loadFor(t, nil, map[string]string{"SKILLROUTER_AUTH_API_KEYS": ""}); err != nil || len(cfg.Auth.APIKeys) != 0 {
		t.Errorf("empty: %v %v", cfg.Auth.APIKeys, err)
	}
	if cfg, err := loadFor(t, nil, map[string]string{"SKILLROUTER_AUTH_API_KEYS": "sk-a, ,sk-b"}); err != nil || len(cfg.Auth.APIKeys) != 2 {
		t.Errorf("two keys and a gap: %v %v", cfg.Auth.APIKeys, err)
	}
}

// TestClientKeysFile: one key a line; # starts a comment, alone or after a
// key; a line with more is an error naming it, not a key no client sends.
func TestClientKeysFile(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		keys       []string
		err        string
	}{
		{"keys and comments", "# team keys\nsk-a\n  sk-b  \n\nsk-c # ci\nsk-d\t# laptop\n", []string{"sk-a", "sk-b", "sk-c", "sk-d"}, ""},
		{"# inside a key", "sk-a#b\n", []string{"sk-a#b"}, ""},
		{"two keys on a line", "sk-a sk-b\n", nil, ":1: one key a line"},
		{"a note without #", "sk-ok\nsk-a laptop\n", nil, ":2: one key a line"},
		{"no key", "# none yet\n", nil, "no key in it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cfg config
			cfg.Auth.APIKeysFile = writeFile(t, "keys", tt.file)
			keys, err := clientKeys(cfg)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(keys, tt.keys) {
				t.Fatalf("keys %q, err %v; want %q", keys, err, tt.keys)
			}
		})
	}
}

// TestUsageErrorsExit2: a command line that cannot be parsed is a
// usageError (exit 2), an unknown subcommand of a group included (cobra
// printed the group's help and exited 0); the group alone shows its help.
func TestUsageErrorsExit2(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		usage bool
	}{
		{[]string{"skills", "vaildate"}, true},
		{[]string{"index", "nosuch"}, true},
		{[]string{"nosuch"}, true},
		{[]string{"skills", "list", "--nosuch"}, true},
		{[]string{"skills", "show"}, true},
		{[]string{"route", "--rows", "x", "q"}, true},
		{[]string{"route", "--rows", "-1", "q"}, true},
		{[]string{"route", "--ranked", "-5", "q"}, true},
		{[]string{"skills", "catalog", "--max-description", "-3"}, true},
		{[]string{"bench", "--queries", "q.jsonl", "--sample", "-1"}, true},
		{[]string{"bench", "--queries", "q.jsonl", "--strategies", "nope"}, true},
		{[]string{"bench", "--queries", "q.jsonl", "--split", "single"}, true},
		{[]string{"bench", "--queries", "q.jsonl", "--metatool", "m"}, true},
		{[]string{"index", "build"}, true},
		{[]string{"route", " "}, true},
		{[]string{"skills"}, false},
	} {
		root := newRootCmd()
		root.SetArgs(tt.args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.Execute()
		if got := isUsage(err); got != tt.usage || !tt.usage && err != nil {
			t.Errorf("%q: err %v, usage error %v", tt.args, err, got)
		}
	}
}

// TestUnknownFlagSuggests: a mistyped flag names the one meant (within two
// edits, every word typed, or another tool's name for it), still exit 2;
// nothing close, no guess.
func TestUnknownFlagSuggests(t *testing.T) {
	for _, tt := range []struct{ flag, want string }{
		{"--skill", "did you mean --skills?"},
		{"--port", "did you mean --listen?"},
		{"--upstream-key", "did you mean --upstream-api-key?"},
		{"--upstream-url", "did you mean --upstream?"},
		{"--stratgy", "did you mean --strategy?"},
		{"--zzz", ""},
	} {
		root := newRootCmd()
		root.SetArgs([]string{"serve", tt.flag, "x"})
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.Execute()
		if !isUsage(err) || tt.want != "" && !strings.Contains(err.Error(), tt.want) || tt.want == "" && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%s: %v, want %q", tt.flag, err, tt.want)
		}
	}
}

// TestSelfAddressed: an upstream on the proxy's own listen address is a
// loop; the same port on another address of this machine is not, unless
// the proxy listens on every address.
func TestSelfAddressed(t *testing.T) {
	for _, tt := range []struct {
		listen, upstream string
		self             bool
	}{
		{"127.0.0.1:8080", "http://127.0.0.1:8080/v1", true},
		{"127.0.0.1:8080", "http://localhost:8080/v1", true},
		{"127.0.0.1:8080", "http://[::1]:8080/v1", false},
		{"0.0.0.0:8080", "http://127.0.0.1:8080/v1", true},
		{":8080", "http://localhost:8080/v1", true},
		{"[::]:80", "http://127.0.0.1/v1", true},
		{"192.168.1.5:8080", "http://127.0.0.1:8080/v1", false},
		{"192.168.1.5:8080", "http://192.168.1.5:8080/v1", true},
		{"127.0.0.1:8080", "http://127.0.0.1:11434/v1", false},
		{"127.0.0.1:0", "http://127.0.0.1:0/v1", false},
	} {
		u, _ := url.Parse(tt.upstream)
		if got := selfAddressed(u, tt.listen); got != tt.self {
			t.Errorf("listen %s, upstream %s: %v, want %v", tt.listen, tt.upstream, got, tt.self)
		}
	}
}

// TestPrintConfigNamesMisspelledEnv: --print-config, the way to check what
// the variables set, says when one of them is not read (serve and mcp
// otherwise say it only in the log of a run).
func TestPrintConfigNamesMisspelledEnv(t *testing.T) {
	t.Setenv("SKILLROUTER_ROUTNG_STRATEGY", "bm25")
	for _, tc := range []struct {
		name string
		cmd  func() *cobra.Command
	}{
		{"serve", newServeCmd},
		{"mcp", newMCPCmd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := tc.cmd()
			var out, errOut bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SetArgs([]string{"--print-config", "--skills", "builtin:examples"})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			want := "router: SKILLROUTER_ROUTNG_STRATEGY is not read by skillrouter; did you mean SKILLROUTER_ROUTING_STRATEGY?\n"
			if errOut.String() != want {
				t.Errorf("stderr %q, want %q", errOut.String(), want)
			}
			if !strings.Contains(out.String(), "strategy: hybrid") {
				t.Errorf("print-config:\n%s", out.String())
			}
		})
	}
}

// TestStrayArgumentNamesTheFlag: a command that takes no argument says so
// (not "unknown command", which reads as a misspelt subcommand), and a
// folder given where --skills was meant gets the flag to use; a group's
// unknown subcommand is still one. Every case exits 2.
func TestStrayArgumentNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"skills", "validate", dir}, `skills validate takes no arguments, got "` + dir + `"; a skill library folder is given as --skills ` + shellQuote(dir)},
		{[]string{"skills", "list", dir}, `skills list takes no arguments, got "` + dir + `"; a skill library folder is given as --skills `},
		{[]string{"serve", dir}, `serve takes no arguments, got "` + dir + `"; a skill library folder is given as --skills `},
		{[]string{"doctor", "--skills", dir, dir}, `doctor takes no arguments, got "` + dir + `"; a skill library folder is given as --skills `},
		{[]string{"doctor", "nosuch-folder"}, `doctor takes no arguments, got "nosuch-folder"`},
		{[]string{"version", dir}, `version takes no arguments, got "` + dir + `"`},
		{[]string{"skills", "vaildate"}, `unknown command "vaildate" for "router skills"`},
		{[]string{"skills", "show"}, `want one skill ID (router skills list prints them), got 0 arguments; e.g. router skills show --skills examples/skills sql-query-tuning`},
		{[]string{"skills", "show", dir, "pdf"}, `want one skill ID (router skills list prints them), got 2 arguments; e.g. router skills show --skills examples/skills sql-query-tuning; a skill library folder is given as --skills ` + shellQuote(dir)},
	} {
		t.Run(strings.ReplaceAll(strings.Join(tc.args, " "), dir, "DIR"), func(t *testing.T) {
			_, _, err := run(t, tc.args...)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !isUsage(err) {
				t.Fatalf("got  %v (usage %v)\nwant %s", err, isUsage(err), tc.want)
			}
			if strings.HasSuffix(tc.want, `"nosuch-folder"`) || strings.HasPrefix(tc.args[0], "version") {
				if strings.Contains(err.Error(), "--skills") {
					t.Errorf("names --skills for a command without it or a path that is no folder: %v", err)
				}
			}
		})
	}
}

// TestPrintConfigZerosStandingForDefaults: a key whose 0 stands for its
// default is printed with the value in use, as the sandbox applies it.
func TestPrintConfigZerosStandingForDefaults(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"exec:\n  timeout: 0s\n", "  timeout: 1m0s\n"},
		{"exec:\n  output_limit: 0\n", "  output_limit: 100KiB\n"},
		{"exec:\n  timeout: 5s\n  output_limit: 1MiB\n", "  timeout: 5s\n  output_limit: 1MiB\n"},
	} {
		t.Run(strings.TrimSpace(tc.file), func(t *testing.T) {
			cmd := newServeCmd()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetArgs([]string{"--print-config", "--config", writeFile(t, "c.yaml", tc.file)})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			exec := out.String()[strings.Index(out.String(), "\nexec:\n"):]
			if !strings.Contains(exec, tc.want) {
				t.Errorf("print-config lacks %q:\n%s", tc.want, exec)
			}
		})
	}
}
