//go:build unix

package skills

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/goleak"

	"github.com/skillrouter/skillrouter/internal/syncbuf"
)

// swapLink points link at target the way git-sync and the kubelet do: a new
// link renamed over the old one.
func swapLink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".tmp"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// TestWatchSeesChangesBeforeIt: Watch may start long after the library was
// loaded (a server starts it once the index is built). Whatever changed in
// between reached no watch; it is loaded when watching starts, with no
// further change to the library.
func TestWatchSeesChangesBeforeIt(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// plain is a root with skills one (a script in it) and two.
	plain := func(t *testing.T, dir string) []string {
		root := filepath.Join(dir, "lib")
		writeSkill(t, filepath.Join(root, "one"), "")
		writeSkill(t, filepath.Join(root, "two"), "")
		writeFile(t, filepath.Join(root, "one", "scripts", "run.sh"), "echo\n")
		return []string{root}
	}
	// linked are roots reached through links in one folder, a -> va and
	// b -> vb, beside an older folder v0 holding skill "old".
	linked := func(t *testing.T, dir string) []string {
		writeSkill(t, filepath.Join(dir, "v0", "old"), "")
		writeSkill(t, filepath.Join(dir, "va", "one"), "")
		writeSkill(t, filepath.Join(dir, "vb", "two"), "")
		symlink(t, "va", filepath.Join(dir, "a"))
		symlink(t, "vb", filepath.Join(dir, "b"))
		return []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	}
	has := func(id string) func(*Snapshot) bool {
		return func(s *Snapshot) bool { _, ok := s.Get(id); return ok }
	}
	lacks := func(id string) func(*Snapshot) bool {
		return func(s *Snapshot) bool { _, ok := s.Get(id); return !ok }
	}
	cases := []struct {
		name   string
		setup  func(t *testing.T, dir string) []string
		change func(t *testing.T, dir string)
		loaded func(s *Snapshot) bool
	}{
		{"a skill edited", plain, func(t *testing.T, dir string) { writeSkill(t, filepath.Join(dir, "lib", "one"), "edited") },
			func(s *Snapshot) bool { sk, ok := s.Get("one"); return ok && sk.Body() == "edited" }},
		{"a skill edited, its old time put back (cp -p, tar, rsync -a)", plain, func(t *testing.T, dir string) {
			if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
				t.Skip("the change time is read on Linux and macOS only")
			}
			p := filepath.Join(dir, "lib", "one", SkillFile)
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			writeSkill(t, filepath.Join(dir, "lib", "one"), "edited")
			if err := os.Chtimes(p, info.ModTime(), info.ModTime().Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, func(s *Snapshot) bool { sk, ok := s.Get("one"); return ok && sk.Body() == "edited" }},
		{"a skill added", plain, func(t *testing.T, dir string) { writeSkill(t, filepath.Join(dir, "lib", "deep", "three"), "") },
			has("deep/three")},
		{"a skill removed", plain, func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "lib", "two")); err != nil {
				t.Fatal(err)
			}
		}, lacks("two")},
		{"a resource written", plain, func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "lib", "one", "scripts", "run.sh"), "echo longer than before\n")
		}, func(s *Snapshot) bool {
			sk, ok := s.Get("one")
			return ok && len(sk.Resources) == 1 && sk.Resources[0].Size == int64(len("echo longer than before\n"))
		}},
		{"a root removed", func(t *testing.T, dir string) []string {
			writeSkill(t, filepath.Join(dir, "second", "three"), "")
			return append(plain(t, dir), filepath.Join(dir, "second"))
		}, func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "second")); err != nil {
				t.Fatal(err)
			}
		}, lacks("three")},
		{"a skill removed beside a missing root (its parent watched first)", func(t *testing.T, dir string) []string {
			return append([]string{filepath.Join(dir, "lib", "extra")}, plain(t, dir)...)
		}, func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "lib", "two")); err != nil {
				t.Fatal(err)
			}
		}, lacks("two")},
		{"a root's link swapped to an older folder", linked, func(t *testing.T, dir string) {
			swapLink(t, "v0", filepath.Join(dir, "a"))
		}, has("old")},
		{"the second link in a folder swapped to an older folder", linked, func(t *testing.T, dir string) {
			swapLink(t, "v0", filepath.Join(dir, "b"))
		}, has("old")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			roots := c.setup(t, dir)
			skipWholeSeconds(t, dir)
			// Past the stamps' slack: only the change can be seen as one.
			time.Sleep(150 * time.Millisecond)
			r := quietRegistry(roots)
			c.change(t, dir)
			if c.loaded(r.Snapshot()) {
				t.Fatal("the change is in the snapshot already")
			}
			stop := watching(t, r, 20*time.Millisecond)
			eventually(t, "the change to be loaded", func() bool { return c.loaded(r.Snapshot()) })
			stop()
		})
	}
}

// TestWatchUnchangedLibraryNotReloaded: a library untouched since it was
// read is not reloaded when watching starts; the first edit after that is
// one reload.
func TestWatchUnchangedLibraryNotReloaded(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "one"), "")
	writeFile(t, filepath.Join(root, "one", "references", "a.md"), "a")
	skipWholeSeconds(t, filepath.Join(root, "one", SkillFile))
	time.Sleep(200 * time.Millisecond) // past the stamps' slack (changeSlack)
	r := quietRegistry([]string{root})
	var reloads atomic.Int64
	r.OnReload(func(*Snapshot) { reloads.Add(1) })
	stop := watching(t, r, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // a start-up reload, were there one, would be over
	writeSkill(t, filepath.Join(root, "one"), "edited")
	eventually(t, "the edit to be loaded", func() bool { sk, ok := r.Snapshot().Get("one"); return ok && sk.Body() == "edited" })
	time.Sleep(100 * time.Millisecond)
	stop()
	if n := reloads.Load(); n != 1 {
		t.Errorf("%d reloads, want 1 (the edit's)", n)
	}
}

// skipWholeSeconds skips a test that needs sub-second time stamps where the
// file system keeps whole seconds (their slack is then two seconds).
func skipWholeSeconds(t *testing.T, path string) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.ModTime().Nanosecond() == 0 {
		t.Skip("the file system keeps whole seconds")
	}
}

// TestAddWatchesChangedSince: the first watch of a folder reports a change
// made in it after the scan began (files, entries, modes), and nothing else:
// not a folder untouched since, not a file in a hidden folder the scan
// skips, and not a folder watched already (its events were seen).
func TestAddWatchesChangedSince(t *testing.T) {
	cases := []struct {
		name      string
		linuxOnly bool // the change time is read on Linux and macOS only
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
			if c.linuxOnly && runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
				t.Skip("the change time is read on Linux and macOS only")
			}
			root := t.TempDir()
			writeSkill(t, filepath.Join(root, "one"), "")
			writeFile(t, filepath.Join(root, "one", "references", "a.md"), "a")
			writeFile(t, filepath.Join(root, "one", ".git", "HEAD"), "old")
			skipWholeSeconds(t, filepath.Join(root, "one", SkillFile))
			// Past the stamps' slack on either side of the scan's start.
			time.Sleep(200 * time.Millisecond)
			scanned := time.Now()
			time.Sleep(100 * time.Millisecond)
			c.change(t, root)
			w := testWatcher(t)
			r := quietRegistry([]string{root})
			ws := newWatchState(w)
			if got := r.addWatches(ws, []string{root}, scanned); got != c.want {
				t.Errorf("first watch: reload = %v, want %v", got, c.want)
			}
			// Watched already: its changes from now on are events.
			if r.addWatches(ws, []string{root}, scanned) {
				t.Error("folders watched already were checked again")
			}
		})
	}
}

// TestWatchLimitLoggedOnce: folders left unwatched because the system's
// limit on watches is reached are one warning, naming how many and the
// limit to raise, not one per folder; the same count after a reload is
// not logged again, and watching them all once the limit allows is.
func TestWatchLimitLoggedOnce(t *testing.T) {
	root := t.TempDir()
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		writeSkill(t, filepath.Join(root, id), "")
	}
	w := testWatcher(t)
	var logs bytes.Buffer
	r := quietRegistry([]string{root})
	r.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	ws := newWatchState(w)
	limit := 3 // the root and two skill folders
	ws.add = addPast(w, &limit, syscall.ENOSPC)
	r.addWatches(ws, []string{root}, time.Time{})
	r.addWatches(ws, []string{root}, time.Time{}) // as after a reload
	out := logs.String()
	if n := strings.Count(out, "limit on file watches"); n != 1 || !strings.Contains(out, "unwatched_folders=3") ||
		!strings.Contains(out, "fix=") || strings.Contains(out, "cannot watch folder") {
		t.Fatalf("want one warning for 3 folders:\n%s", out)
	}
	limit = 100
	logs.Reset()
	r.addWatches(ws, []string{root}, time.Time{})
	if out := logs.String(); !strings.Contains(out, "every folder of the library is watched again") || strings.Contains(out, "limit on file watches") {
		t.Fatalf("after the limit was raised:\n%s", out)
	}
	if n := len(w.WatchList()); n != 6 {
		t.Errorf("%d folders watched, want 6", n)
	}
}

// TestWatchStopsBeforeOpenFilesRunOut: where every watched folder and
// file holds an open file (kqueue), watching stops, closing them all and
// saying so, rather than take the descriptors the proxy's connections
// need: past its budget, or when the system says there are none left.
func TestWatchStopsBeforeOpenFilesRunOut(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := t.TempDir()
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		writeSkill(t, filepath.Join(root, id), "")
	}
	defer func(f func() int) { watchFiles = f }(watchFiles)
	watchFiles = func() int { return 6 } // the root and two skills
	var logs bytes.Buffer
	r := quietRegistry([]string{root})
	r.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	writeSkill(t, filepath.Join(root, "f"), "") // after the read: loaded as watching stops
	done := make(chan error, 1)
	go func() { done <- r.Watch(context.Background(), 20*time.Millisecond) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Watch went on past its budget of open files")
	}
	if !strings.Contains(logs.String(), "not watching the library") {
		t.Errorf("no warning:\n%s", logs.String())
	}
	if _, ok := r.Snapshot().Get("f"); !ok {
		t.Error("a skill added before watching stopped was not loaded")
	}

	// Out of open files as the system says: the same.
	watchFiles = func() int { return 0 }
	w := testWatcher(t)
	defer w.Close() // before goleak's check
	ws := newWatchState(w)
	limit := 2
	ws.add = addPast(w, &limit, syscall.EMFILE)
	logs.Reset()
	r.addWatches(ws, []string{root}, time.Time{})
	if !r.outOfFiles(context.Background(), ws) || !strings.Contains(logs.String(), "not watching the library") {
		t.Errorf("EMFILE did not stop watching:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "cannot watch folder") {
		t.Errorf("one line per folder:\n%s", logs.String())
	}
}

// TestWatchLimitNewFolders: folders created at the watch limit while
// watching add to the warning's count after the reload they cause, not a
// warning each.
func TestWatchLimitNewFolders(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "a"), "")
	writeSkill(t, filepath.Join(root, "b"), "")
	defer func(f func(*fsnotify.Watcher) func(string) error) { watchAdd = f }(watchAdd)
	limit := 3 // the root, a and b
	watchAdd = func(w *fsnotify.Watcher) func(string) error { return addPast(w, &limit, syscall.ENOSPC) }
	var logs syncbuf.Buffer
	r := quietRegistry([]string{root})
	r.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	stop := watching(t, r, 100*time.Millisecond)
	// Watching: a first folder past the limit, loaded by its event's reload.
	retry(t, "a skill past the limit to load", func() { writeSkill(t, filepath.Join(root, "first"), "") },
		func() bool { _, ok := r.Snapshot().Get("first"); return ok })
	// Ten at once: their events, one reload (two if the debounce splits them).
	for i := range 10 {
		writeSkill(t, filepath.Join(root, fmt.Sprintf("new%d", i)), "")
	}
	eventually(t, "the ten to load", func() bool { _, ok := r.Snapshot().Get("new9"); return ok })
	time.Sleep(300 * time.Millisecond)
	stop()
	if n := strings.Count(logs.String(), "limit on file watches"); n > 3 || !strings.Contains(logs.String(), "unwatched_folders=11") {
		t.Errorf("want a warning a reload (at most 3), the last for 11 folders; %d:\n%s", n, logs.String())
	}
}

// addPast is w.Add failing with errno, as the system does, once w watches
// *limit folders.
func addPast(w *fsnotify.Watcher, limit *int, errno syscall.Errno) func(string) error {
	return func(dir string) error {
		if len(w.WatchList()) >= *limit {
			return fmt.Errorf("watch %s: %w", dir, errno)
		}
		return w.Add(dir)
	}
}
