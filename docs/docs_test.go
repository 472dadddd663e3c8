// Package docs holds the test that runs the examples of README.md and
// docs/*.md as written, so a documentation change that breaks one fails CI.
//
// Every fenced block in a runnable language is run:
//
//   - sh, bash, shell: as one bash script (set -e -o pipefail) in a fresh copy of
//     the repository, with the router binary on PATH. A `router serve` (or
//     `router demo --keep`) command is run bounded: started, probed until
//     /readyz answers 200, stopped with SIGTERM, and must exit 0.
//   - js, javascript, mjs: as an ES module under node, with the end-to-end
//     tests' pinned npm packages (proxy/e2e/testdata/node, the openai SDK
//     among them) installed once per machine (internal/npmcache).
//   - python, py: under python3 when an `openai` package is importable;
//     skipped with a message otherwise.
//   - yaml blocks whose top-level keys are all configuration keys are loaded
//     with `router serve --config BLOCK --print-config`.
//
// Client examples talk to the documented proxy address, 127.0.0.1:8080,
// which the test serves on a free port (substituted in the block's text):
// `router serve --skills examples/skills` in front of a fake
// OpenAI-compatible upstream (fake_test.go), which every bounded serve uses
// too. A client request the proxy answers with a 4xx or 5xx fails the block.
// Nothing leaves the machine: the process environment's proxy variables
// point at a closed loopback port, so a command aimed at a real API (say
// https://api.openai.com/v1) fails fast there instead.
//
// A block that cannot run here gets a marker on the line before its fence,
// which the test reports as a skip:
//
//	<!-- docs-test: skip (the reason, shown in the test's output) -->
package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/skillrouter/skillrouter/internal/npmcache"
)

// documentedAddr is the proxy address the documentation uses.
const documentedAddr = "127.0.0.1:8080"

// nestedEnv is set for every command a block runs: a documented command
// that runs the test suite must not run this test again.
const nestedEnv = "SKILLROUTER_DOCS_TEST_NESTED"

// nodePackageDir holds the package.json and lock of the npm packages the
// JavaScript examples import (the openai SDK).
const nodePackageDir = "proxy/e2e/testdata/node"

// block is one fenced code block of a Markdown file.
type block struct {
	file   string // slash path relative to the repository
	line   int    // line of the opening fence
	lang   string
	text   string
	skip   string // reason given by a skip marker
	marker string // a marker the test does not understand, reported as a failure
}

func (b block) name() string {
	return fmt.Sprintf("%s:%d:%s", strings.ReplaceAll(b.file, "/", "_"), b.line, b.lang)
}

// kind is how the test runs a block's language; "" = not run.
func (b block) kind() string {
	switch b.lang {
	case "sh", "bash", "shell":
		return "sh"
	case "js", "javascript", "mjs":
		return "js"
	case "python", "py", "python3":
		return "python"
	case "yaml", "yml":
		return "yaml"
	}
	return ""
}

var (
	fenceRE  = regexp.MustCompile("^( *)```\\s*([A-Za-z0-9_+-]*)")
	markerRE = regexp.MustCompile(`^<!--\s*docs-test:\s*(.*?)\s*-->$`)
	skipRE   = regexp.MustCompile(`^skip\s*\((.+)\)$`)
)

// parseBlocks finds the fenced blocks of a Markdown text and the marker
// on the nearest non-blank line above each.
func parseBlocks(file string, text string) []block {
	var out []block
	lines := strings.Split(text, "\n")
	prev := "" // nearest non-blank line above
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			if t := strings.TrimSpace(lines[i]); t != "" {
				prev = t
			}
			continue
		}
		b := block{file: file, line: i + 1, lang: strings.ToLower(m[2])}
		indent := m[1]
		var body []string
		for i++; i < len(lines); i++ {
			if strings.HasPrefix(strings.TrimLeft(lines[i], " "), "```") {
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		b.text = strings.Join(body, "\n") + "\n"
		if mm := markerRE.FindStringSubmatch(prev); mm != nil {
			if sm := skipRE.FindStringSubmatch(mm[1]); sm != nil && strings.TrimSpace(sm[1]) != "" {
				b.skip = strings.TrimSpace(sm[1])
			} else {
				b.marker = mm[1]
			}
		}
		prev = ""
		out = append(out, b)
	}
	return out
}

// docFiles are README.md and docs/*.md, in that order.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, _ := filepath.Rel(root, m)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func TestDocs(t *testing.T) {
	if os.Getenv(nestedEnv) != "" {
		t.Skip("run by a documented command inside the docs test")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	for _, f := range docFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, parseBlocks(f, string(b))...)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed: the documentation's shell examples cannot run")
	}
	env := newDocsEnv(t, root)
	for _, b := range blocks {
		if b.kind() == "" && b.marker == "" && b.skip == "" {
			continue
		}
		t.Run(b.name(), func(t *testing.T) { env.run(t, b) })
	}
	// What README promises about the binary itself, outside the repository.
	t.Run("binary/demo-from-an-empty-folder", env.demoFromEmptyFolder)
	t.Run("binary/serve-names-a-wrong-upstream", env.serveWrongUpstream)
}

// demoFromEmptyFolder: the built binary's `router demo` works in a folder
// with no library and no repository around it.
func (e *docsEnv) demoFromEmptyFolder(t *testing.T) {
	dir := t.TempDir()
	e.exec(t, block{file: "(binary)", lang: "sh"}, 2*time.Minute, dir, filepath.Join(e.bin, "router"), "demo")
}

// serveWrongUpstream: `router serve` given an upstream URL without its /v1
// logs the URL meant as soon as it starts, from an empty folder.
func (e *docsEnv) serveWrongUpstream(t *testing.T) {
	dir := t.TempDir()
	wrong := strings.TrimSuffix(e.upstream, "/v1")
	logFile := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(e.bin, "router"), "serve", "--skills", "builtin:examples", "--upstream", wrong, "--listen", freeAddr(t))
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, e.env, logf, logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	hint := "did you mean " + wrong + "/v1?"
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(logFile); strings.Contains(string(b), hint) {
			t.Logf("the hint was logged %s after start", time.Since(start).Round(time.Millisecond))
			return
		}
	}
	b, _ := os.ReadFile(logFile)
	t.Fatalf("serve never logged %q:\n%s", hint, b)
}

// docsEnv is what the blocks run in: a copy of the repository, the router
// binary, the fake upstream and the proxy at the documented address.
type docsEnv struct {
	root       string   // the repository under test
	work       string   // its copy, where blocks run
	bin        string   // folder holding the router binary
	home       string   // HOME of every command
	env        []string // environment of every command
	proxyAddr  string   // serves the documented address
	proxyLog   string   // the proxy's JSON log
	upstream   string   // the fake upstream's base URL (…/v1)
	configKeys map[string]bool
}

func newDocsEnv(t *testing.T, root string) *docsEnv {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH: the router cannot be built for the examples")
	}
	tmp := t.TempDir()
	e := &docsEnv{root: root, work: filepath.Join(tmp, "repo"), bin: filepath.Join(tmp, "bin"), home: filepath.Join(tmp, "home")}
	copyRepo(t, root, e.work)
	for _, d := range []string{e.bin, e.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	up := httptest.NewServer(fakeUpstream())
	t.Cleanup(up.Close)
	e.upstream = up.URL + "/v1"
	e.env = e.environment(t)

	// The router on PATH, built from the copy (so the documented `go build`
	// and `go run` in it find their work cached).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(e.bin, "router"), "./cmd/router")
	build.Dir, build.Env = e.work, e.env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the router: %v\n%s", err, out)
	}

	e.proxyAddr = freeAddr(t)
	e.proxyLog = filepath.Join(tmp, "proxy.log")
	e.startProxy(t)
	t.Logf("the documented proxy address %s is served at %s (router serve --skills examples/skills, upstream %s)",
		documentedAddr, e.proxyAddr, e.upstream)
	e.configKeys = e.topLevelConfigKeys(t)
	return e
}

// environment is a clean one: no configuration or keys of the machine's
// user leak in, Go finds its caches without the network, and any request
// meant for another machine fails at a closed loopback port.
func (e *docsEnv) environment(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "SKILLROUTER_"), strings.HasPrefix(k, "OPENAI_"), strings.HasPrefix(k, "ANTHROPIC_"),
			strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "GO"),
			k == "HOME", k == "CLAUDE_CONFIG_DIR", k == "CODEX_HOME", k == "OLLAMA_HOST",
			strings.EqualFold(k, "HTTP_PROXY"), strings.EqualFold(k, "HTTPS_PROXY"), strings.EqualFold(k, "NO_PROXY"), strings.EqualFold(k, "ALL_PROXY"):
			continue
		case k == "PATH":
			kv = "PATH=" + e.bin + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
		env = append(env, kv)
	}
	for _, k := range []string{"GOPATH", "GOMODCACHE", "GOCACHE", "GOROOT", "GOFLAGS"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		if v := strings.TrimSpace(string(out)); v != "" {
			env = append(env, k+"="+v)
		}
	}
	closed := "http://127.0.0.1:1" // nothing listens on a privileged loopback port
	// npm packages installed once per machine stay findable under the
	// commands' own HOME.
	if root, err := npmcache.Root(); err == nil {
		env = append(env, npmcache.EnvRoot+"="+root)
	}
	return append(env,
		"HOME="+e.home,
		"XDG_CONFIG_HOME="+filepath.Join(e.home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(e.home, ".cache"),
		"GOTOOLCHAIN=local", "GOPROXY=off",
		"HTTP_PROXY="+closed, "HTTPS_PROXY="+closed, "ALL_PROXY="+closed, "NO_PROXY=127.0.0.1,localhost",
		"OPENAI_API_KEY=sk-docs-test",
		"SKILLROUTER_UPSTREAM_URL="+e.upstream,
		"SKILLROUTER_WATCH=false",
		nestedEnv+"=1",
	)
}

// startProxy runs the proxy behind the documented address until the test ends.
func (e *docsEnv) startProxy(t *testing.T) {
	t.Helper()
	logf, err := os.Create(e.proxyLog)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(e.bin, "router"), "serve", "--skills", "examples/skills",
		"--listen", e.proxyAddr, "--log-format", "json")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = e.work, e.env, logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
		}
		logf.Close()
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + e.proxyAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case err := <-done:
			b, _ := os.ReadFile(e.proxyLog)
			t.Fatalf("the proxy for the client examples exited: %v\n%s", err, b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(e.proxyLog)
			t.Fatalf("the proxy for the client examples did not become ready:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// topLevelConfigKeys are the keys `router serve --print-config` prints.
func (e *docsEnv) topLevelConfigKeys(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command(filepath.Join(e.bin, "router"), "serve", "--print-config")
	cmd.Dir, cmd.Env = e.work, e.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("router serve --print-config: %v", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for k := range m {
		keys[k] = true
	}
	return keys
}

// run runs one block.
func (e *docsEnv) run(t *testing.T, b block) {
	if b.marker != "" {
		t.Fatalf("%s:%d: marker %q not understood; write <!-- docs-test: skip (reason) -->", b.file, b.line, b.marker)
	}
	if b.skip != "" {
		t.Skipf("%s:%d: skipped by its marker: %s", b.file, b.line, b.skip)
	}
	logStart := fileSize(e.proxyLog)
	switch b.kind() {
	case "sh":
		e.runShell(t, b)
	case "js":
		e.runJS(t, b)
	case "python":
		e.runPython(t, b)
	case "yaml":
		e.runConfig(t, b)
		return
	}
	e.checkProxyLog(t, b, logStart)
}

// clientText puts the test's proxy where the documentation says 8080.
func (e *docsEnv) clientText(s string) string {
	s = strings.ReplaceAll(s, documentedAddr, e.proxyAddr)
	return strings.ReplaceAll(s, "localhost:8080", e.proxyAddr)
}

// boundedPrelude defines docs_bounded ADDR TEXT CMD...: run CMD in the
// background, wait until http://ADDR/readyz answers 200 and its output
// holds TEXT (when not empty), stop it with SIGTERM and require a clean exit.
const boundedPrelude = `set -e -o pipefail
docs_bounded() {
  local addr=$1 text=$2; shift 2
  local log i rc pid
  log=$(mktemp)
  SKILLROUTER_LISTEN=$addr "$@" >"$log" 2>&1 &
  pid=$!
  for i in $(seq 1 1200); do
    if curl -fsS -o /dev/null "http://$addr/readyz" 2>/dev/null && { [ -z "$text" ] || grep -qF "$text" "$log"; }; then
      kill -TERM "$pid"
      rc=0; wait "$pid" || rc=$?
      cat "$log"; rm -f "$log"
      if [ "$rc" -ne 0 ]; then echo "docs-test: '$*' exited $rc after SIGTERM" >&2; return 1; fi
      echo "docs-test: '$*' served on $addr, then stopped" >&2
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      rc=0; wait "$pid" || rc=$?
      cat "$log"; rm -f "$log"
      echo "docs-test: '$*' exited $rc before serving on $addr" >&2
      return 1
    fi
    sleep 0.1
  done
  kill -KILL "$pid"; cat "$log"; rm -f "$log"
  echo "docs-test: '$*' not ready on $addr after 120s" >&2; return 1
}
`

// longRunningRE matches a command that serves until stopped: router serve
// (not --print-config or --help) and router demo --keep, possibly after
// VAR=value assignments. Groups: assignments, the command.
var longRunningRE = regexp.MustCompile(`^((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)(\S*router\s+serve\b.*|\S*router\s+demo\b.*--keep\b.*|\$\w+\s+serve\b.*)$`)

var listenRE = regexp.MustCompile(`--listen(\s+|=)\S+`)

// shellScript turns a block into the script the test runs: commands that
// serve until stopped are run bounded on addr; other lines talk to the
// test's proxy where the documentation says 127.0.0.1:8080.
func (e *docsEnv) shellScript(text, addr string) string {
	var out strings.Builder
	out.WriteString(boundedPrelude)
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		cmd := lines[i]
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		flat := strings.TrimSpace(strings.ReplaceAll(cmd, "\\\n", " "))
		if m := longRunningRE.FindStringSubmatch(commentless(flat)); m != nil &&
			!strings.Contains(flat, "--print-config") && !strings.Contains(flat, "--help") {
			run := listenRE.ReplaceAllString(commentless(flat), "--listen "+addr)
			run = strings.ReplaceAll(run, documentedAddr, addr)
			run = strings.TrimPrefix(run, m[1])
			wait := "''"
			if strings.Contains(m[2], "demo") {
				wait = "'Ctrl-C to stop'" // the sample requests are done
			}
			out.WriteString(m[1] + "docs_bounded " + addr + " " + wait + " " + run + "\n")
			continue
		}
		out.WriteString(e.clientText(cmd) + "\n")
	}
	return out.String()
}

// commentless drops a trailing shell comment ("cmd  # note").
func commentless(s string) string {
	if i := strings.Index(s, " #"); i >= 0 && !strings.ContainsAny(s[:i], `'"`) {
		return strings.TrimSpace(s[:i])
	}
	return s
}

func (e *docsEnv) runShell(t *testing.T, b block) {
	for _, tool := range []string{"curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (.ci/run installs it)", tool)
		}
	}
	script := e.shellScript(b.text, freeAddr(t))
	e.exec(t, b, 10*time.Minute, e.work, "bash", "-c", script)
}

func (e *docsEnv) runJS(t *testing.T, b block) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: the JavaScript examples need Node 20")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not installed: cannot install the openai SDK the JavaScript examples import")
	}
	// The pinned SDK of the end-to-end tests, installed once per machine.
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(e.root, nodePackageDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := npmcache.Ensure(ctx, dir); err != nil {
		t.Fatalf("installing the openai SDK for the JavaScript examples: %v", err)
	}
	file := filepath.Join(dir, "example.mjs")
	if err := os.WriteFile(file, []byte(e.clientText(b.text)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.exec(t, b, 2*time.Minute, dir, "node", file)
}

func (e *docsEnv) runPython(t *testing.T, b block) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	if err := exec.Command("python3", "-c", "import openai").Run(); err != nil && strings.Contains(b.text, "openai") {
		t.Skipf("%s:%d: the Python openai package is not importable here (pip install openai to run this example)", b.file, b.line)
	}
	file := filepath.Join(t.TempDir(), "example.py")
	if err := os.WriteFile(file, []byte(e.clientText(b.text)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.exec(t, b, 2*time.Minute, e.work, "python3", file)
}

// runConfig loads a YAML block that is a configuration (every top-level
// key is one) as serve would.
func (e *docsEnv) runConfig(t *testing.T, b block) {
	var m map[string]any
	if yaml.Unmarshal([]byte(b.text), &m) != nil || len(m) == 0 {
		t.Skipf("%s:%d: not a YAML mapping: not a configuration", b.file, b.line)
	}
	for k := range m {
		if !e.configKeys[k] {
			t.Skipf("%s:%d: key %q is no configuration key: not a configuration", b.file, b.line, k)
		}
	}
	// Beside examples/, so relative folders resolve as in the documentation.
	file := filepath.Join(e.work, "docs-test-config.yaml")
	if err := os.WriteFile(file, []byte(b.text), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(file)
	e.exec(t, b, time.Minute, e.work, filepath.Join(e.bin, "router"), "serve", "--config", file, "--print-config")
}

// exec runs one command of a block and fails the block when it fails.
func (e *docsEnv) exec(t *testing.T, b block, timeout time.Duration, dir, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, e.env
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s", timeout)
	}
	if err != nil {
		t.Fatalf("%s:%d (%s) failed: %v\n--- what ran:\n%s\n--- output:\n%s", b.file, b.line, b.lang, err, strings.Join(args, " "), tail(out.String(), 6000))
	}
	t.Logf("%s:%d (%s) ran; output:\n%s", b.file, b.line, b.lang, tail(out.String(), 2000))
}

// checkProxyLog fails the block when the proxy answered one of its requests
// with an error status.
func (e *docsEnv) checkProxyLog(t *testing.T, b block, from int64) {
	t.Helper()
	f, err := os.Open(e.proxyLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg    string `json:"msg"`
			Path   string `json:"path"`
			Status int    `json:"status"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Status >= 400 && line.Path != "/readyz" {
			t.Errorf("%s:%d: the proxy answered %s with %d: %s", b.file, b.line, line.Path, line.Status, sc.Text())
		}
	}
}

// copyRepo copies the repository's files (tracked, and untracked but not
// ignored; every file but VCS state and build output outside a git
// checkout) to dst, so blocks that build or write files leave it untouched.
func copyRepo(t *testing.T, root, dst string) {
	t.Helper()
	var files []string
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		files = strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	} else {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "bin" || d.Name() == "bench-out") {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("listing the repository: %v", err)
		}
	}
	for _, rel := range files {
		if rel == "" {
			continue
		}
		src := filepath.Join(root, rel)
		info, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func fileSize(p string) int64 {
	info, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return info.Size()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
