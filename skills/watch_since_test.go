//go:build unix

package skills

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/goleak"
)

// TestWatchSeesChangesBeforeIt: Watch may start long after the library was
// loaded (a server starts it once the index is built). Whatever changed in
// between reached no watch; it is loaded when watching starts, with no
// further change to the library.
func TestWatchSeesChangesBeforeIt(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cases := []struct {
		name   string
		change func(t *testing.T, root string)
		loaded func(s *Snapshot) bool
	}{
		{"a skill edited", func(t *testing.T, root string) { writeSkill(t, filepath.Join(root, "one"), "edited") },
			func(s *Snapshot) bool { sk, ok := s.Get("one"); return ok && sk.Body() == "edited" }},
		{"a skill edited, its old time put back (cp -p, tar, rsync -a)", func(t *testing.T, root string) {
			if runtime.GOOS != "linux" {
				t.Skip("the change time is read on Linux only")
			}
			p := filepath.Join(root, "one", SkillFile)
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			writeSkill(t, filepath.Join(root, "one"), "edited")
			if err := os.Chtimes(p, info.ModTime(), info.ModTime().Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, func(s *Snapshot) bool { sk, ok := s.Get("one"); return ok && sk.Body() == "edited" }},
		{"a skill added", func(t *testing.T, root string) { writeSkill(t, filepath.Join(root, "deep", "three"), "") },
			func(s *Snapshot) bool { _, ok := s.Get("deep/three"); return ok }},
		{"a skill removed", func(t *testing.T, root string) {
			if err := os.RemoveAll(filepath.Join(root, "two")); err != nil {
				t.Fatal(err)
			}
		}, func(s *Snapshot) bool { _, ok := s.Get("two"); return !ok }},
		{"a resource written", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "one", "scripts", "run.sh"), "echo longer than before\n")
		}, func(s *Snapshot) bool {
			sk, ok := s.Get("one")
			return ok && len(sk.Resources) == 1 && sk.Resources[0].Size == int64(len("echo longer than before\n"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeSkill(t, filepath.Join(root, "one"), "")
			writeSkill(t, filepath.Join(root, "two"), "")
			writeFile(t, filepath.Join(root, "one", "scripts", "run.sh"), "echo\n")
			r := quietRegistry([]string{root})
			c.change(t, root)
			if c.loaded(r.Snapshot()) {
				t.Fatal("the change is in the snapshot already")
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Watch(ctx, 20*time.Millisecond) }()
			eventually(t, "the change to be loaded", func() bool { return c.loaded(r.Snapshot()) })
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAddWatchesChangedSince: the first watch of a folder reports a change
// made in it after the scan began (files, entries, modes), and nothing else:
// not a folder untouched since, not a hidden file the scan skips, and not a
// folder watched already (its events were seen).
func TestAddWatchesChangedSince(t *testing.T) {
	cases := []struct {
		name      string
		linuxOnly bool // the change time is read on Linux only
		change    func(t *testing.T, root string)
		want      bool
	}{
		{"nothing", false, func(*testing.T, string) {}, false},
		{"a file in a hidden folder written", false, func(t *testing.T, root string) { writeFile(t, filepath.Join(root, "one", ".git", "HEAD"), "new") }, false},
		{"SKILL.md written", false, func(t *testing.T, root string) { writeSkill(t, filepath.Join(root, "one"), "edited") }, true},
		{"a nested resource written", false, func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "one", "references", "a.md"), "more")
		}, true},
		{"a skill folder added", false, func(t *testing.T, root string) { writeSkill(t, filepath.Join(root, "new"), "") }, true},
		{"a skill folder removed", true, func(t *testing.T, root string) {
			if err := os.RemoveAll(filepath.Join(root, "one")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"SKILL.md's mode changed", true, func(t *testing.T, root string) {
			if err := os.Chmod(filepath.Join(root, "one", SkillFile), 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.linuxOnly && runtime.GOOS != "linux" {
				t.Skip("the change time is read on Linux only")
			}
			root := t.TempDir()
			writeSkill(t, filepath.Join(root, "one"), "")
			writeFile(t, filepath.Join(root, "one", "references", "a.md"), "a")
			writeFile(t, filepath.Join(root, "one", ".git", "HEAD"), "old")
			scanned := time.Now()
			// Change times come from the kernel's coarse clock, up to a
			// tick behind time.Now.
			time.Sleep(50 * time.Millisecond)
			c.change(t, root)
			w, err := fsnotify.NewWatcher()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			r := quietRegistry([]string{root})
			ws := newWatchState(w)
			// scanned less changeSlack is what addWatches compares with.
			if got := r.addWatches(ws, []string{root}, scanned.Add(changeSlack)); got != c.want {
				t.Errorf("first watch: reload = %v, want %v", got, c.want)
			}
			// Watched already: its changes from now on are events.
			if r.addWatches(ws, []string{root}, scanned.Add(changeSlack)) {
				t.Error("folders watched already were checked again")
			}
		})
	}
}
