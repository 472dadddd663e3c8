package e2e

// Real clients, driven from Go: the Node SDK scripts in testdata/node
// (responses.mjs, anthropic.mjs, vercel-ai.mjs, langchain.mjs), Codex CLI and
// Claude Code. Every helper takes the server's root URL, so a test points
// them at a fake upstream (fakeai.Server.URL) or at the proxy alike; every
// run is bounded by a timeout that kills its whole process group, and runs
// offline: the only address a client is given is the loopback server.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/internal/codexhome"
	"github.com/skillrouter/skillrouter/internal/procgroup"
)

const (
	nodeTimeout  = 90 * time.Second
	agentTimeout = 3 * time.Minute
)

// clientResult is what a client script reports (see each script's header
// for which fields it fills).
type clientResult struct {
	API, Client, Case, Mode string
	Text                    string
	ToolCalls               []reportedCall
	Thinking                []string
	StopReason              string
	FinishReason            string
	Status                  string
	ID                      string
	Usage                   map[string]any
	Headers                 map[string]string
	RequestID               string
	Events                  []string
	Deltas                  int
	Chunks                  int
	Steps                   []clientResult
	StepCount               int
	Items                   []reportedItem // Responses: a conversation's items read back
	Raw                     string         `json:"-"` // the JSON line as printed
}

// reportedItem is a conversation item as the client read it back.
type reportedItem struct {
	Type, Name, Role, CallID, Text string
}

type reportedCall struct {
	Name      string
	Arguments string         // Responses: JSON text
	CallID    string         // Responses
	ID        string         // Anthropic
	Input     map[string]any // Anthropic, Vercel AI, LangChain
}

// command builds a bounded command that dies with its process group.
func command(t *testing.T, timeout time.Duration, name string, args ...string) (*exec.Cmd, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, name, args...)
	procgroup.KillOnCancel(cmd)
	return cmd, cancel
}

// runNode runs testdata/node/<script> args… with BASE_URL=baseURL (the
// server's root) plus env, and decodes the JSON line it prints last.
func runNode(t *testing.T, script, baseURL string, env []string, args ...string) clientResult {
	t.Helper()
	requireNode(t)
	cmd, cancel := command(t, nodeTimeout, "node", append([]string{script}, args...)...)
	defer cancel()
	cmd.Dir = nodeDir
	cmd.Env = append(cleanEnv(), append([]string{"BASE_URL=" + baseURL}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s %s: %v\nstdout: %s\nstderr: %s", script, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var r clientResult
	r.Raw = lines[len(lines)-1]
	if err := json.Unmarshal([]byte(r.Raw), &r); err != nil {
		t.Fatalf("node %s printed %q: %v", script, stdout.String(), err)
	}
	t.Logf("node %s %s: %s", script, strings.Join(args, " "), lines[len(lines)-1])
	return r
}

// cleanEnv is the environment clients start from: the host's PATH and
// locale only, so that no real key, base URL or proxy setting leaks in.
func cleanEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "NO_COLOR=1"}
	if tz := os.Getenv("TZ"); tz != "" {
		env = append(env, "TZ="+tz)
	}
	return env
}

// agentRun is the outcome of a Codex or Claude Code run.
type agentRun struct {
	Answer         string // the final message
	Stdout, Stderr string
	Home           string // the throwaway HOME (Codex: CODEX_HOME is Home/.codex)
}

// nodeBin returns an executable installed under testdata/node/node_modules.
func nodeBin(t *testing.T, rel ...string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(append([]string{nodeDir, "node_modules"}, rel...)...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runCodex runs `codex exec --skip-git-repo-check prompt` against baseURL
// (the server's root; Codex is given baseURL/v1) with a throwaway HOME and
// CODEX_HOME, in an empty working folder, and returns its final message.
func runCodex(t *testing.T, baseURL, prompt string) agentRun {
	t.Helper()
	return runCodexIn(t, baseURL, "", prompt)
}

// runCodexIn is runCodex in the working folder work ("" for a fresh one).
func runCodexIn(t *testing.T, baseURL, work, prompt string) agentRun {
	t.Helper()
	home := t.TempDir()
	if work == "" {
		work = filepath.Join(home, "work")
	}
	return execCodex(t, baseURL, home, work, "--ephemeral", prompt)
}

// execCodex runs `codex exec --skip-git-repo-check … args` against baseURL
// with HOME home and CODEX_HOME home/.codex, in the folder work, and
// returns its final message. Without --ephemeral in args the session stays
// under home, for a later `resume --last`.
func execCodex(t *testing.T, baseURL, home, work string, args ...string) agentRun {
	t.Helper()
	requireNode(t)
	codexHome := filepath.Join(home, ".codex")
	for _, d := range []string{codexHome, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := codexhome.Write(codexHome, baseURL+"/v1", ""); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(home, "last-message.txt")
	os.Remove(last) // a run that writes none must not read an earlier one's
	cmd, cancel := command(t, agentTimeout, nodeBin(t, ".bin", "codex"),
		append([]string{"exec", "--skip-git-repo-check", "--color", "never", "-o", last}, args...)...)
	defer cancel()
	cmd.Dir = work
	cmd.Env = append(cleanEnv(), "HOME="+home, "CODEX_HOME="+codexHome, codexhome.KeyEnv+"=sk-e2e-codex")
	cmd.Stdin = strings.NewReader("")
	run := agentRun{Home: home}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run.Stdout, run.Stderr = stdout.String(), stderr.String()
	if err != nil {
		t.Fatalf("codex exec %q: %v\nstdout: %s\nstderr: %s", args, err, run.Stdout, run.Stderr)
	}
	b, err := os.ReadFile(last)
	if err != nil {
		t.Fatalf("codex wrote no last message: %v\nstdout: %s\nstderr: %s", err, run.Stdout, run.Stderr)
	}
	run.Answer = strings.TrimSpace(string(b))
	return run
}

// claudeBinary prefers the platform package's native binary: Claude Code's
// bin/claude.exe is a placeholder until its postinstall copies the binary
// over it, and npm may be set to skip install scripts.
func claudeBinary(t *testing.T) string {
	t.Helper()
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	native := nodeBin(t, "@anthropic-ai", "claude-code-"+runtime.GOOS+"-"+arch, "claude")
	if fi, err := os.Stat(native); err == nil && fi.Mode()&0o111 != 0 {
		return native
	}
	return nodeBin(t, ".bin", "claude")
}

// runClaude runs `claude -p prompt` against baseURL (ANTHROPIC_BASE_URL)
// with a dummy key, nonessential traffic off and a throwaway HOME, in an
// empty working folder, and returns its answer (the text result of
// --output-format json).
func runClaude(t *testing.T, baseURL, prompt string) agentRun {
	t.Helper()
	return runClaudeIn(t, baseURL, "", prompt)
}

// runClaudeIn is runClaude in the working folder work ("" for a fresh one),
// with extra command-line arguments.
func runClaudeIn(t *testing.T, baseURL, work, prompt string, extraArgs ...string) agentRun {
	t.Helper()
	home := t.TempDir()
	if work == "" {
		work = filepath.Join(home, "work")
	}
	return execClaude(t, baseURL, home, work, append([]string{"-p", prompt, "--no-session-persistence"}, extraArgs...)...)
}

// execClaude runs Claude Code with args and --output-format json against
// baseURL, with HOME home, in the folder work, and returns its answer.
// Without --no-session-persistence in args the session stays under home,
// for a later --continue.
func execClaude(t *testing.T, baseURL, home, work string, args ...string) agentRun {
	t.Helper()
	requireNode(t)
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, cancel := command(t, agentTimeout, claudeBinary(t), append(append([]string(nil), args...), "--output-format", "json")...)
	defer cancel()
	cmd.Dir = work
	cmd.Env = append(cleanEnv(), "HOME="+home,
		"ANTHROPIC_BASE_URL="+baseURL, "ANTHROPIC_API_KEY=sk-ant-e2e-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_MAX_RETRIES=0")
	cmd.Stdin = strings.NewReader("")
	run := agentRun{Home: home}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run.Stdout, run.Stderr = stdout.String(), stderr.String()
	if err != nil {
		t.Fatalf("claude %q: %v\nstdout: %s\nstderr: %s", args, err, run.Stdout, run.Stderr)
	}
	var out struct {
		Type, Subtype string
		IsError       bool `json:"is_error"`
		Result        string
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(run.Stdout)), &out); err != nil {
		t.Fatalf("claude printed %q: %v\nstderr: %s", run.Stdout, err, run.Stderr)
	}
	if out.IsError {
		t.Fatalf("claude reported an error: %s\nstderr: %s", run.Stdout, run.Stderr)
	}
	run.Answer = strings.TrimSpace(out.Result)
	return run
}
