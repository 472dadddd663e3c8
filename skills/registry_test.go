package skills

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/goleak"
)

// eventually polls cond until it holds or the deadline passes; timing is
// never asserted, only that the state is reached.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// retry performs action, waits up to a second for cond, and repeats until
// the deadline. Watch may start after the first action, and a debounced
// watcher must be given quiet time to fire.
func retry(t *testing.T, what string, action func(), cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		action()
		for wait := time.Now().Add(time.Second); time.Now().Before(wait); time.Sleep(10 * time.Millisecond) {
			if cond() {
				return
			}
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func quietRegistry(roots []string) *Registry {
	r := NewRegistry(roots, Options{})
	r.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	return r
}

func TestRegistryReloadSwapsAndNotifies(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "one"), "")
	r := quietRegistry([]string{root})
	first := r.Snapshot()
	if first == nil || !slices.Equal(ids(first.Skills()), []string{"one"}) {
		t.Fatalf("initial snapshot: %v", first)
	}
	if !slices.Equal(r.Roots(), []string{root}) {
		t.Errorf("Roots() = %q", r.Roots())
	}

	var calls []string
	r.OnReload(func(s *Snapshot) {
		// Subscribers run after the swap: the registry already serves s.
		if r.Snapshot() != s {
			t.Error("subscriber ran before the swap")
		}
		calls = append(calls, "a:"+s.Fingerprint()[:8])
	})
	r.OnReload(func(s *Snapshot) { panic("a broken subscriber must not stop the others") })
	r.OnReload(func(s *Snapshot) { calls = append(calls, "c") })

	writeSkill(t, filepath.Join(root, "two"), "")
	second := r.Reload(context.Background())
	if second == first || r.Snapshot() != second {
		t.Fatal("Reload did not swap in a new snapshot")
	}
	if !slices.Equal(ids(second.Skills()), []string{"one", "two"}) {
		t.Errorf("after reload: %q", ids(second.Skills()))
	}
	if len(calls) != 2 || calls[1] != "c" {
		t.Errorf("subscribers called %q, want a then c", calls)
	}
	// The old snapshot is untouched: readers holding it see a consistent library.
	if !slices.Equal(ids(first.Skills()), []string{"one"}) {
		t.Error("old snapshot changed")
	}
}

func TestRegistryCancelledReloadKeepsSnapshot(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "one"), "")
	r := quietRegistry([]string{root})
	before := r.Snapshot()
	notified := false
	r.OnReload(func(*Snapshot) { notified = true })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := r.Reload(ctx); got != before || r.Snapshot() != before || notified {
		t.Fatal("a cancelled reload must keep the current snapshot and not notify")
	}
}

// TestRegistryConcurrentReaders runs readers against reloads; with -race it
// proves readers never see a half-built library.
func TestRegistryConcurrentReaders(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		writeSkill(t, filepath.Join(root, n), "")
	}
	r := quietRegistry([]string{root})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := r.Snapshot()
				list := s.Skills()
				if len(list) < 3 {
					t.Errorf("reader saw %d skills", len(list))
					return
				}
				for _, sk := range list {
					if got, ok := s.Get(sk.ID); !ok || got != sk {
						t.Errorf("inconsistent snapshot for %s", sk.ID)
						return
					}
					_ = Envelope(sk)
				}
				_ = RenderCatalog(list, CatalogOptions{})
				_ = s.Fingerprint()
				reads.Add(1)
			}
		})
	}
	for i := range 20 {
		writeSkill(t, filepath.Join(root, "extra"), string(rune('a'+i)))
		r.Reload(context.Background())
	}
	eventually(t, "readers to make progress", func() bool { return reads.Load() > 20 })
	close(stop)
	wg.Wait()
}

func TestRegistryWatch(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "src", "one"), "")
	r := quietRegistry([]string{root})

	var reloads atomic.Int64
	r.OnReload(func(*Snapshot) { reloads.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, 20*time.Millisecond) }()

	has := func(id string) bool { _, ok := r.Snapshot().Get(id); return ok }

	// A new skill in a new nested folder. The watch may start after the
	// first write, so keep touching the file until the reload shows it.
	newSkill := filepath.Join(root, "src", "nested", "two")
	retry(t, "the watcher to pick up a new skill",
		func() { writeSkill(t, newSkill, "") },
		func() bool { return has("src/nested/two") })

	// Editing a skill inside a folder created after Watch started.
	retry(t, "an edit in a new folder to be seen",
		func() { writeSkill(t, newSkill, "edited") },
		func() bool { s, ok := r.Snapshot().Get("src/nested/two"); return ok && s.Body() == "edited" })

	// Removing a skill.
	if err := os.RemoveAll(filepath.Join(root, "src", "one")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a removed skill to disappear", func() bool { return !has("src/one") })

	// A broken file is reported, never fatal to the watcher.
	writeFile(t, filepath.Join(root, "bad", SkillFile), "no frontmatter")
	eventually(t, "a broken skill to be reported", func() bool {
		s, ok := r.Snapshot().Lookup("bad")
		return ok && s.Skipped
	})
	if reloads.Load() == 0 {
		t.Error("subscribers were not notified")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Watch returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Watch did not return after cancel")
	}
}

func TestRegistryWatchMissingRoot(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	parent := t.TempDir()
	root := filepath.Join(parent, "skills")
	r := quietRegistry([]string{root})
	if len(r.Snapshot().LibraryProblems()) != 1 {
		t.Fatalf("missing root not reported: %v", r.Snapshot().Problems())
	}
	stop := watching(t, r, 20*time.Millisecond)
	// Creating the root later is noticed through its parent.
	retry(t, "a root created after Watch started",
		func() { writeSkill(t, filepath.Join(root, "late"), "") },
		func() bool { _, ok := r.Snapshot().Get("late"); return ok })
	stop()
}

// TestRegistryWatchRootCreatedBeforeWatch: a root missing when the
// library was loaded and created before Watch started (so no watch saw it
// appear) is loaded when watching starts, with no further change to it.
func TestRegistryWatchRootCreatedBeforeWatch(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := filepath.Join(t.TempDir(), "skills")
	r := quietRegistry([]string{root})
	writeSkill(t, filepath.Join(root, "early"), "")
	stop := watching(t, r, 20*time.Millisecond)
	retry(t, "a root created before Watch started", func() {}, func() bool { _, ok := r.Snapshot().Get("early"); return ok })
	stop()
}

// TestRegistryWatchNotStarved: a file rewritten faster than the debounce
// still lets reloads through (bounded by the maximum wait).
func TestRegistryWatchNotStarved(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "one"), "")
	r := quietRegistry([]string{root})
	stopWatching := watching(t, r, 200*time.Millisecond)
	stop := make(chan struct{})
	noisy := make(chan struct{})
	go func() {
		defer close(noisy)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				os.WriteFile(filepath.Join(root, "one", "log.txt"), []byte{byte(i)}, 0o644)
			}
		}
	}()
	retry(t, "a reload despite constant writes",
		func() { writeSkill(t, filepath.Join(root, "two"), "") },
		func() bool { _, ok := r.Snapshot().Get("two"); return ok })
	close(stop)
	<-noisy
	stopWatching()
}

// TestRegistryWatchPermissionChange: fixing a SKILL.md's permissions loads
// the skill it kept out, and taking them away drops it again, with no other
// change to the library. Reads are refused by mode (openFile), as for a
// user other than root.
func TestRegistryWatchPermissionChange(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := t.TempDir()
	file := writeSkill(t, filepath.Join(root, "locked"), "")
	if err := os.Chmod(file, 0); err != nil {
		t.Fatal(err)
	}
	orig := openFile
	openFile = func(name string) (fileHandle, error) {
		if info, err := os.Stat(name); err == nil && info.Mode().Perm()&0o444 == 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
		}
		return os.Open(name)
	}
	r := quietRegistry([]string{root})
	loaded := func() bool { s, ok := r.Snapshot().Lookup("locked"); return ok && !s.Skipped }
	if loaded() {
		t.Fatal("an unreadable SKILL.md loaded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, 20*time.Millisecond) }()
	defer func() { // before goleak's check
		cancel()
		<-done
		openFile = orig
	}()
	retry(t, "a SKILL.md made readable to load", func() { _ = os.Chmod(file, 0o644) }, loaded)
	retry(t, "a SKILL.md made unreadable to be dropped", func() { _ = os.Chmod(file, 0) }, func() bool { return !loaded() })
}

// A folder that cannot be watched is logged once, not again each time
// watches are added after a reload.
func TestWatchFailureLoggedOnce(t *testing.T) {
	w := testWatcher(t)
	var buf bytes.Buffer
	r := quietRegistry([]string{t.TempDir()})
	r.SetLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	ws := newWatchState(w)
	gone := filepath.Join(t.TempDir(), "gone")
	for range 3 {
		if r.add(ws, gone, map[string]bool{}) {
			t.Fatal("a missing folder was watched")
		}
	}
	if n := strings.Count(buf.String(), "cannot watch folder"); n != 1 {
		t.Errorf("%d warnings:\n%s", n, buf.String())
	}
}

// TestRegistryWatchSymlinkTargetReturns: a symlinked skill whose target
// goes away is dropped, and loads again when the target comes back (a move
// back, a re-clone), with no other change to the library.
func TestRegistryWatchSymlinkTargetReturns(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root, ext := t.TempDir(), t.TempDir()
	target := filepath.Join(ext, "repo", "linked")
	writeSkill(t, target, "")
	if err := os.Symlink(target, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	r := quietRegistry([]string{root})
	loaded := func() bool { s, ok := r.Snapshot().Lookup("linked"); return ok && !s.Skipped }
	if !loaded() {
		t.Fatal("the symlinked skill did not load")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, 20*time.Millisecond) }()
	defer func() { cancel(); <-done }()
	// The watches are in place once a new skill shows (renames below are
	// done once: they cannot be retried as writes can).
	retry(t, "the watcher to start", func() { writeSkill(t, filepath.Join(root, "probe"), "") },
		func() bool { _, ok := r.Snapshot().Get("probe"); return ok })
	moved := filepath.Join(ext, "moved")
	rename := func(from, to string) {
		t.Helper()
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	gone := func() bool { _, ok := r.Snapshot().Get("linked"); return !ok }
	rename(target, moved)
	eventually(t, "a skill whose link broke to be dropped", gone)
	rename(moved, target)
	eventually(t, "a skill whose link target came back to load", loaded)
	// Its folder's parent too (a re-clone): gone, then made anew. The
	// reload that loaded it re-aims the watches just after: let it.
	time.Sleep(200 * time.Millisecond)
	rename(target, moved)
	eventually(t, "a skill whose link broke again to be dropped", gone)
	if err := os.Remove(filepath.Join(ext, "repo")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the reload that re-aims the watch
	if err := os.Mkdir(filepath.Join(ext, "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	rename(moved, target)
	eventually(t, "a skill whose target's folders came back to load", loaded)
}

// TestRegistryWatchBrokenLinkBesideLinkedFolder: a broken link whose
// target's parent the library reaches through another link does not take
// that folder's watch over (a second watch of a folder renames its events
// to a path outside the roots): edits through the other link still load.
func TestRegistryWatchBrokenLinkBesideLinkedFolder(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root, ext := t.TempDir(), t.TempDir()
	repo := filepath.Join(ext, "repo")
	writeSkill(t, filepath.Join(repo, "x"), "")
	// "a-pdf" sorts before "team", so the walk meets the broken link first.
	if err := os.Symlink(filepath.Join(repo, "pdf"), filepath.Join(root, "a-pdf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(repo, filepath.Join(root, "team")); err != nil {
		t.Fatal(err)
	}
	r := quietRegistry([]string{root})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, 20*time.Millisecond) }()
	defer func() { cancel(); <-done }()
	retry(t, "a skill added through the linked folder to load",
		func() { writeSkill(t, filepath.Join(root, "team", "y"), "") },
		func() bool { _, ok := r.Snapshot().Get("team/y"); return ok })
	// And the broken link's target appearing loads it.
	retry(t, "the broken link's target to load",
		func() { writeSkill(t, filepath.Join(repo, "pdf"), "") },
		func() bool { _, ok := r.Snapshot().Get("a-pdf"); return ok })
}

// The watcher's folder bound is per root, as the scan's is: two roots
// within it are watched whole together, one beyond it up to the bound.
func TestWatchBoundPerRoot(t *testing.T) {
	defer func(n int) { maxFolders = n }(maxFolders)
	maxFolders = 40
	mk := func(n int) string {
		root := t.TempDir()
		for i := range n - 1 { // the root is a folder too
			if err := os.Mkdir(filepath.Join(root, fmt.Sprintf("d%03d", i)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	tests := []struct {
		name  string
		sizes []int
		want  int
	}{
		{"two roots within the bound", []int{30, 30}, 60},
		{"one root beyond it", []int{50}, 40},
	}
	for _, tt := range tests {
		var roots []string
		for _, n := range tt.sizes {
			roots = append(roots, mk(n))
		}
		w, err := fsnotify.NewWatcher()
		if err != nil {
			t.Fatal(err)
		}
		r := quietRegistry(roots)
		ws := newWatchState(w)
		r.addWatches(ws, roots, time.Time{})
		got := 0
		for _, p := range w.WatchList() {
			for _, root := range roots {
				if p == root || strings.HasPrefix(p, root+string(filepath.Separator)) {
					got++
				}
			}
		}
		w.Close()
		if got != tt.want {
			t.Errorf("%s: %d folders watched, want %d", tt.name, got, tt.want)
		}
	}
}

// watching starts r.Watch with debounce d; stop cancels it, waits for it
// to return and fails t if it returned an error.
func watching(t *testing.T, r *Registry, d time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, d) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// testWatcher is a watcher closed when the test ends.
func testWatcher(t *testing.T) *fsnotify.Watcher {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}
