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
			conv := Load(context.Background(), []string{lib}, Options{Conventional: true})
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
