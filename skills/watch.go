package skills

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long Watch waits after the last change before
// reloading: editors and `git checkout` write many files in a burst.
const DefaultDebounce = 250 * time.Millisecond

// changeSlack is how long before a scan began a change time may lie and
// still count as after it: the kernel stamps files from a clock that lags
// by up to a tick, and some file systems keep whole seconds (ext3) or two
// (FAT). A change just before the scan costs one reload more, never a miss.
func changeSlack(stamp time.Time) time.Duration {
	if stamp.Nanosecond() != 0 {
		return 50 * time.Millisecond // sub-second times: a tick at most
	}
	return 2 * time.Second
}

// Watch reloads on file changes (debounced) until ctx ends. It watches every
// folder under each root (inotify is not recursive) and adds watches for
// folders created later. Errors after startup are logged and watching goes
// on; it returns an error only when no watcher can be created at all.
//
// It may start any time after the library was loaded (a server starts it
// once its index is built, so the two walks do not compete): a change made
// in between reached no watch, so each folder it watches for the first time
// is checked for files changed since the current snapshot's scan began
// (their change times), and any such change reloads.
//
// Libraries updated by swapping a symlink are followed: a Kubernetes
// ConfigMap or Secret volume (the kubelet writes a new hidden folder and
// renames "..data" over the old link) and a root reached through a link
// that is replaced (git-sync's --link). After each reload, watches whose
// path now leads to another folder are moved to it.
func (r *Registry) Watch(ctx context.Context, debounce time.Duration) error {
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("skills: watch: %w", err)
	}
	defer w.Close()

	roots := make([]string, len(r.roots))
	for i, root := range r.roots {
		roots[i] = filepath.Clean(root)
	}
	ws := newWatchState(w)
	ws.anyChmod = r.opts.Conventional != nil
	// Roots the library was loaded without: one that exists by the time
	// its watch is added appeared unseen, and needs a reload.
	snap := r.Snapshot()
	for _, p := range snap.LibraryProblems() {
		ws.missing[filepath.Clean(p.Path)] = true
	}
	reload := r.addWatches(ws, roots, snap.began)
	if r.outOfFiles(ctx, ws) {
		return nil
	}

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	// schedule debounces a reload, but never postpones it past maxWait
	// after the first pending change, so a file written continuously (a
	// log in the library) cannot starve reloads.
	maxWait := 10 * debounce
	var pendingSince time.Time
	schedule := func() {
		now := time.Now()
		if pendingSince.IsZero() {
			pendingSince = now
		}
		timer.Reset(max(0, min(debounce, maxWait-now.Sub(pendingSince))))
	}
	if reload {
		schedule()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			// A watch on "." names its events "./lib"; roots, links and
			// targets are kept clean ("lib").
			ev.Name = filepath.Clean(ev.Name)
			if !relevant(ev, roots, ws) {
				continue
			}
			// A broken link's target coming back is watched through the
			// link once the reload finds it: watched here by its own path
			// as well, its events would carry that path, which is no root's.
			if ev.Has(fsnotify.Create) && filepath.Base(ev.Name) != atomicDataLink && !towardTarget(ev.Name, ws.targets) {
				if info, err := os.Stat(ev.Name); err == nil && info.IsDir() {
					// Its folders' count against the limits is the reload's.
					walked := 0
					r.watchTree(ws, ev.Name, nil, map[string]bool{}, &walked)
					if r.outOfFiles(ctx, ws) {
						return nil
					}
					delete(ws.missing, ev.Name) // a root seen appearing
				}
			}
			schedule()
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if noFilesLeft(err) {
				// A file new in a watched folder (kqueue opens each).
				ws.exhausted = true
				if r.outOfFiles(ctx, ws) {
					return nil
				}
			}
			r.logger().Warn("skills: watch error", "err", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				schedule() // events were lost: rescan to be sure
			}
		case <-timer.C:
			pendingSince = time.Time{}
			snap := r.Reload(ctx)
			// Folders created while the scan ran (or a root that appeared)
			// get watches now, and watches left on folders a swapped link
			// no longer leads to move to the new ones.
			if r.addWatches(ws, roots, snap.began) {
				schedule()
			}
			if r.outOfFiles(ctx, ws) {
				return nil
			}
		}
	}
}

func (r *Registry) logger() *slog.Logger {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log
}

// atomicDataLink is the link the kubelet renames into place to publish a
// new version of a ConfigMap, Secret or projected volume: the one hidden
// name whose change is the library's.
const atomicDataLink = "..data"

// watchState is what Watch keeps between reloads.
type watchState struct {
	w *fsnotify.Watcher
	// watched is what each watched path led to when it was added; a path
	// that now leads elsewhere (through a swapped link) is watched anew.
	watched map[string]os.FileInfo
	// links are symlinks on the roots' own paths; replacing one swaps the
	// library (their parent folders are watched).
	links map[string]bool
	// missing are the roots that were not there when last looked at.
	missing map[string]bool
	// failed are the folders a watch could not be added to, with why (each
	// logged once).
	failed map[string]string
	// targets are the missing targets of broken symlinks in the library:
	// the nearest folder above each is watched, so that its return (a
	// re-clone, a move back) reloads. broken are the links a walk found,
	// until watchMissingTargets.
	targets map[string]bool
	broken  []string
	// byFile is the path each watched folder is watched under. fsnotify
	// keeps one path per kernel watch: a folder added under a second path
	// (a link to it) is not recorded under it, and a path re-added after
	// its link moved on to such a folder was left pointing at a watch
	// fsnotify had dropped, which its next Remove dereferenced (a panic
	// that took the proxy down). So each folder is added under one path.
	byFile map[fileID]string
	// anyChmod: every permission change is relevant, a file's too. In a
	// library found by convention a file's owner and mode decide whether
	// its skill is read (listResources).
	anyChmod bool
	// since, during addWatches, is when the snapshot being watched began to
	// be read (zero: no snapshot to compare with). What a folder watched for
	// the first time holds is checked against it (fresh: the folders this
	// call added, not checked yet), and stale records that something
	// changed after it: its events went to no watch.
	since time.Time
	fresh map[string]bool
	stale bool
	// limited counts the folders of this walk left unwatched because the
	// system's limit on watches (or open files) was reached; reported is
	// the count last logged, so that a reload finding the same does not
	// log it again. add is the watcher's Add (tests fail it).
	limited, reported int
	add               func(string) error
	// files counts, during addWatches (counting), the descriptors the
	// watches hold where each watched folder and each entry in it takes
	// one (kqueue), against budget (0: no such cost); exhausted is set
	// when they pass it, or open files ran out.
	files, budget       int
	counting, exhausted bool
}

func newWatchState(w *fsnotify.Watcher) *watchState {
	return &watchState{w: w, watched: map[string]os.FileInfo{}, links: map[string]bool{}, missing: map[string]bool{},
		failed: map[string]string{}, targets: map[string]bool{}, byFile: map[fileID]string{}, fresh: map[string]bool{}, add: watchAdd(w),
		budget: watchFiles()}
}

// unwatch removes the watch of path p (gone, or leading elsewhere now).
func (ws *watchState) unwatch(p string) {
	ws.remove(p) // fails when fsnotify dropped it already (the folder moved or went): fine
	if old, ok := ws.watched[p]; ok {
		if id, ok := fileIDOf(old); ok && ws.byFile[id] == p {
			delete(ws.byFile, id)
		}
		delete(ws.watched, p)
	}
}

// remove is fsnotify's Remove, kept from taking the process down: a state
// fsnotify gets wrong (see byFile) panicked in it, and a library edit must
// never stop the proxy. Its lock is released on the way out (deferred).
func (ws *watchState) remove(p string) {
	defer func() { _ = recover() }()
	_ = ws.w.Remove(p)
}

// relevant drops events that cannot change the library: permission changes
// other than a folder's or a SKILL.md's (which decide what the scan can
// read: fixing an unreadable skill must load it, and taking its reading
// away must drop it; in a library found by convention, ws.anyChmod, every
// file's), hidden files (editor swap files, .git internals)
// except a kubelet "..data" swap, and anything outside the roots (seen
// when a missing root's parent is watched) except the replacement of a
// link on a root's path, or what brings back a broken link's target.
func relevant(ev fsnotify.Event, roots []string, ws *watchState) bool {
	if ev.Op == fsnotify.Chmod && !ws.anyChmod && filepath.Base(ev.Name) != SkillFile {
		if info, err := os.Stat(ev.Name); err != nil || !info.IsDir() {
			return false
		}
	}
	if ws.links[ev.Name] {
		return true
	}
	if towardTarget(ev.Name, ws.targets) {
		return true
	}
	if base := filepath.Base(ev.Name); strings.HasPrefix(base, ".") && base != atomicDataLink {
		return false
	}
	for _, root := range roots {
		if ev.Name == root || strings.HasPrefix(ev.Name, root+string(filepath.Separator)) || root == "." {
			return true
		}
	}
	return false
}

// addWatches (re)adds watches for every folder under each root. A root that
// does not exist yet is covered by watching its parent, so creating it is
// noticed; so is the parent of each symlink on a root's path, so its
// replacement is. Watches whose path now leads to another folder are
// moved there first. It reports whether the library may have changed
// without an event having said so, and the caller reloads: a root that was
// missing is there now or the other way round, or what is watched for the
// first time changed after scanned (when the snapshot's scan began; zero:
// unknown).
func (r *Registry) addWatches(ws *watchState, roots []string, scanned time.Time) (reload bool) {
	ws.since, ws.stale, ws.limited, ws.files, ws.counting = scanned, false, 0, 0, true
	clear(ws.fresh)
	defer r.reportLimit(ws)
	defer func() {
		// Events add watches without the checks; the reload they cause
		// counts again.
		ws.since, ws.counting = time.Time{}, false
		if ws.budget > 0 && ws.files > ws.budget {
			ws.exhausted = true
		}
	}()
	seen := map[string]bool{}
	clear(ws.targets) // the walk below finds the links still broken
	for _, p := range ws.w.WatchList() {
		if old, ok := ws.watched[p]; ok {
			if now, err := os.Stat(p); err != nil || !os.SameFile(old, now) {
				ws.unwatch(p)
				continue
			}
		}
		seen[p] = true
	}
	for _, root := range roots {
		for _, link := range linksOnPath(root) {
			if !ws.links[link] {
				ws.links[link] = true
				ws.check(os.Lstat(link)) // swapped, maybe to a folder older than the scan
			}
			parent := filepath.Dir(link)
			r.add(ws, parent, seen)
			ws.countOutside(parent)
		}
		if info, err := os.Stat(root); err != nil || !info.IsDir() {
			parent := filepath.Dir(root)
			if info, err := os.Stat(parent); err == nil && info.IsDir() && r.add(ws, parent, seen) {
				ws.countOutside(parent)
			}
		}
		// Looked at (again) with the parent watched: a root created before,
		// or while its parent's watch was added, sent its event to no one.
		if info, err := os.Stat(root); err == nil && info.IsDir() {
			walked := 0 // the bound is per root, as Load's scan counts
			r.watchTree(ws, root, nil, seen, &walked)
			if ws.missing[root] {
				delete(ws.missing, root)
				reload = true
			}
			continue
		}
		if !ws.missing[root] && !ws.since.IsZero() {
			reload = true // gone since it was read: no watch saw it go
		}
		ws.missing[root] = true
	}
	r.watchMissingTargets(ws, seen)
	if ws.stale {
		r.logger().Info("skills: the library changed before its folders were watched; reloading")
	}
	return reload || ws.stale
}

// watchFiles and watchAdd are watchBudget and the watcher's Add, variables
// for tests.
var (
	watchFiles = watchBudget
	watchAdd   = func(w *fsnotify.Watcher) func(string) error { return w.Add }
)

// atWatchLimit reports whether a watch failed for want of inotify's
// per-user limit on watches rather than for the folder.
func atWatchLimit(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// noFilesLeft reports whether err is the system's: no open file left.
func noFilesLeft(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// outOfFiles reports whether the watches took, or would take, the open
// files the proxy needs for its connections (kqueue holds one per watched
// folder and file: a large library on macOS). Then Watch stops, closing
// them all, and says so; a reload first loads what changed meanwhile.
func (r *Registry) outOfFiles(ctx context.Context, ws *watchState) bool {
	if !ws.exhausted {
		return false
	}
	r.logger().Warn("skills: not watching the library: watching every folder and file would take more open files than this process should hold beside its connections; changes need POST /v1/skills/reload, SIGHUP or a restart",
		"watched_before_stopping", len(ws.watched), "fix", watchLimitHint())
	r.Reload(ctx)
	return true
}

// countFolder adds to ws.files what a watch of a folder holds open where
// watches hold files (kqueue): the folder, and each of its entries but the
// subfolders a walk of the library watches themselves (walked).
func (ws *watchState) countFolder(entries []os.DirEntry, walked bool) {
	if !ws.counting || ws.budget == 0 {
		return
	}
	ws.files++
	for _, e := range entries {
		if !walked || !e.IsDir() || Ignored(e.Name()) {
			ws.files++
		}
	}
}

// countOutside counts a watched folder outside the library (a link's or a
// missing root's parent, a broken link target's nearest folder), on every
// walk whether its watch is new or not (twice if two links share it: on
// the safe side).
func (ws *watchState) countOutside(dir string) {
	if !ws.counting || ws.budget == 0 {
		return
	}
	entries, _ := os.ReadDir(dir)
	ws.countFolder(entries, false)
}

// reportLimit logs, once per count, the folders the last walk of every
// root could not watch for the system's limit.
func (r *Registry) reportLimit(ws *watchState) {
	if ws.limited == ws.reported {
		return
	}
	before := ws.reported
	ws.reported = ws.limited
	switch {
	case ws.limited > 0:
		r.logger().Warn("skills: the system's limit on file watches is reached; changes in the folders left unwatched are missed until a reload (POST /v1/skills/reload, SIGHUP) or a restart",
			"unwatched_folders", ws.limited, "watched_folders", len(ws.watched), "fix", watchLimitHint())
	case before > 0:
		r.logger().Info("skills: every folder of the library is watched again", "watched_folders", len(ws.watched))
	}
}

// stampedSince reports whether a file's time stamp may be of a change made
// at or after t.
func stampedSince(stamp, t time.Time) bool { return !stamp.Before(t.Add(-changeSlack(stamp))) }

// check records in ws.stale whether a file (its stat) changed after
// ws.since. Files gone or unreadable meanwhile are not: their folder changed.
func (ws *watchState) check(info os.FileInfo, err error) {
	if err == nil && !ws.since.IsZero() && changedSince(info, ws.since) {
		ws.stale = true
	}
}

// linksOnPath returns the symlinks among path and its ancestors.
func linksOnPath(path string) []string {
	var out []string
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if info, err := os.Lstat(p); err == nil && info.Mode()&os.ModeSymlink != 0 {
			out = append(out, p)
		}
		if parent := filepath.Dir(p); parent == p {
			return out
		}
	}
}

// watchTree watches dir and the folders below it; ancestors are the folders
// above dir in this walk, to stop at symlinks that loop back, and walked
// counts the folders of this root's walk so far.
func (r *Registry) watchTree(ws *watchState, dir string, ancestors []string, seen map[string]bool, walked *int) {
	if len(ancestors) > maxDepth || *walked >= maxFolders {
		return // too deep, or too many (Load reports the runaway tree)
	}
	if !r.add(ws, dir, seen) {
		return
	}
	// A folder watched for the first time (here, or above as a missing
	// root's or a link's parent): what changed in it before its watch is
	// read from the change times, stated and listed after it.
	check := ws.fresh[dir]
	if check {
		delete(ws.fresh, dir)
		ws.check(os.Stat(dir)) // an entry added, removed or renamed
	}
	*walked++
	ancestors = append(ancestors, dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // removed meanwhile, or unreadable: Load reports it
	}
	ws.countFolder(entries, true)
	for _, e := range entries {
		if Ignored(e.Name()) {
			continue
		}
		child := filepath.Join(dir, e.Name())
		if check && !ws.stale {
			ws.check(e.Info()) // a file written, or its mode changed (a folder is checked as it is watched)
		}
		if e.Type()&os.ModeSymlink != 0 {
			// Symlinked folders are scanned, so watch them too, unless they loop.
			info, err := os.Stat(child)
			if errors.Is(err, fs.ErrNotExist) {
				ws.broken = append(ws.broken, child) // watchMissingTargets, after the walk
				continue
			}
			if check && !ws.stale && err == nil && !info.IsDir() {
				ws.check(info, nil) // a linked file
			}
			if err != nil || !info.IsDir() || loopsTo(info, ancestors) != "" {
				continue
			}
		} else if !e.IsDir() {
			continue
		}
		r.watchTree(ws, child, ancestors, seen, walked)
	}
}

// towardTarget reports whether name is a broken link's target, or a
// folder on its way back (a re-clone makes the parent first).
func towardTarget(name string, targets map[string]bool) bool {
	for target := range targets {
		if name == target || strings.HasPrefix(target, name+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// watchMissingTargets watches, for each broken symlink the walks found,
// the nearest existing folder above its target, and records the target
// (see relevant). It runs after the walks: a folder the library reaches
// through another link is watched under that path (add keeps one path per
// folder), whose events are the library's anyway.
func (r *Registry) watchMissingTargets(ws *watchState, seen map[string]bool) {
	for _, link := range ws.broken {
		target, err := os.Readlink(link)
		if err != nil {
			continue
		}
		if !filepath.IsAbs(target) {
			dir := filepath.Dir(link)
			if real, err := filepath.EvalSymlinks(dir); err == nil {
				dir = real // ".." is relative to where the link really is
			}
			target = filepath.Join(dir, target)
		}
		target = filepath.Clean(target)
		ws.targets[target] = true
		for dir := filepath.Dir(target); ; dir = filepath.Dir(dir) {
			if info, err := os.Stat(dir); err == nil && info.IsDir() {
				r.add(ws, dir, seen)
				ws.countOutside(dir)
				break
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	ws.broken = ws.broken[:0]
}

// add watches dir unless it already is; false only when it cannot be
// watched. A new watch is recorded in ws.fresh while addWatches checks.
func (r *Registry) add(ws *watchState, dir string, seen map[string]bool) bool {
	if seen[dir] {
		return true // already watched: still descend, children may be new
	}
	info, statErr := os.Stat(dir)
	if statErr == nil {
		if old, ok := ws.watched[dir]; ok && !os.SameFile(old, info) {
			ws.unwatch(dir) // its link leads elsewhere now: a new watch, not fsnotify's retargeting
		}
		if id, ok := fileIDOf(info); ok {
			if other, dup := ws.byFile[id]; dup && other != dir {
				if now, err := os.Stat(other); err == nil && os.SameFile(now, info) {
					// Watched under another path already: its events
					// are the library's too. Descend all the same; a
					// folder below may be watched under this path only.
					seen[dir] = true
					return true
				}
				ws.unwatch(other) // that path leads elsewhere now
			}
		}
	}
	if ws.exhausted || ws.counting && ws.budget > 0 && ws.files >= ws.budget {
		ws.exhausted = true
		return false
	}
	if err := ws.add(dir); err != nil {
		if noFilesLeft(err) {
			ws.exhausted = true
			return false
		}
		if atWatchLimit(err) {
			ws.limited++ // one line for them all (reportLimit), not thousands
			return false
		}
		// Once per folder and failure: it is tried again after every
		// reload, which would repeat the line each time.
		if why := err.Error(); ws.failed[dir] != why {
			ws.failed[dir] = why
			r.logger().Warn("skills: cannot watch folder; changes in it will be missed", "dir", dir, "err", err)
		}
		return false
	}
	delete(ws.failed, dir)
	if statErr == nil {
		ws.watched[dir] = info
		if id, ok := fileIDOf(info); ok {
			ws.byFile[id] = dir
		}
	}
	seen[dir] = true
	if !ws.since.IsZero() {
		ws.fresh[dir] = true
	}
	return true
}
