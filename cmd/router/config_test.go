package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// loadFor parses args as `router serve` flags and loads the configuration
// with env as the whole environment.
func loadFor(t *testing.T, args []string, env map[string]string) (serveConfig, error) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	var sf serveFlags
	registerServeFlags(fs, &sf)
	if err := fs.Parse(args); err != nil {
		return serveConfig{}, err
	}
	return loadServeConfig(fs, &sf, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
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
		cfg.ToolRounds != 4 || cfg.BodyLimit != 8<<20 || cfg.Upstream.Timeout != 10*time.Minute ||
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
		check func(c serveConfig) bool
	}{
		{"file over defaults", []string{"--config", file}, nil, func(c serveConfig) bool {
			return c.Listen == "127.0.0.1:9000" && c.Routing.Strategy == "bm25" && c.ToolRounds == 2 &&
				c.BodyLimit == 1<<20 && c.Upstream.Timeout == 30*time.Second && c.Upstream.URL == "http://127.0.0.1:11434/v1"
		}},
		{"config from env", nil, map[string]string{"SKILLROUTER_CONFIG": file}, func(c serveConfig) bool { return c.Listen == "127.0.0.1:9000" }},
		{"env over file", []string{"--config", file}, map[string]string{"SKILLROUTER_LISTEN": "0.0.0.0:1", "SKILLROUTER_ROUTING_STRATEGY": "keyword", "SKILLROUTER_BODY_LIMIT": "512k"},
			func(c serveConfig) bool {
				return c.Listen == "0.0.0.0:1" && c.Routing.Strategy == "keyword" && c.BodyLimit == 512<<10 && c.ToolRounds == 2
			}},
		{"alias env below canonical", nil, map[string]string{"SKILLROUTER_STRATEGY": "bm25", "SKILLROUTER_EMBEDDER": "ollama"},
			func(c serveConfig) bool { return c.Routing.Strategy == "bm25" && c.Embedder.Provider == "ollama" }},
		{"canonical env beats alias", nil, map[string]string{"SKILLROUTER_STRATEGY": "bm25", "SKILLROUTER_ROUTING_STRATEGY": "keyword"},
			func(c serveConfig) bool { return c.Routing.Strategy == "keyword" }},
		{"flags over env", []string{"--config", file, "--listen", "127.0.0.1:7", "--strategy", "embedding", "--exec", "--tool-rounds", "0", "--watch=false"},
			map[string]string{"SKILLROUTER_LISTEN": "0.0.0.0:1", "SKILLROUTER_EXEC_ENABLED": "false"},
			func(c serveConfig) bool {
				return c.Listen == "127.0.0.1:7" && c.Routing.Strategy == "embedding" && c.Exec.Enabled && c.ToolRounds == 0 && !c.Watch
			}},
		{"skills: env list, flag replaces", []string{"--skills", "a,b", "--skills", "c"}, map[string]string{"SKILLROUTER_SKILLS": "x" + string(os.PathListSeparator) + "y"},
			func(c serveConfig) bool { return strings.Join(c.Skills, "|") == "a,b|c" }},
		{"skills from env", nil, map[string]string{"SKILLROUTER_SKILLS": "x" + string(os.PathListSeparator) + "y"},
			func(c serveConfig) bool { return strings.Join(c.Skills, "|") == "x|y" }},
		{"exec env list", nil, map[string]string{"SKILLROUTER_EXEC_ENV": "LANG, TZ=UTC"},
			func(c serveConfig) bool { return strings.Join(c.Exec.Env, "|") == "LANG|TZ=UTC" }},
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

func TestServeConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown top-level key", "listen: x:1\nlistn: y\n", nil, nil, `line 2: unknown key "listn"`},
		{"unknown nested key", "upstream:\n  urll: http://x/v1\n", nil, nil, `unknown key "upstream.urll" (known keys under upstream: anthropic_api_key, anthropic_url, api_key, connect_timeout, header_timeout, idle_timeout, override_auth, timeout, url)`},
		{"unknown arm key", "ab:\n  arms:\n    - name: a\n      percnt: 50\n", nil, nil, `unknown key "ab.arms[0].percnt"`},
		{"unknown embedder key", "embedder:\n  provder: ollama\n", nil, nil, `unknown key "embedder.provder"`},
		{"bad yaml", "listen: [\n", nil, nil, "config"},
		{"bad duration", "upstream:\n  timeout: soon\n", nil, nil, "timeout"},
		{"bad size", "body_limit: lots\n", nil, nil, `size "lots"`},
		{"bad strategy", "routing:\n  strategy: magic\n", nil, nil, `routing.strategy "magic"`},
		{"bad upstream", "", []string{"--upstream", "ftp://x"}, nil, `upstream.url "ftp://x"`},
		{"bad catalog mode env", "", nil, map[string]string{"SKILLROUTER_REWRITE_CATALOG_MODE": "most"}, "rewrite.catalog_mode"},
		{"bad int env", "", nil, map[string]string{"SKILLROUTER_TOOL_ROUNDS": "many"}, "SKILLROUTER_TOOL_ROUNDS"},
		{"bad int flag", "", []string{"--tool-rounds", "x"}, nil, "--tool-rounds"},
		{"bad log level", "", []string{"--log-level", "loud"}, nil, "log.level"},
		{"one arm", "ab:\n  arms:\n    - {name: a, percent: 100}\n", nil, nil, "at least two arms"},
		{"negative", "tool_rounds: -1\n", nil, nil, "tool_rounds"},
		{"missing file", "", []string{"--config", "/nonexistent/x.yaml"}, nil, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, "c.yaml", tc.file)}, args...)
			}
			_, err := loadFor(t, args, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestExampleConfigLoads(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "config.yaml")
	cfg, err := loadFor(t, []string{"--config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	def := defaultServeConfig()
	// The example shows the defaults, plus the example library.
	if len(cfg.Skills) != 1 || cfg.Skills[0] != filepath.Join("..", "..", "examples", "skills") {
		t.Fatalf("skills %v", cfg.Skills)
	}
	cfg.Skills = nil
	cfg.Rewrite.Allowlist, cfg.Exec.Env, cfg.Exec.AllowedTools, cfg.AB.Arms = nil, nil, nil, nil
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
	for _, k := range serveKeys {
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
	cmd.SetArgs([]string{"--print-config", "--strategy", "bm25"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "sk-secret") || !strings.Contains(s, "api_key: REDACTED") || !strings.Contains(s, "strategy: bm25") {
		t.Fatalf("print-config:\n%s", s)
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
