// Package e2e drives the router binary's MCP server with real clients: the
// official MCP TypeScript SDK over stdio (`router mcp`) and streamable HTTP
// (`router serve`, /mcp), and Claude Code as a host (`claude -p
// --mcp-config`) against a fake Anthropic Messages server. The Node
// packages are pinned in testdata/node/package-lock.json.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// routerBin is the router binary built for these tests.
var routerBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "skillrouter-mcp-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if p, err := exec.LookPath("go"); err == nil {
		goBin = p
	}
	// The routers these tests start keep their routing index (and the
	// embedding cache) here, not in the user's cache: each test's library is
	// a fresh folder, and would leave one index there per run.
	os.Setenv("SKILLROUTER_EMBEDDER_CACHE_DIR", filepath.Join(dir, "cache"))
	routerBin = filepath.Join(dir, "router")
	cmd := exec.Command(goBin, "build", "-o", routerBin, "github.com/skillrouter/skillrouter/cmd/router")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the router: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// library copies the test library (mcpserver/testdata/skills) into a fresh
// folder the test may change.
func library(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "skills")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		return os.WriteFile(out, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// summary is client.mjs's last line.
type summary struct {
	OK        bool     `json:"ok"`
	Tools     []string `json:"tools"`
	Resources int      `json:"resources"`
	Skills    int      `json:"skills"`
	Prompts   int      `json:"prompts"`
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func checkSummary(t *testing.T, out string, tools int) {
	t.Helper()
	var s summary
	if err := json.Unmarshal([]byte(lastLine(out)), &s); err != nil || !s.OK {
		t.Fatalf("client summary %q: %v", lastLine(out), err)
	}
	if len(s.Tools) != tools || s.Resources != 8 || s.Skills != 3 || s.Prompts != 3 {
		t.Errorf("summary %+v", s)
	}
}

func TestTypeScriptSDKStdio(t *testing.T) {
	script := nodeScript(t, "client.mjs")
	out := runNode(t, 3*time.Minute, script, "stdio", routerBin, library(t))
	checkSummary(t, out, 3)
}

func TestTypeScriptSDKStdioExec(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	script := nodeScript(t, "client.mjs")
	out := runNode(t, 3*time.Minute, script, "stdio", routerBin, library(t), "exec")
	checkSummary(t, out, 4)
}

var mcpURLRE = regexp.MustCompile(`mcp=(http://\S+/mcp)`)

// serve starts `router serve` on a free loopback port and returns its MCP URL.
func serve(t *testing.T, skills string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, routerBin, "serve", "--listen", "127.0.0.1:0", "--skills", skills, "--log-level", "info")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := mcpURLRE.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr) // keep the pipe drained
			return m[1]
		}
	}
	t.Fatal("router serve exited without logging its MCP address")
	return ""
}

func TestTypeScriptSDKStreamableHTTP(t *testing.T) {
	script := nodeScript(t, "client.mjs")
	dir := library(t)
	url := serve(t, dir)
	out := runNode(t, 3*time.Minute, script, "http", url, dir)
	checkSummary(t, out, 3)
}

// TestClaudeCode runs Claude Code as the MCP host: it launches `router mcp`
// from an --mcp-config file and talks to a fake Messages server that calls
// the server's search_skills, then load_skill with the top hit. The fake
// asserts what Claude Code sent back as tool results.
func TestClaudeCode(t *testing.T) {
	claude := nodeBin(t, "claude")
	dir := library(t)
	fake, ts := newFakeClaude(t, "skills", "my postgres query is slow")
	home := t.TempDir()
	cfg := filepath.Join(home, "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"skills": map[string]any{
		"command": routerBin, "args": []string{"mcp", "--skills", dir, "--log-level", "warn"},
	}}})
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "My Postgres report query takes 9 seconds. How do I speed it up?",
		"--mcp-config", cfg, "--strict-mcp-config",
		"--allowedTools", "mcp__skills__search_skills,mcp__skills__load_skill",
		"--output-format", "json", "--model", "claude-sonnet-4-5")
	cmd.Dir = home
	cmd.Env = hostEnv(home, ts.URL)
	out, err := cmd.CombinedOutput()
	results, requests := fake.seen()
	if err != nil {
		t.Fatalf("claude: %v\n%s\nrequests: %v", err, out, requests)
	}
	var search, load *toolResult
	for i := range results {
		switch results[i].Tool {
		case "mcp__skills__search_skills":
			search = &results[i]
		case "mcp__skills__load_skill":
			load = &results[i]
		}
	}
	if search == nil || load == nil {
		t.Fatalf("the fake did not see both tool results: %+v\nrequests: %v\nclaude: %s", results, requests, out)
	}
	if search.IsError || !strings.HasPrefix(search.Text, `{"query":"my postgres query is slow","results":[{"id":"sql-tuning"`) {
		t.Errorf("search_skills result: %+v", *search)
	}
	if load.IsError || !strings.HasPrefix(load.Text, `<skill_context id="sql-tuning">`) || !strings.Contains(load.Text, "EXPLAIN (ANALYZE, BUFFERS)") {
		t.Errorf("load_skill result: %+v", *load)
	}
	var final struct {
		Result string `json:"result"`
	}
	if json.Unmarshal([]byte(lastLine(string(out))), &final) != nil || !strings.Contains(final.Result, `<skill_context id="sql-tuning">`) {
		t.Errorf("claude's answer: %s", out)
	}
}

// hostEnv is a clean environment for an MCP host pointed at a fake model:
// PATH and locale from ours, a private HOME, no Anthropic or Claude
// variables from the caller, no traffic beyond the fake.
func hostEnv(home, baseURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "XDG_CONFIG_HOME", k == "XDG_CACHE_HOME", k == "XDG_DATA_HOME",
			strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "CLAUDE"), strings.HasPrefix(k, "OPENAI_"),
			strings.HasPrefix(k, "CODEX"), strings.HasPrefix(k, "MCP_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"ANTHROPIC_BASE_URL="+baseURL,
		"ANTHROPIC_API_KEY=sk-ant-fake-key-for-tests",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	)
}
