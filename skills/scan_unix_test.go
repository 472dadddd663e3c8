//go:build unix

package skills

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

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
	const other = 65534
	chmod := func(t *testing.T, p string, mode os.FileMode) {
		t.Helper()
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	chown := func(t *testing.T, p string) {
		t.Helper()
		if err := os.Lchown(p, other, other); err != nil {
			t.Fatal(err)
		}
	}
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
	chmod := func(t *testing.T, p string, mode os.FileMode) {
		t.Helper()
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
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
