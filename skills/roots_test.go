package skills

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func paths(rs []Root) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Path
	}
	return out
}

func TestDefaultRoots(t *testing.T) {
	home, cfg, work := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	t.Chdir(work)

	if got := DefaultRoots(); len(got) != 0 {
		t.Fatalf("no folder exists, got %q", got)
	}
	mkdirs(t,
		filepath.Join(work, ".agents", "skills"),
		filepath.Join(home, ".claude", "skills"),
		filepath.Join(home, ".agents", "skills"),
		filepath.Join(cfg, "skillrouter", "skills"))
	writeFile(t, filepath.Join(home, ".codex", "skills"), "a file, not a folder")
	want := []string{
		filepath.Join(".agents", "skills"),
		filepath.Join(home, ".claude", "skills"),
		filepath.Join(home, ".agents", "skills"),
		filepath.Join(cfg, "skillrouter", "skills"),
	}
	if got := DefaultRoots(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultRoots() = %q, want %q", got, want)
	}

	// Run from $HOME: ./.claude/skills and ~/.claude/skills are one folder.
	t.Chdir(home)
	got := DefaultRoots()
	if want := []string{filepath.Join(".claude", "skills"), filepath.Join(".agents", "skills"), filepath.Join(cfg, "skillrouter", "skills")}; !reflect.DeepEqual(got, want) {
		t.Errorf("from $HOME: %q, want %q", got, want)
	}
}

func TestRootCandidates(t *testing.T) {
	home, repo := t.TempDir(), t.TempDir()
	sub := filepath.Join(repo, "a", "b")
	mkdirs(t, sub, filepath.Join(repo, ".git"))
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	got := paths(rootCandidates(sub, home, getenv))
	want := []string{
		filepath.Join(".claude", "skills"),
		filepath.Join(".agents", "skills"), // sub itself
		filepath.Join(repo, "a", ".agents", "skills"),
		filepath.Join(repo, ".agents", "skills"), // the repository root, and no further
		filepath.Join(home, ".claude", "skills"),
		filepath.Join(home, ".agents", "skills"),
		filepath.Join(home, ".codex", "skills"),
		filepath.Join(home, ".config", "skillrouter", "skills"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("candidates:\n got %q\nwant %q", got, want)
	}

	// Outside a repository only the working directory's .agents/skills.
	outside := t.TempDir()
	got = paths(rootCandidates(outside, home, getenv))
	if got[1] != filepath.Join(".agents", "skills") || got[2] != filepath.Join(home, ".claude", "skills") {
		t.Errorf("outside a repository: %q", got)
	}

	// CLAUDE_CONFIG_DIR, CODEX_HOME and a relative XDG_CONFIG_HOME.
	env["CLAUDE_CONFIG_DIR"] = "/cc"
	env["CODEX_HOME"] = "/cx"
	env["XDG_CONFIG_HOME"] = "relative/path"
	got = paths(rootCandidates(outside, home, getenv))
	for _, w := range []string{"/cc/skills", "/cx/skills", filepath.Join(home, ".config", "skillrouter", "skills")} {
		if !strings.Contains(strings.Join(got, "|"), w) {
			t.Errorf("candidates %q lack %s", got, w)
		}
	}
}

func TestClaudePluginRoots(t *testing.T) {
	claude, work, other := t.TempDir(), t.TempDir(), t.TempDir()
	cache := filepath.Join(claude, "plugins", "cache")
	user := filepath.Join(cache, "mkt", "docs", "1.0.0")
	proj := filepath.Join(cache, "mkt", "proj", "2.0.0")
	elsewhere := filepath.Join(cache, "mkt", "elsewhere", "1.0.0")
	off := filepath.Join(cache, "mkt", "off", "1.0.0")
	old := filepath.Join(cache, "old", "v1", "0.1.0")
	mkdirs(t, filepath.Join(user, "skills"), filepath.Join(user, "extra"), proj, elsewhere, off, old)
	writeFile(t, filepath.Join(user, ".claude-plugin", "plugin.json"), `{"name":"docs","skills":["./extra","../../../../../outside"]}`)
	writeFile(t, filepath.Join(proj, ".claude-plugin", "plugin.json"), `{"name":"proj","skills":"./custom"}`)
	writeFile(t, filepath.Join(claude, "settings.json"), `{"enabledPlugins":{"off@mkt":false,"docs@mkt":true}}`)
	installed := `{"version":2,"plugins":{
	  "docs@mkt":[{"scope":"user","installPath":"` + user + `","version":"1.0.0"}],
	  "proj@mkt":[{"scope":"project","projectPath":"` + work + `","installPath":"` + proj + `"}],
	  "elsewhere@mkt":[{"scope":"local","projectPath":"` + other + `","installPath":"` + elsewhere + `"}],
	  "off@mkt":[{"scope":"user","installPath":"` + off + `"}],
	  "v1@old":{"version":"0.1.0","installPath":"` + old + `"},
	  "broken@mkt":"nonsense"}}`
	writeFile(t, filepath.Join(claude, "plugins", "installed_plugins.json"), installed)

	got := claudePluginRoots(claude, filepath.Join(work, "src"))
	want := []Root{
		{filepath.Join(user, "skills"), "Claude Code plugin docs@mkt"},
		{filepath.Join(user, "extra"), "Claude Code plugin docs@mkt"},
		{filepath.Join(proj, "skills"), "Claude Code plugin proj@mkt"},
		{filepath.Join(proj, "custom"), "Claude Code plugin proj@mkt"},
		{filepath.Join(old, "skills"), "Claude Code plugin v1@old"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("plugin roots:\n got %v\nwant %v", got, want)
	}

	// No Claude Code, or a file that is not what we expect: nothing, silently.
	if got := claudePluginRoots(t.TempDir(), work); got != nil {
		t.Errorf("no file: %v", got)
	}
	writeFile(t, filepath.Join(claude, "plugins", "installed_plugins.json"), "{not json")
	if got := claudePluginRoots(claude, work); got != nil {
		t.Errorf("bad file: %v", got)
	}
}

// Run from a shared folder (/tmp), ./.claude/skills may be another user's:
// its skills would go into this user's prompts, and with script execution
// run as this user. DefaultRoots leaves it out; ForeignDefaultRoots names it.
func TestDefaultRootsLeaveOutAnotherUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a folder another user's needs root")
	}
	wd := t.TempDir()
	dir := filepath.Join(wd, ".claude", "skills")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	if got := DefaultRoots(); len(got) != 1 {
		t.Fatalf("own folder: DefaultRoots() = %v", got)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if got := DefaultRoots(); len(got) != 0 {
		t.Errorf("another user's folder read: DefaultRoots() = %v", got)
	}
	if got := ForeignDefaultRoots(); len(got) != 1 || !strings.HasSuffix(got[0], filepath.Join(".claude", "skills")) {
		t.Errorf("ForeignDefaultRoots() = %v", got)
	}
}
