package skills

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/internal/private"
	"github.com/skillrouter/skillrouter/internal/private/privatetest"
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

	if got, _ := DefaultRoots(); len(got) != 0 {
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
	if got, _ := DefaultRoots(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultRoots() = %q, want %q", got, want)
	}

	// Run from $HOME: ./.claude/skills and ~/.claude/skills are one folder.
	t.Chdir(home)
	got, _ := DefaultRoots()
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
		{Path: filepath.Join(user, "skills"), Source: "Claude Code plugin docs@mkt"},
		{Path: filepath.Join(user, "extra"), Source: "Claude Code plugin docs@mkt"},
		{Path: filepath.Join(proj, "skills"), Source: "Claude Code plugin proj@mkt"},
		{Path: filepath.Join(proj, "custom"), Source: "Claude Code plugin proj@mkt"},
		{Path: filepath.Join(old, "skills"), Source: "Claude Code plugin v1@old"},
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
// run as this user. CheckDefaultRoots refuses it, and every way around the
// owner's test: another user's symlink (to a folder root owns, such as
// /var/tmp, or to /, which would be scanned whole), a folder every user can
// write, a .claude (the folder on the way) another user owns or can write.
// Cases marked root make files another user's and are skipped when not root.
func TestCheckDefaultRoots(t *testing.T) {
	const other = 65534
	mk := func(t *testing.T, p string, mode os.FileMode) {
		t.Helper()
		mkdirs(t, p)
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	own := func(t *testing.T, p string, uid int) {
		t.Helper()
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		root  bool
		setup func(t *testing.T, wd, outside string)
		want  string // why ./.claude/skills is refused; "" when it is read
	}{
		{"own folder", false, func(t *testing.T, wd, _ string) {
			mk(t, filepath.Join(wd, ".claude", "skills"), 0o755)
		}, ""},
		{"own folder every user can write (1777)", false, func(t *testing.T, wd, _ string) {
			mk(t, filepath.Join(wd, ".claude", "skills"), os.ModeSticky|0o777)
		}, "skills is writable by other users (mode 1777)"},
		{"own folder its group can write", false, func(t *testing.T, wd, _ string) {
			mk(t, filepath.Join(wd, ".claude", "skills"), 0o775)
			privatetest.ShareGroup(t, filepath.Join(wd, ".claude", "skills"))
		}, "skills is writable by other users (mode 0775)"},
		{".claude every user can write: skills can be swapped", false, func(t *testing.T, wd, _ string) {
			mk(t, filepath.Join(wd, ".claude", "skills"), 0o755)
			mk(t, filepath.Join(wd, ".claude"), 0o777)
		}, ".claude is writable by other users"},
		{"own link to a folder every user can write (/var/tmp)", false, func(t *testing.T, wd, outside string) {
			shared := filepath.Join(outside, "vartmp")
			mk(t, shared, os.ModeSticky|0o777)
			mk(t, filepath.Join(wd, ".claude"), 0o755)
			if err := os.Symlink(shared, filepath.Join(wd, ".claude", "skills")); err != nil {
				t.Fatal(err)
			}
		}, "vartmp is writable by other users (mode 1777)"},
		{"own link to an own folder", false, func(t *testing.T, wd, outside string) {
			lib := filepath.Join(outside, "lib")
			mk(t, lib, 0o755)
			mk(t, filepath.Join(wd, ".claude"), 0o755)
			if err := os.Symlink(lib, filepath.Join(wd, ".claude", "skills")); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"another user's folder", true, func(t *testing.T, wd, _ string) {
			mk(t, filepath.Join(wd, ".claude", "skills"), 0o755)
			own(t, filepath.Join(wd, ".claude", "skills"), other)
		}, "skills belongs to another user (uid 65534)"},
		{"another user's link to a root-owned 1777 folder", true, func(t *testing.T, wd, outside string) {
			shared := filepath.Join(outside, "vartmp")
			mk(t, shared, os.ModeSticky|0o777)
			mk(t, filepath.Join(shared, "pl-evil", "evil"), 0o755)
			mk(t, filepath.Join(wd, ".claude"), 0o755)
			link := filepath.Join(wd, ".claude", "skills")
			if err := os.Symlink(shared, link); err != nil {
				t.Fatal(err)
			}
			own(t, link, other)
		}, "skills belongs to another user (uid 65534)"},
		{"another user's link to /", true, func(t *testing.T, wd, _ string) {
			mk(t, filepath.Join(wd, ".claude"), 0o755)
			link := filepath.Join(wd, ".claude", "skills")
			if err := os.Symlink("/", link); err != nil {
				t.Fatal(err)
			}
			own(t, link, other)
		}, "skills belongs to another user (uid 65534)"},
		{"own folder in another user's .claude", true, func(t *testing.T, wd, _ string) {
			mk(t, filepath.Join(wd, ".claude", "skills"), 0o755)
			own(t, filepath.Join(wd, ".claude"), other)
		}, ".claude belongs to another user (uid 65534)"},
		{"own folders in another user's project folder", true, func(t *testing.T, wd, _ string) {
			mk(t, filepath.Join(wd, ".claude", "skills"), 0o755)
			own(t, wd, other)
		}, "belongs to another user (uid 65534)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("making a file another user's needs root")
			}
			wd, outside := t.TempDir(), t.TempDir()
			skipUnlessSafe(t, outside) // links lead there
			t.Chdir(wd)
			t.Setenv("HOME", t.TempDir())
			t.Setenv("XDG_CONFIG_HOME", "")
			t.Setenv("CLAUDE_CONFIG_DIR", "")
			t.Setenv("CODEX_HOME", "")
			c.setup(t, wd, outside)
			checked := CheckDefaultRoots()
			project := checked[0]
			if project.Path != filepath.Join(".claude", "skills") || project.Err != nil {
				t.Fatalf("first candidate: %+v", project)
			}
			read, _ := DefaultRoots()
			if c.want == "" {
				if project.Refused != nil || len(read) != 1 || read[0] != project.Path {
					t.Fatalf("refused: %v; DefaultRoots() = %q", project.Refused, read)
				}
				return
			}
			if project.Refused == nil || !strings.Contains(project.Refused.Error(), c.want) {
				t.Fatalf("Refused = %v, want %q", project.Refused, c.want)
			}
			if project.Read() || len(read) != 0 {
				t.Fatalf("read anyway: DefaultRoots() = %q", read)
			}
		})
	}
}

// skipUnlessSafe skips a test whose links lead into dir when dir's own path
// does not pass private.CheckPath from / (TMPDIR below a folder others can
// write): they would be refused for that.
func skipUnlessSafe(t *testing.T, dir string) {
	t.Helper()
	if err := private.CheckPath("/", dir); err != nil {
		t.Skipf("the temp folder's path does not pass: %v", err)
	}
}

// A refused name of a folder hides no other name of it: another user's link
// to this user's own ~/.claude/skills leaves that read under its own name.
func TestRefusedRootHidesNoOther(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a file another user's needs root")
	}
	wd, home := t.TempDir(), t.TempDir()
	t.Chdir(wd)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	mine := filepath.Join(home, ".claude", "skills")
	mkdirs(t, mine, filepath.Join(wd, ".claude"))
	link := filepath.Join(wd, ".claude", "skills")
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if got, _ := DefaultRoots(); !reflect.DeepEqual(got, []string{mine}) {
		t.Errorf("DefaultRoots() = %q, want %q", got, mine)
	}
}
