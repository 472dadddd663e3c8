package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// fixtureSkill points a Skill at a folder under testdata/skills, in place.
func fixtureSkill(t testing.TB, id string) *skills.Skill {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "skills", id))
	if err != nil {
		t.Fatal(err)
	}
	return skillAt(id, dir)
}

// scriptSkill writes a skill named name under a temporary root with one
// script, scripts/file, holding body, and returns it.
func scriptSkill(t *testing.T, name, file, body string) *skills.Skill {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "skills", name)
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: d\n---\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", file), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return skillAt(name, dir)
}

func skillAt(id, dir string) *skills.Skill {
	typ := skills.TypeContextual
	if b, err := os.ReadFile(filepath.Join(dir, "SKILL.md")); err == nil && bytes.Contains(b, []byte("\ntype: executable")) {
		typ = skills.TypeExecutable
	}
	return &skills.Skill{
		ID: id, Name: filepath.Base(id), Dir: dir, Root: filepath.Dir(dir),
		Path: filepath.Join(dir, "SKILL.md"), Type: typ,
	}
}

// copySkill copies a fixture into a temporary folder (modes kept), for tests
// that add symlinks or let a script attempt writes.
func copySkill(t testing.TB, id string) *skills.Skill {
	t.Helper()
	src := fixtureSkill(t, id).Dir
	dst := filepath.Join(t.TempDir(), "skills", id)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return skillAt(id, dst)
}

// syncBuffer is a goroutine-safe log sink that reads back JSON records.
type syncBuffer struct{ syncbuf.Buffer }

// records returns the JSON log records with the given message.
func (b *syncBuffer) records(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) == nil && r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// newTestProvider builds an enabled Provider with an output root in a temp
// dir, a generous timeout and a JSON log captured for assertions.
func newTestProvider(t testing.TB, mutate func(*Config)) (*Provider, *syncBuffer) {
	t.Helper()
	cfg := Config{Enabled: true, OutputRoot: filepath.Join(t.TempDir(), "out"), Timeout: 20 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	logs := &syncBuffer{}
	p, err := New(cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return p, logs
}

func requireProgram(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed", name)
	}
}

func toolNamed(t testing.TB, tools []router.Tool, name string) router.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

func callTool(t testing.TB, tool router.Tool, conv string, args any) string {
	t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	out, err := tool.Call(context.Background(), router.ToolCall{Conversation: conv, Arguments: json.RawMessage(raw)})
	if err != nil {
		t.Fatalf("Call returned an error (want structured results only): %v", err)
	}
	if !json.Valid([]byte(out)) {
		t.Fatalf("result is not JSON: %s", out)
	}
	return out
}

// execute runs skill_execute for one skill as the only active skill.
func execute(t testing.TB, p *Provider, s *skills.Skill, conv, command string, args ...string) execResult {
	t.Helper()
	out := callTool(t, toolNamed(t, p.Tools(context.Background(), []*skills.Skill{s}), ToolExecute), conv,
		map[string]any{"skill_id": s.ID, "command": command, "args": args})
	var res execResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Command == "" {
		t.Fatalf("skill_execute %s: not an execution result: %s", command, out)
	}
	return res
}

// failureOf decodes a structured refusal, failing the test for anything else.
func failureOf(t testing.TB, out string) *toolError {
	t.Helper()
	var f failure
	if err := json.Unmarshal([]byte(out), &f); err != nil || f.OK || f.Error == nil || f.Error.Code == "" {
		t.Fatalf("want a structured failure, got %s", out)
	}
	return f.Error
}

// readPID reads a pid file a script wrote into the output directory.
func readPID(t testing.TB, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("pid file %s: %q", name, b)
	}
	return pid
}

// processGone reports whether pid no longer runs (absent or a zombie
// awaiting an unrelated reaper).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] == 'Z' || b[i+2] == 'X'
	}
	return false
}

// assertGone fails unless pid disappears within a generous bound (killing is
// asynchronous; this is not a performance assertion). A survivor is killed
// so a failing test leaves nothing behind.
func assertGone(t testing.TB, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d) is still running", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// treeState fingerprints a folder (paths, sizes, modes, mtimes).
func treeState(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + info.Mode().String() + " " + strconv.FormatInt(info.Size(), 10) + " " + info.ModTime().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
