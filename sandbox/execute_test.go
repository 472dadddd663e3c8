package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

func TestExecuteSuccess(t *testing.T) {
	p, _ := newTestProvider(t, nil)
	s := fixtureSkill(t, "scripts-demo")
	tests := []struct {
		program, command, wantOut, wantFile string
	}{
		{"bash", "scripts/hello.sh", "hello Ada from bash", "greeting.txt"},
		{"python3", "scripts/hello.py", "hello Ada from python", "py-out.txt"},
		{"node", "scripts/hello.js", "hello Ada from node", "node-out.json"},
		{"sh", "scripts/tool", "shebang tool ran with 1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			requireProgram(t, tt.program)
			res := execute(t, p, s, "conv-success-"+tt.program, tt.command, "Ada")
			if !res.OK || res.ExitCode != 0 || res.Killed != "" {
				t.Fatalf("want success, got %+v", res)
			}
			if !strings.Contains(res.Stdout, tt.wantOut) {
				t.Errorf("stdout %q lacks %q", res.Stdout, tt.wantOut)
			}
			if res.Command != tt.command || !slices.Equal(res.Args, []string{"Ada"}) || res.SkillID != s.ID {
				t.Errorf("echoed call: %s %v %s", res.Command, res.Args, res.SkillID)
			}
			if res.Truncated || res.DurationMS < 0 || res.OutputDir == "" {
				t.Errorf("metadata: %+v", res)
			}
			if tt.wantFile != "" {
				want := []FileChange{{Path: tt.wantFile, Size: fileSize(t, filepath.Join(res.OutputDir, tt.wantFile)), Status: "created"}}
				if !slices.Equal(res.Files, want) {
					t.Errorf("files = %+v, want %+v", res.Files, want)
				}
			}
		})
	}
	t.Run("working directory is the output directory", func(t *testing.T) {
		res := execute(t, p, s, "conv-cwd", "scripts/hello.sh")
		real, _ := filepath.EvalSymlinks(res.OutputDir)
		if !strings.Contains(res.Stdout, "cwd="+real+"\n") {
			t.Errorf("stdout %q does not show cwd %s", res.Stdout, real)
		}
		if !strings.Contains(res.Stderr, "note from bash") {
			t.Errorf("stderr %q", res.Stderr)
		}
	})
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestExecuteNonZeroExit(t *testing.T) {
	p, _ := newTestProvider(t, nil)
	res := execute(t, p, fixtureSkill(t, "scripts-demo"), "c", "scripts/fail.sh")
	if res.OK || res.ExitCode != 3 || res.Killed != "" {
		t.Fatalf("want exit 3, got %+v", res)
	}
	if res.Stdout != "about to fail\n" || !strings.Contains(res.Stderr, "something went wrong") {
		t.Errorf("output: %q / %q", res.Stdout, res.Stderr)
	}
}

func TestExecuteTimeoutKillsTree(t *testing.T) {
	// 2 s: time for the script to start and write its child's pid on a
	// loaded machine (300 ms was not always enough under -race).
	p, _ := newTestProvider(t, func(c *Config) { c.Timeout = 2 * time.Second })
	start := time.Now()
	res := execute(t, p, fixtureSkill(t, "scripts-demo"), "c", "scripts/sleep.sh")
	elapsed := time.Since(start)
	if res.OK || res.Killed != KilledTimeout || res.ExitCode != -1 || !strings.Contains(res.Note, "time limit") {
		t.Fatalf("want a timeout kill, got %+v", res)
	}
	// The script sleeps 30 s; returning well before proves it was killed.
	if elapsed > 10*time.Second {
		t.Fatalf("call took %s", elapsed)
	}
	if !strings.Contains(res.Stdout, "sleeping") {
		t.Errorf("output before the kill is kept: %q", res.Stdout)
	}
	assertGone(t, readPID(t, res.OutputDir, "sleep-child.pid"), "the script's background child")
}

func TestExecuteHugeOutputIsCutAndStopped(t *testing.T) {
	requireProgram(t, "python3")
	const limit = 16 << 10
	p, _ := newTestProvider(t, func(c *Config) { c.OutputLimit = limit })
	res := execute(t, p, fixtureSkill(t, "scripts-demo"), "c", "scripts/huge.py")
	if !res.Truncated || res.Killed != KilledOutput || res.OK {
		t.Fatalf("want truncated output and a stop, got killed=%q truncated=%v", res.Killed, res.Truncated)
	}
	body, marker, ok := strings.Cut(res.Stdout, "\n[output truncated")
	if !ok || len(body)+len(res.Stderr) > limit || len(body) < limit/2 {
		t.Errorf("stdout body %d bytes (limit %d), marker found %v", len(body), limit, ok)
	}
	if !strings.Contains(marker, strconv.Itoa(limit)) {
		t.Errorf("marker %q does not name the limit", marker)
	}
	assertGone(t, readPID(t, res.OutputDir, "huge.pid"), "the flooding script")
}

func TestExecuteForkAndExitLeavesNothing(t *testing.T) {
	p, _ := newTestProvider(t, nil)
	s := fixtureSkill(t, "scripts-demo")
	t.Run("background children", func(t *testing.T) {
		requireProgram(t, "setsid")
		res := execute(t, p, s, "c1", "scripts/fork.sh")
		if !res.OK || res.Stdout != "forked\n" {
			t.Fatalf("got %+v", res)
		}
		assertGone(t, readPID(t, res.OutputDir, "bg.pid"), "background child in the script's group")
		if _, direct := p.runner.(directRunner); direct {
			t.Skip("the process-group fallback cannot reach a child that called setsid")
		}
		assertGone(t, readPID(t, res.OutputDir, "setsid.pid"), "background child that left the group with setsid")
	})
	t.Run("child holding stdout", func(t *testing.T) {
		start := time.Now()
		res := execute(t, p, s, "c2", "scripts/fork_hold.sh")
		if !res.OK || !strings.Contains(res.Stdout, "forked") {
			t.Fatalf("got %+v", res)
		}
		// The child sleeps 300 s with our stdout open; returning at all
		// proves it was not waited for.
		if time.Since(start) > 10*time.Second {
			t.Fatalf("call took %s", time.Since(start))
		}
		assertGone(t, readPID(t, res.OutputDir, "hold.pid"), "background child holding stdout")
	})
}

func TestExecuteEnvironmentIsScrubbed(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":               "sk-test-secret-openai-0000",
		"SKILLROUTER_UPSTREAM_API_KEY": "sk-test-secret-upstream-1111",
		"AWS_SECRET_ACCESS_KEY":        "test-secret-aws-2222",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("SKILLTEST_PASSED", "passed-through")
	p, _ := newTestProvider(t, func(c *Config) { c.Env = []string{"SKILLTEST_PASSED", "SKILLTEST_FIXED=fixed", "SKILLTEST_UNSET"} })
	s := fixtureSkill(t, "scripts-demo")

	check := func(t *testing.T, raw string) {
		t.Helper()
		for k, v := range secrets {
			if strings.Contains(raw, v) || strings.Contains(raw, k) {
				t.Errorf("script saw %s: %s", k, raw)
			}
		}
	}
	t.Run("node sees exactly the allowed variables", func(t *testing.T) {
		requireProgram(t, "node")
		res := execute(t, p, s, "c", "scripts/env.js")
		if !res.OK {
			t.Fatalf("%+v", res)
		}
		check(t, res.Stdout)
		var env map[string]string
		if err := json.Unmarshal([]byte(res.Stdout), &env); err != nil {
			t.Fatal(err)
		}
		var names []string
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		want := []string{"HOME", "LANG", "PATH", "SKILLROUTER_OUTPUT_DIR", "SKILLROUTER_SKILL_DIR", "SKILLTEST_FIXED", "SKILLTEST_PASSED", "TMPDIR"}
		if !slices.Equal(names, want) {
			t.Errorf("variables %v, want %v", names, want)
		}
		realSkill, _ := filepath.EvalSymlinks(s.Dir)
		switch {
		case env["SKILLROUTER_OUTPUT_DIR"] != res.OutputDir:
			t.Errorf("SKILLROUTER_OUTPUT_DIR %q, output dir %q", env["SKILLROUTER_OUTPUT_DIR"], res.OutputDir)
		case env["SKILLROUTER_SKILL_DIR"] != realSkill:
			t.Errorf("SKILLROUTER_SKILL_DIR %q", env["SKILLROUTER_SKILL_DIR"])
		case env["HOME"] == os.Getenv("HOME") || !strings.HasPrefix(env["HOME"], p.cfg.OutputRoot):
			t.Errorf("HOME %q is not a sandbox directory", env["HOME"])
		case env["PATH"] != os.Getenv("PATH"):
			t.Errorf("PATH %q", env["PATH"])
		case env["SKILLTEST_PASSED"] != "passed-through" || env["SKILLTEST_FIXED"] != "fixed":
			t.Errorf("configured variables: %v", env)
		}
	})
	t.Run("python", func(t *testing.T) {
		requireProgram(t, "python3")
		res := execute(t, p, s, "c", "scripts/env.py")
		if !res.OK {
			t.Fatalf("%+v", res)
		}
		check(t, res.Stdout)
		if !strings.Contains(res.Stdout, `"PYTHONDONTWRITEBYTECODE": "1"`) {
			t.Errorf("python scripts run without bytecode writing: %s", res.Stdout)
		}
	})
	t.Run("the proxy's environment via /proc", func(t *testing.T) {
		requireProgram(t, "python3")
		if _, direct := p.runner.(directRunner); direct {
			t.Skip("the process-group fallback keeps capabilities: a root script can read /proc/<proxy>/environ")
		}
		res := execute(t, p, s, "c", "scripts/env.py", strconv.Itoa(os.Getpid()))
		check(t, res.Stdout)
		if !strings.Contains(res.Stdout, "parent_environ_error") {
			t.Errorf("reading the proxy's environ was not refused: %s", res.Stdout)
		}
	})
}

func TestExecuteSkillFolderIsReadOnly(t *testing.T) {
	p, _ := newTestProvider(t, nil)
	if p.runner.confinement() == "none" {
		t.Skip("no Landlock here: only file permissions protect the skill folder, and tests run as root")
	}
	s := copySkill(t, "scripts-demo") // a copy: an unconfined run would write into it
	res := execute(t, p, s, "c", "scripts/write_skill.sh")
	for _, want := range []string{"skill-dir-read-only", "wrote-output-dir", "wrote-home", "wrote-tmpdir", "wrote-dev-null"} {
		if !strings.Contains(res.Stdout, want+"\n") {
			t.Errorf("stdout %q lacks %s (stderr %q)", res.Stdout, want, res.Stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "pwned.txt")); err == nil {
		t.Error("the script wrote into its skill folder")
	}
	if !slices.ContainsFunc(res.Files, func(f FileChange) bool { return f.Path == "allowed.txt" }) {
		t.Errorf("files %+v lack allowed.txt", res.Files)
	}
}

// TestNothingWrittenToSkillFolder runs every well-behaved fixture script in
// place, with and without Landlock, and proves the folder is untouched:
// nothing we do (nor Python's bytecode cache) writes there.
func TestNothingWrittenToSkillFolder(t *testing.T) {
	for _, c := range []Confinement{ConfineAuto, ConfineNone} {
		t.Run(string(c), func(t *testing.T) {
			p, _ := newTestProvider(t, func(cfg *Config) { cfg.Confinement = c })
			s := fixtureSkill(t, "scripts-demo")
			before := treeState(t, s.Dir)
			for _, cmd := range []struct{ program, path string }{
				{"bash", "scripts/hello.sh"}, {"python3", "scripts/hello.py"}, {"node", "scripts/hello.js"}, {"bash", "scripts/fail.sh"},
			} {
				if _, err := lookPathOK(cmd.program); err == nil {
					execute(t, p, s, "c", cmd.path)
				}
			}
			read := toolNamed(t, p.Tools(context.Background(), []*skills.Skill{s}), ToolReadResource)
			callTool(t, read, "c", map[string]string{"skill_id": s.ID, "path": "references/guide.md"})
			if after := treeState(t, s.Dir); after != before {
				t.Errorf("skill folder changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

func TestExecuteRefusals(t *testing.T) {
	p, _ := newTestProvider(t, func(c *Config) {
		c.Lookup = func(id string) (*skills.Skill, bool) {
			if id == "calc" {
				return &skills.Skill{ID: "calc"}, true
			}
			return nil, false
		}
	})
	s := fixtureSkill(t, "scripts-demo")
	tool := toolNamed(t, p.Tools(context.Background(), []*skills.Skill{s}), ToolExecute)
	tests := []struct {
		name string
		args string
		code string
	}{
		{"dot-dot", `{"skill_id":"scripts-demo","command":"../calc/execute.py"}`, CodePathOutsideSkill},
		{"dot-dot inside path", `{"skill_id":"scripts-demo","command":"scripts/../../calc/execute.py"}`, CodePathOutsideSkill},
		{"absolute", `{"skill_id":"scripts-demo","command":"/bin/sh"}`, CodePathOutsideSkill},
		{"NUL", `{"skill_id":"scripts-demo","command":"scripts/hello.sh\u0000x"}`, CodeInvalidPath},
		{"missing", `{"skill_id":"scripts-demo","command":"scripts/nope.sh"}`, CodeNotFound},
		{"directory", `{"skill_id":"scripts-demo","command":"scripts"}`, CodeNotAFile},
		{"skill root", `{"skill_id":"scripts-demo","command":"."}`, CodeNotAFile},
		{"no runtime", `{"skill_id":"scripts-demo","command":"scripts/plain"}`, CodeUnsupported},
		{"markdown", `{"skill_id":"scripts-demo","command":"SKILL.md"}`, CodeUnsupported},
		{"no command", `{"skill_id":"scripts-demo"}`, CodeInvalidArguments},
		{"bad json", `{"skill_id":`, CodeInvalidArguments},
		{"object args", `{"skill_id":"scripts-demo","command":"scripts/hello.sh","args":[{"a":1}]}`, CodeInvalidArguments},
		{"no skill", `{"command":"scripts/hello.sh"}`, CodeInvalidArguments},
		{"skill id of the wrong type", `{"skill_id":5,"command":"scripts/hello.sh"}`, CodeInvalidArguments},
		{"inactive skill", `{"skill_id":"calc","command":"execute.py"}`, CodeSkillNotActive},
		{"unknown skill", `{"skill_id":"nope","command":"x.sh"}`, CodeUnknownSkill},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := failureOf(t, callTool(t, tool, "c", tt.args))
			if e.Code != tt.code {
				t.Errorf("code %q (%s), want %q", e.Code, e.Message, tt.code)
			}
			if e.Message == "" || strings.Contains(e.Message, "Go value") {
				t.Errorf("message %q: none, or in Go's terms", e.Message)
			}
			if tt.name == "skill id of the wrong type" && !strings.Contains(e.Message, `argument "skill_id" must be a string`) {
				t.Errorf("message %q does not name the argument", e.Message)
			}
		})
	}
	t.Run("numeric args are accepted", func(t *testing.T) {
		var res execResult
		out := callTool(t, tool, "c", `{"skill_id":"scripts-demo","command":"scripts/tool","args":[1,true,"x"]}`)
		if err := json.Unmarshal([]byte(out), &res); err != nil || !slices.Equal(res.Args, []string{"1", "true", "x"}) {
			t.Fatalf("%s", out)
		}
	})
}

func TestSymlinkEscapes(t *testing.T) {
	p, _ := newTestProvider(t, nil)
	s := copySkill(t, "scripts-demo")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "evil.sh"), []byte("#!/bin/sh\necho escaped\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"scripts/evil.sh":     filepath.Join(outside, "evil.sh"),          // absolute target outside
		"scripts/rel-evil.sh": filepath.Join("..", "..", "..", "evil.sh"), // relative target outside (may dangle)
		"linked":              outside,                                    // a directory leading outside
		"references/passwd":   "/etc/passwd",
		"scripts/alias.sh":    "hello.sh",  // inside: allowed
		"scripts/hop":         "../linked", // inside link to an outside link
	}
	// rel-evil resolves to <tmp>/evil.sh next to the skills dir; make it exist.
	if err := os.WriteFile(filepath.Join(filepath.Dir(filepath.Dir(s.Dir)), "evil.sh"), []byte("echo escaped\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(s.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	tools := p.Tools(context.Background(), []*skills.Skill{s})
	exe, read := toolNamed(t, tools, ToolExecute), toolNamed(t, tools, ToolReadResource)
	for _, cmd := range []string{"scripts/evil.sh", "scripts/rel-evil.sh", "linked/evil.sh", "scripts/hop/evil.sh"} {
		t.Run("execute "+cmd, func(t *testing.T) {
			e := failureOf(t, callTool(t, exe, "c", map[string]any{"skill_id": s.ID, "command": cmd}))
			if e.Code != CodePathOutsideSkill {
				t.Errorf("code %q: %s", e.Code, e.Message)
			}
		})
	}
	for _, path := range []string{"references/passwd", "linked/evil.sh", "linked", "scripts/hop"} {
		t.Run("read "+path, func(t *testing.T) {
			out := callTool(t, read, "c", map[string]any{"skill_id": s.ID, "path": path})
			if e := failureOf(t, out); e.Code != CodePathOutsideSkill || strings.Contains(out, "root:") {
				t.Errorf("code %q: %s", e.Code, out)
			}
		})
	}
	t.Run("a link inside the folder works", func(t *testing.T) {
		res := execute(t, p, s, "c", "scripts/alias.sh", "Bo")
		if !res.OK || !strings.Contains(res.Stdout, "hello Bo from bash") {
			t.Fatalf("%+v", res)
		}
	})
}

func TestOutputDirectoryPerConversation(t *testing.T) {
	p, _ := newTestProvider(t, nil)
	s := fixtureSkill(t, "scripts-demo")
	first := execute(t, p, s, "conv-a", "scripts/hello.sh")
	second := execute(t, p, s, "conv-a", "scripts/modify.sh")
	if first.OutputDir != second.OutputDir {
		t.Fatalf("same conversation, different dirs: %s %s", first.OutputDir, second.OutputDir)
	}
	if want := []FileChange{{Path: "greeting.txt", Size: fileSize(t, filepath.Join(second.OutputDir, "greeting.txt")), Status: "modified"}}; !slices.Equal(second.Files, want) {
		t.Errorf("files %+v, want %+v", second.Files, want)
	}
	other := execute(t, p, s, "conv-b", "scripts/modify.sh")
	if other.OutputDir == first.OutputDir || !slices.Equal(other.Files, []FileChange{{Path: "greeting.txt", Size: 5, Status: "created"}}) {
		t.Errorf("another conversation shares state: %+v", other)
	}
	for _, conv := range []string{"../../etc", "a/b", "", strings.Repeat("x", 300)} {
		res := execute(t, p, s, conv, "scripts/fail.sh")
		if _, in := within(p.cfg.OutputRoot, res.OutputDir); !in || filepath.Dir(filepath.Dir(res.OutputDir)) != p.cfg.OutputRoot {
			t.Errorf("conversation %q got output dir %s outside %s", conv, res.OutputDir, p.cfg.OutputRoot)
		}
	}
}

func TestConcurrencyLimitQueuesThenRefuses(t *testing.T) {
	p, _ := newTestProvider(t, func(c *Config) { c.Concurrency, c.Queue = 1, 1 })
	s := fixtureSkill(t, "scripts-demo")
	release := filepath.Join(t.TempDir(), "release")
	var wg sync.WaitGroup
	results := make([]execResult, 2)
	run := func(i int) {
		defer wg.Done()
		results[i] = execute(t, p, s, "c"+strconv.Itoa(i), "scripts/wait.sh", release)
	}
	wg.Add(1)
	go run(0)
	waitFor(t, "the first execution to run", func() bool { return p.Stats().Running == 1 })
	wg.Add(1)
	go run(1)
	waitFor(t, "the second execution to queue", func() bool { return p.Stats().Queued == 1 })

	tool := toolNamed(t, p.Tools(context.Background(), []*skills.Skill{s}), ToolExecute)
	e := failureOf(t, callTool(t, tool, "c2", map[string]any{"skill_id": s.ID, "command": "scripts/hello.sh"}))
	if e.Code != CodeBusy || !strings.Contains(e.Message, "busy") {
		t.Errorf("third execution: %+v", e)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, r := range results {
		if !r.OK || r.Stdout != "released\n" {
			t.Errorf("execution %d: %+v", i, r)
		}
	}
	if st := p.Stats(); st != (Stats{}) {
		t.Errorf("stats after all finished: %+v", st)
	}
}

func TestQueuedExecutionHonoursCancellation(t *testing.T) {
	p, _ := newTestProvider(t, func(c *Config) { c.Concurrency, c.Queue = 1, 4 })
	s := fixtureSkill(t, "scripts-demo")
	release := filepath.Join(t.TempDir(), "release")
	done := make(chan struct{})
	go func() { defer close(done); execute(t, p, s, "c0", "scripts/wait.sh", release) }()
	waitFor(t, "the first execution to run", func() bool { return p.Stats().Running == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	tool := toolNamed(t, p.Tools(ctx, []*skills.Skill{s}), ToolExecute)
	got := make(chan string, 1)
	go func() {
		out, _ := tool.Call(ctx, router.ToolCall{Conversation: "c1", Arguments: json.RawMessage(`{"skill_id":"scripts-demo","command":"scripts/hello.sh"}`)})
		got <- out
	}()
	waitFor(t, "the second execution to queue", func() bool { return p.Stats().Queued == 1 })
	cancel()
	if e := failureOf(t, <-got); e.Code != CodeCancelled {
		t.Errorf("code %q", e.Code)
	}
	_ = os.WriteFile(release, nil, 0o600)
	<-done
}

func TestExecutionsAreLogged(t *testing.T) {
	p, logs := newTestProvider(t, nil)
	s := fixtureSkill(t, "scripts-demo")
	execute(t, p, s, "conv-log", "scripts/fail.sh", "x", "y")
	recs := logs.records("sandbox: executed")
	if len(recs) != 1 {
		t.Fatalf("%d execution records", len(recs))
	}
	r := recs[0]
	if r["level"] != "INFO" || r["skill"] != s.ID || r["command"] != "scripts/fail.sh" || r["exit_code"] != float64(3) || r["conversation"] != "conv-log" {
		t.Errorf("record %v", r)
	}
	if args, _ := r["args"].([]any); len(args) != 2 || args[0] != "x" || args[1] != "y" {
		t.Errorf("args %v", r["args"])
	}
	if _, ok := r["duration_ms"].(float64); !ok {
		t.Errorf("no duration_ms in %v", r)
	}
	p.Tools(context.Background(), []*skills.Skill{s})
	callTool(t, toolNamed(t, p.Tools(context.Background(), []*skills.Skill{s}), ToolExecute), "c", `{"skill_id":"scripts-demo","command":"../x"}`)
	if refused := logs.records("sandbox: refused"); len(refused) != 1 || refused[0]["code"] != CodePathOutsideSkill {
		t.Errorf("refusal records %v", refused)
	}
}

func TestConversationDirectoriesAreSwept(t *testing.T) {
	p, _ := newTestProvider(t, func(c *Config) { c.OutputTTL = time.Hour })
	old, err := p.conversationDirs("old-conv")
	if err != nil {
		t.Fatal(err)
	}
	stale := time.Now().Add(-2 * time.Hour)
	// Last used two hours ago, as the proxy records it.
	if err := os.WriteFile(filepath.Join(old.root, convMarker), []byte(strconv.FormatInt(stale.UnixNano(), 10)), 0o600); err != nil {
		t.Fatal(err)
	}
	// A marker an older version left empty: its mtime counts.
	legacy, err := p.conversationDirs("legacy-conv")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(legacy.root, convMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(filepath.Join(legacy.root, convMarker), stale, stale)
	// In use, but a script of another conversation (its user owns every
	// marker; Landlock does not restrict utimes) set the marker's mtime
	// back to have the sweeper remove it.
	used, err := p.conversationDirs("used-conv")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(filepath.Join(used.root, convMarker), stale, stale)
	foreign := filepath.Join(p.cfg.OutputRoot, "not-ours")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(foreign, stale, stale)
	// A --help-json scratch folder a stopped process left: removed once
	// older than any run; a fresh one (a run under way) is kept.
	leftHelp := filepath.Join(p.cfg.OutputRoot, helpPrefix+"123")
	freshHelp := filepath.Join(p.cfg.OutputRoot, helpPrefix+"456")
	for _, d := range []string{leftHelp, freshHelp} {
		if err := os.MkdirAll(filepath.Join(d, "out"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Chtimes(leftHelp, stale, stale)
	p.lastSweep.Store(0)
	if _, err := p.conversationDirs("new-conv"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old.root); !os.IsNotExist(err) {
		t.Error("stale conversation directory kept")
	}
	if _, err := os.Stat(legacy.root); !os.IsNotExist(err) {
		t.Error("stale conversation directory with an empty marker kept")
	}
	if _, err := os.Stat(used.root); err != nil {
		t.Error("a conversation directory in use removed: the sweeper went by a marker mtime a script can set")
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Error("a directory without the marker was removed")
	}
	if _, err := os.Stat(leftHelp); !os.IsNotExist(err) {
		t.Error("a --help-json leftover kept")
	}
	if _, err := os.Stat(freshHelp); err != nil {
		t.Error("a --help-json folder of a run under way removed")
	}
}

func lookPathOK(name string) (string, error) {
	return exec.LookPath(name)
}
