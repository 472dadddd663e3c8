//go:build unix

package skills

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/skillrouter/skillrouter/internal/private/privatetest"
)

// TestLoadSpecialFiles: a FIFO named SKILL.md would block a naive reader
// forever; it and other non-files are reported, never opened.
func TestLoadSpecialFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo", SkillFile), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "dir", SkillFile), 0o755); err != nil {
		t.Fatal(err)
	}
	sk := filepath.Join(root, "ok")
	writeSkill(t, sk, "")
	if err := syscall.Mkfifo(filepath.Join(sk, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := Load(context.Background(), []string{root}, Options{})
	if got := ids(snap.Skills()); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Fatalf("loaded %q", got)
	}
	ps := snap.Problems()
	mustProblem(t, ps, SeverityError, "fifo/SKILL.md", "not a regular file")
	mustProblem(t, ps, SeverityError, "dir/SKILL.md", "is a directory, not a file")
	mustProblem(t, ps, SeverityWarning, "ok/pipe", "not a regular file")
}

// processCPU is the user+system CPU time of this process, so benchmarks can
// report work done independent of how busy the machine is.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestConventionalScanSkipsFoldersOthersControl: in a root found by
// convention, a folder on the way to a skill (the skill folder included)
// that another user owns or can write, or a link to such a folder, is
// skipped with a warning; given with --skills (Conventional false) it is
// read. Cases marked root make files another user's.
func TestConventionalScanSkipsFoldersOthersControl(t *testing.T) {
	for _, c := range []struct {
		name  string
		root  bool
		setup func(t *testing.T, lib, outside string) // plants the skill "evil" (or "ns/evil")
		id    string
		want  string // the warning at id's first folder; "" when it loads
	}{
		{"own skill folder", false, func(t *testing.T, lib, _ string) {
			writeSkill(t, filepath.Join(lib, "evil"), "")
		}, "evil", ""},
		{"skill folder every user can write", false, func(t *testing.T, lib, _ string) {
			writeSkill(t, filepath.Join(lib, "evil"), "")
			chmod(t, filepath.Join(lib, "evil"), 0o777)
		}, "evil", "evil is writable by other users (mode 0777)"},
		{"namespace folder every user can write (sticky)", false, func(t *testing.T, lib, _ string) {
			writeSkill(t, filepath.Join(lib, "ns", "evil"), "")
			chmod(t, filepath.Join(lib, "ns"), os.ModeSticky|0o777)
		}, "ns/evil", "ns is writable by other users (mode 1777)"},
		{"own link to a folder every user can write", false, func(t *testing.T, lib, outside string) {
			writeSkill(t, filepath.Join(outside, "shared", "evil"), "")
			chmod(t, filepath.Join(outside, "shared"), os.ModeSticky|0o777)
			symlink(t, filepath.Join(outside, "shared"), filepath.Join(lib, "ns"))
		}, "ns/evil", "shared is writable by other users (mode 1777)"},
		{"own link to an own folder", false, func(t *testing.T, lib, outside string) {
			writeSkill(t, filepath.Join(outside, "evil"), "")
			symlink(t, filepath.Join(outside, "evil"), filepath.Join(lib, "evil"))
		}, "evil", ""},
		{"skill folder another user's", true, func(t *testing.T, lib, _ string) {
			writeSkill(t, filepath.Join(lib, "evil"), "")
			chown(t, filepath.Join(lib, "evil"))
		}, "evil", "evil belongs to another user (uid 65534)"},
		{"namespace folder another user's", true, func(t *testing.T, lib, _ string) {
			writeSkill(t, filepath.Join(lib, "pl-evil", "evil"), "")
			chown(t, filepath.Join(lib, "pl-evil"))
		}, "pl-evil/evil", "pl-evil belongs to another user (uid 65534)"},
		{"another user's link to an own folder", true, func(t *testing.T, lib, outside string) {
			writeSkill(t, filepath.Join(outside, "evil"), "")
			symlink(t, filepath.Join(outside, "evil"), filepath.Join(lib, "evil"))
			chown(t, filepath.Join(lib, "evil"))
		}, "evil", "evil belongs to another user (uid 65534)"},
		{"root's skill folder", true, func(t *testing.T, lib, _ string) {
			writeSkill(t, filepath.Join(lib, "evil"), "")
			if err := os.Chown(filepath.Join(lib, "evil"), 0, 0); err != nil {
				t.Fatal(err)
			}
		}, "evil", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("making a file another user's needs root")
			}
			lib, outside := t.TempDir(), t.TempDir()
			skipUnlessSafe(t, outside) // links lead there
			writeSkill(t, filepath.Join(lib, "fine"), "")
			c.setup(t, lib, outside)
			both := []string{c.id, "fine"}
			slices.Sort(both)
			given := Load(context.Background(), []string{lib}, Options{})
			if got := ids(given.Skills()); !reflect.DeepEqual(got, both) {
				t.Fatalf("given root: loaded %q, want %q", got, both)
			}
			conv := Load(context.Background(), []string{lib}, Options{Conventional: []Root{{Path: lib, base: lib}}})
			got := ids(conv.Skills())
			if c.want == "" {
				if !reflect.DeepEqual(got, both) {
					t.Fatalf("conventional root: loaded %q, want %q", got, both)
				}
				return
			}
			if !reflect.DeepEqual(got, []string{"fine"}) {
				t.Fatalf("conventional root: loaded %q, want fine alone", got)
			}
			first, _, _ := strings.Cut(c.id, "/")
			mustProblem(t, conv.Problems(), SeverityWarning, first, c.want)
		})
	}
}

// TestConventionalScanChecksFromTheRootsBase: the folders below a default
// root are checked from where the root's convention starts, as the root
// is, so a relative link that climbs back into the project folder is read
// as ./.claude/skills -> ../shared-skills is, though the team folder above
// the project is writable by its group; a link that climbs out of the
// project, an absolute one, or one leading through a folder others can
// write is still refused. The skills come through DefaultRootCandidates,
// as serve's libraryOptions gives them.
func TestConventionalScanChecksFromTheRootsBase(t *testing.T) {
	for _, c := range []struct {
		name  string
		root  bool
		setup func(t *testing.T, team, proj string) // plants the skill "pdf" (or "ns/pdf")
		id    string
		want  string // the warning at id's first folder; "" when it loads
	}{
		{"link climbing back into the project", false, func(t *testing.T, _, proj string) {
			writeSkill(t, filepath.Join(proj, "shared-skills", "pdf"), "")
			symlink(t, filepath.Join("..", "..", "shared-skills", "pdf"), filepath.Join(proj, ".claude", "skills", "pdf"))
		}, "pdf", ""},
		{"namespace link climbing back into the project", false, func(t *testing.T, _, proj string) {
			writeSkill(t, filepath.Join(proj, "team-skills", "pdf"), "")
			symlink(t, filepath.Join("..", "..", "team-skills"), filepath.Join(proj, ".claude", "skills", "ns"))
		}, "ns/pdf", ""},
		{"link climbing out of the project into the team folder", false, func(t *testing.T, team, proj string) {
			writeSkill(t, filepath.Join(team, "shared", "pdf"), "")
			symlink(t, filepath.Join("..", "..", "..", "shared", "pdf"), filepath.Join(proj, ".claude", "skills", "pdf"))
		}, "pdf", "is writable by other users (mode 0775)"},
		{"absolute link into the project", false, func(t *testing.T, _, proj string) {
			writeSkill(t, filepath.Join(proj, "shared-skills", "pdf"), "")
			symlink(t, filepath.Join(proj, "shared-skills", "pdf"), filepath.Join(proj, ".claude", "skills", "pdf"))
		}, "pdf", "is writable by other users (mode 0775)"},
		{"link climbing into a project folder every user can write", false, func(t *testing.T, _, proj string) {
			writeSkill(t, filepath.Join(proj, "shared-skills", "pdf"), "")
			chmod(t, filepath.Join(proj, "shared-skills"), 0o777)
			symlink(t, filepath.Join("..", "..", "shared-skills", "pdf"), filepath.Join(proj, ".claude", "skills", "pdf"))
		}, "pdf", "shared-skills is writable by other users (mode 0777)"},
		{"another user's link climbing back into the project", true, func(t *testing.T, _, proj string) {
			writeSkill(t, filepath.Join(proj, "shared-skills", "pdf"), "")
			link := filepath.Join(proj, ".claude", "skills", "pdf")
			symlink(t, filepath.Join("..", "..", "shared-skills", "pdf"), link)
			if err := os.Lchown(link, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "pdf", "pdf belongs to another user (uid 65534)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("making a file another user's needs root")
			}
			team := filepath.Join(t.TempDir(), "team")
			proj := filepath.Join(team, "proj")
			mkdirs(t, filepath.Join(proj, ".claude", "skills"))
			skipUnlessSafe(t, filepath.Dir(team))
			chmod(t, team, 0o775)
			privatetest.ShareGroup(t, team)
			t.Chdir(proj)
			t.Setenv("HOME", t.TempDir())
			t.Setenv("XDG_CONFIG_HOME", "")
			t.Setenv("CLAUDE_CONFIG_DIR", "")
			t.Setenv("CODEX_HOME", "")
			writeSkill(t, filepath.Join(proj, ".claude", "skills", "fine"), "")
			c.setup(t, team, proj)

			roots, refused := DefaultRoots()
			want := []string{filepath.Join(".claude", "skills")}
			if !reflect.DeepEqual(roots, want) || len(refused) != 0 {
				t.Fatalf("DefaultRoots() = %q, refused %v; want %q", roots, refused, want)
			}
			snap := Load(context.Background(), roots, Options{Conventional: DefaultRootCandidates()})
			got := ids(snap.Skills())
			if c.want == "" {
				both := []string{c.id, "fine"}
				slices.Sort(both)
				if !reflect.DeepEqual(got, both) {
					t.Fatalf("loaded %q, want %q; problems:\n%s", got, both, problemList(snap.Problems()))
				}
				return
			}
			if !reflect.DeepEqual(got, []string{"fine"}) {
				t.Fatalf("loaded %q, want fine alone", got)
			}
			first, _, _ := strings.Cut(c.id, "/")
			mustProblem(t, snap.Problems(), SeverityWarning, filepath.Join(".claude", "skills", first), c.want)
		})
	}
}

// TestConventionalScanChecksSkillFiles: in a root found by convention, a
// skill with a file or folder inside (SKILL.md, a script, a reference, a
// resource folder) that another user owns or can write, a link there of
// another user's or leading through a folder others can write, or a tree
// nesting deeper than the scan checks, is not loaded: a warning at that
// path names it and the fix. Given with --skills, it loads. Cases marked
// root make files another user's.
func TestConventionalScanChecksSkillFiles(t *testing.T) {
	for _, c := range []struct {
		name  string
		root  bool
		setup func(t *testing.T, sk, outside string) // changes the skill "evil" at sk
		at    string                                 // the warning's path below sk; "" when it loads
		want  string                                 // in the warning
	}{
		{"own files", false, func(t *testing.T, sk, outside string) {
			symlink(t, "run.py", filepath.Join(sk, "scripts", "main.py"))
		}, "", ""},
		{"script folder every user can write", false, func(t *testing.T, sk, _ string) {
			chmod(t, filepath.Join(sk, "scripts"), 0o777)
		}, "scripts", "scripts is writable by other users (mode 0777); a skill found by convention"},
		{"sticky script folder every user can write", false, func(t *testing.T, sk, _ string) {
			chmod(t, filepath.Join(sk, "scripts"), os.ModeSticky|0o777)
		}, "scripts", "scripts is writable by other users (mode 1777)"},
		{"script every user can write", false, func(t *testing.T, sk, _ string) {
			chmod(t, filepath.Join(sk, "scripts", "run.py"), 0o666)
		}, "scripts/run.py", "run.py is writable by other users (mode 0666)"},
		{"reference its group can write", false, func(t *testing.T, sk, _ string) {
			chmod(t, filepath.Join(sk, "references", "guide.md"), 0o664)
			privatetest.ShareGroup(t, filepath.Join(sk, "references", "guide.md"))
		}, "references/guide.md", "guide.md is writable by other users (mode 0664)"},
		{"SKILL.md every user can write", false, func(t *testing.T, sk, _ string) {
			chmod(t, filepath.Join(sk, SkillFile), 0o666)
		}, SkillFile, "SKILL.md is writable by other users (mode 0666)"},
		{"own link to a script in a folder every user can write", false, func(t *testing.T, sk, outside string) {
			writeFile(t, filepath.Join(outside, "shared", "run.py"), "print(1)\n")
			chmod(t, filepath.Join(outside, "shared"), 0o777)
			symlink(t, filepath.Join(outside, "shared", "run.py"), filepath.Join(sk, "scripts", "main.py"))
		}, "scripts/main.py", "shared is writable by other users (mode 0777)"},
		{"folders nesting deeper than the check", false, func(t *testing.T, sk, _ string) {
			writeFile(t, filepath.Join(sk, "assets", strings.Repeat("d/", maxDepth+1), "x.txt"), "x\n")
		}, "assets/" + strings.TrimSuffix(strings.Repeat("d/", maxDepth), "/"), "deeper than the check goes"},
		{"bytecode folder every user can write", false, func(t *testing.T, sk, _ string) {
			writeFile(t, filepath.Join(sk, "scripts", "__pycache__", "run.cpython-312.pyc"), "x")
			chmod(t, filepath.Join(sk, "scripts", "__pycache__"), 0o777)
		}, "scripts/__pycache__", "__pycache__ is writable by other users (mode 0777)"},
		{"bytecode every user can write", false, func(t *testing.T, sk, _ string) {
			writeFile(t, filepath.Join(sk, "scripts", "__pycache__", "run.cpython-312.pyc"), "x")
			chmod(t, filepath.Join(sk, "scripts", "__pycache__", "run.cpython-312.pyc"), 0o666)
		}, "scripts/__pycache__/run.cpython-312.pyc", "run.cpython-312.pyc is writable by other users (mode 0666)"},
		{"a module every user can write", false, func(t *testing.T, sk, _ string) {
			writeFile(t, filepath.Join(sk, "scripts", "node_modules", "lib", "index.js"), "x")
			chmod(t, filepath.Join(sk, "scripts", "node_modules", "lib", "index.js"), 0o666)
		}, "scripts/node_modules/lib/index.js", "index.js is writable by other users (mode 0666)"},
		{"a hidden settings file every user can write", false, func(t *testing.T, sk, _ string) {
			writeFile(t, filepath.Join(sk, ".env"), "X=1\n")
			chmod(t, filepath.Join(sk, ".env"), 0o666)
		}, ".env", ".env is writable by other users (mode 0666)"},
		{"own bytecode, modules and hidden files", false, func(t *testing.T, sk, _ string) {
			writeFile(t, filepath.Join(sk, "scripts", "__pycache__", "run.cpython-312.pyc"), "x")
			writeFile(t, filepath.Join(sk, "scripts", "node_modules", "lib", "index.js"), "x")
			writeFile(t, filepath.Join(sk, ".git", "objects", "ab", "cdef"), "x")
		}, "", ""},
		{"another user's script", true, func(t *testing.T, sk, _ string) {
			chown(t, filepath.Join(sk, "scripts", "run.py"))
		}, "scripts/run.py", "run.py belongs to another user (uid 65534)"},
		{"another user's link to an own script", true, func(t *testing.T, sk, _ string) {
			link := filepath.Join(sk, "scripts", "main.py")
			symlink(t, "run.py", link)
			chown(t, link)
		}, "scripts/main.py", "main.py belongs to another user (uid 65534)"},
		{"root's script", true, func(t *testing.T, sk, _ string) {
			if err := os.Lchown(filepath.Join(sk, "scripts", "run.py"), 0, 0); err != nil {
				t.Fatal(err)
			}
		}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("making a file another user's needs root")
			}
			lib, outside := t.TempDir(), t.TempDir()
			skipUnlessSafe(t, outside) // links lead there
			writeSkill(t, filepath.Join(lib, "fine"), "")
			sk := filepath.Join(lib, "evil")
			writeSkill(t, sk, "")
			writeFile(t, filepath.Join(sk, "scripts", "run.py"), "print(1)\n")
			writeFile(t, filepath.Join(sk, "references", "guide.md"), "# Guide\n")
			c.setup(t, sk, outside)

			given := Load(context.Background(), []string{lib}, Options{})
			if got := ids(given.Skills()); !reflect.DeepEqual(got, []string{"evil", "fine"}) {
				t.Fatalf("given root: loaded %q; problems:\n%s", got, problemList(given.Problems()))
			}
			conv := Load(context.Background(), []string{lib}, Options{Conventional: []Root{{Path: lib, base: lib}}})
			got := ids(conv.Skills())
			if c.at == "" {
				if !reflect.DeepEqual(got, []string{"evil", "fine"}) {
					t.Fatalf("conventional root: loaded %q; problems:\n%s", got, problemList(conv.Problems()))
				}
				return
			}
			if !reflect.DeepEqual(got, []string{"fine"}) || len(conv.All()) != 1 {
				t.Fatalf("conventional root: loaded %q (all %q), want fine alone", got, ids(conv.All()))
			}
			p := mustProblem(t, conv.LibraryProblems(), SeverityWarning, filepath.Join("evil", filepath.FromSlash(c.at)), c.want)
			if !strings.Contains(p.Message, `the skill "evil" is not loaded`) || !strings.Contains(p.Message, "--skills") {
				t.Errorf("warning: %s", p)
			}
			if strings.Contains(c.want, "writable") && !strings.HasSuffix(c.at, "main.py") && !strings.Contains(p.Message, "chmod go-w "+p.Path) {
				t.Errorf("no chmod fix in: %s", p)
			}
		})
	}
}

// A refused skill keeps its id, as a skill with errors does: the copy of a
// later root is not loaded either, and the warning says so.
func TestConventionalRefusedSkillKeepsItsID(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	writeSkill(t, filepath.Join(first, "pdf"), "")
	writeFile(t, filepath.Join(first, "pdf", "scripts", "run.py"), "print(1)\n")
	if err := os.Chmod(filepath.Join(first, "pdf", "scripts", "run.py"), 0o666); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, filepath.Join(second, "pdf"), "")
	snap := Load(context.Background(), []string{first, second}, Options{Conventional: []Root{{Path: first, base: first}, {Path: second, base: second}}})
	if got := ids(snap.All()); len(got) != 0 {
		t.Fatalf("loaded %q", got)
	}
	mustProblem(t, snap.Problems(), SeverityWarning, filepath.Join("pdf", "scripts", "run.py"),
		"so "+filepath.Join(second, "pdf", SkillFile)+" is not loaded either")
}

// TestRegistryWatchConventionalFileMode: in a library found by convention a
// script's mode decides whether its skill is read, so a watched library
// drops the skill when the script is made writable by everyone, and loads
// it again when that is undone, with no other change.
func TestRegistryWatchConventionalFileMode(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "pdf"), "")
	script := writeFile(t, filepath.Join(root, "pdf", "scripts", "run.py"), "print(1)\n")
	r := NewRegistry([]string{root}, Options{Conventional: []Root{{Path: root, base: root}}})
	r.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	loaded := func() bool { _, ok := r.Snapshot().Get("pdf"); return ok }
	if !loaded() {
		t.Fatal("the skill did not load")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, 20*time.Millisecond) }()
	defer func() { cancel(); <-done }()
	retry(t, "a skill whose script every user can write to be dropped", func() { _ = os.Chmod(script, 0o666) }, func() bool { return !loaded() })
	retry(t, "the skill to load again", func() { _ = os.Chmod(script, 0o644) }, loaded)
}

// chmod sets p's mode or fails the test.
func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// chown makes p (not what it links to) nobody's (uid and gid 65534), or
// fails the test; it needs root.
func chown(t *testing.T, p string) {
	t.Helper()
	if err := os.Lchown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}
