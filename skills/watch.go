package skills

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long Watch waits after the last change before
// reloading: editors and `git checkout` write many files in a burst.
const DefaultDebounce = 250 * time.Millisecond

// Watch reloads on file changes (debounced) until ctx ends. It watches every
// folder under each root (inotify is not recursive) and adds watches for
// folders created later. Errors after startup are logged and watching goes
// on; it returns an error only when no watcher can be created at all.
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
	r.addWatches(w, roots)

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
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if !relevant(ev, roots) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if info, err := os.Stat(ev.Name); err == nil && info.IsDir() {
					r.watchTree(w, ev.Name, nil, map[string]bool{})
				}
			}
			schedule()
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			r.logger().Warn("skills: watch error", "err", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				schedule() // events were lost: rescan to be sure
			}
		case <-timer.C:
			pendingSince = time.Time{}
			r.Reload(ctx)
			// Folders created while the scan ran (or a root that appeared) get watches now.
			r.addWatches(w, roots)
		}
	}
}

func (r *Registry) logger() *slog.Logger {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log
}

// relevant drops events that cannot change the library: permission changes
// and hidden files (editor swap files, .git internals), and anything outside
// the roots (seen when a missing root's parent is watched).
func relevant(ev fsnotify.Event, roots []string) bool {
	if ev.Op == fsnotify.Chmod || strings.HasPrefix(filepath.Base(ev.Name), ".") {
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
// does not exist yet is covered by watching its parent, so creating it is noticed.
func (r *Registry) addWatches(w *fsnotify.Watcher, roots []string) {
	seen := map[string]bool{}
	for _, p := range w.WatchList() {
		seen[p] = true
	}
	for _, root := range roots {
		if info, err := os.Stat(root); err == nil && info.IsDir() {
			r.watchTree(w, root, nil, seen)
			continue
		}
		if parent := filepath.Dir(root); !seen[parent] {
			if info, err := os.Stat(parent); err == nil && info.IsDir() {
				r.add(w, parent, seen)
			}
		}
	}
}

// watchTree watches dir and the folders below it; ancestors are the folders
// above dir in this walk, to stop at symlinks that loop back.
func (r *Registry) watchTree(w *fsnotify.Watcher, dir string, ancestors []string, seen map[string]bool) {
	if len(ancestors) > maxDepth || !r.add(w, dir, seen) {
		return
	}
	ancestors = append(ancestors, dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // removed meanwhile, or unreadable: Load reports it
	}
	for _, e := range entries {
		if skipEntry(e.Name()) {
			continue
		}
		child := filepath.Join(dir, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			// Symlinked folders are scanned, so watch them too, unless they loop.
			info, err := os.Stat(child)
			if err != nil || !info.IsDir() || loopsTo(info, ancestors) != "" {
				continue
			}
		} else if !e.IsDir() {
			continue
		}
		r.watchTree(w, child, ancestors, seen)
	}
}

// add watches dir unless it already is; false only when it cannot be watched.
func (r *Registry) add(w *fsnotify.Watcher, dir string, seen map[string]bool) bool {
	if seen[dir] {
		return true // already watched: still descend, children may be new
	}
	if err := w.Add(dir); err != nil {
		r.logger().Warn("skills: cannot watch folder; changes in it will be missed", "dir", dir, "err", err)
		return false
	}
	seen[dir] = true
	return true
}
