//go:build unix

package skills

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// atomicWriter updates a folder the way the kubelet updates a mounted
// ConfigMap or Secret (its AtomicWriter): the files live in a hidden
// timestamped folder, "..data" links to it, and each top-level name is a
// link through "..data". An update writes a new timestamped folder,
// points "..data_tmp" at it and renames that over "..data" (the atomic
// step), adds links for new names, removes links for names that are gone,
// and then deletes the old folder.
type atomicWriter struct {
	t    *testing.T
	root string
	gen  int
	cur  string   // current timestamped folder (base name)
	keep bool     // leave old timestamped folders (a kubelet that has not cleaned up yet)
	old  []string // timestamped folders left behind
}

// write makes files (slash paths relative to root, e.g. "alpha/SKILL.md")
// the folder's whole content.
func (w *atomicWriter) write(files map[string]string) {
	t := w.t
	t.Helper()
	w.gen++
	ts := fmt.Sprintf("..2026_11_24_00_00_%02d.%09d", w.gen, w.gen)
	top := map[string]bool{}
	for rel, content := range files {
		writeFile(t, filepath.Join(w.root, ts, filepath.FromSlash(rel)), content)
		top[strings.SplitN(rel, "/", 2)[0]] = true
	}
	tmp := filepath.Join(w.root, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(w.root, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range top {
		link := filepath.Join(w.root, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(w.root)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && !top[e.Name()] {
			os.Remove(filepath.Join(w.root, e.Name()))
		}
	}
	if w.cur != "" {
		if w.keep {
			w.old = append(w.old, w.cur)
		} else if err := os.RemoveAll(filepath.Join(w.root, w.cur)); err != nil {
			t.Fatal(err)
		}
	}
	w.cur = ts
}

func skillFile(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\nBody of " + name + ".\n"
}

// TestWatchConfigMapSwaps: a library mounted from a ConfigMap is updated
// by symlink swaps, never by writes to the files the scan reads; every
// update reaches the registry, including edits after several swaps (the
// watches must follow the new folders) and updates whose old folder is
// not deleted yet.
func TestWatchConfigMapSwaps(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("old folder kept=%v", keep), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			root := t.TempDir()
			w := &atomicWriter{t: t, root: root, keep: keep}
			w.write(map[string]string{"alpha/SKILL.md": skillFile("alpha", "Version 0. Use when testing.")})
			r := quietRegistry([]string{root})
			if ids := ids(r.Snapshot().Skills()); len(ids) != 1 || ids[0] != "alpha" {
				t.Fatalf("initial library %v (problems %v): the hidden ..data folders must not count", ids, r.Snapshot().Problems())
			}
			stop := watching(t, r, 20*time.Millisecond)
			desc := func(id string) string {
				s, ok := r.Snapshot().Get(id)
				if !ok {
					return ""
				}
				return s.Description
			}

			// The watch may start after the first swap: repeat it until seen.
			retry(t, "an edited description to arrive by swap",
				func() {
					w.write(map[string]string{"alpha/SKILL.md": skillFile("alpha", "Version 1. Use when testing.")})
				},
				func() bool { return strings.HasPrefix(desc("alpha"), "Version 1.") })

			// From here on the watcher runs: each update is made once.
			for v := 2; v <= 4; v++ {
				want := fmt.Sprintf("Version %d.", v)
				w.write(map[string]string{"alpha/SKILL.md": skillFile("alpha", want+" Use when testing.")})
				eventually(t, "swap "+want, func() bool { return strings.HasPrefix(desc("alpha"), want) })
			}
			// A new skill, then one removed.
			w.write(map[string]string{
				"alpha/SKILL.md": skillFile("alpha", "Version 4. Use when testing."),
				"beta/SKILL.md":  skillFile("beta", "Added. Use when testing."),
			})
			eventually(t, "a skill added by swap", func() bool { return desc("beta") != "" })
			w.write(map[string]string{"beta/SKILL.md": skillFile("beta", "Alone. Use when testing.")})
			eventually(t, "a skill removed by swap", func() bool { return desc("alpha") == "" && strings.HasPrefix(desc("beta"), "Alone.") })
			if got := ids(r.Snapshot().Skills()); len(got) != 1 {
				t.Errorf("library after the swaps: %v, want [beta] (old timestamped folders must not be scanned)", got)
			}

			stop()
		})
	}
}

// TestWatchSwappedRootLink: a root that is itself a symlink swapped to a
// new folder (git-sync's --link) is followed: the new folder's skills
// load and later edits in it are seen.
func TestWatchSwappedRootLink(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	base := t.TempDir()
	writeFile(t, filepath.Join(base, "wt1", "alpha", SkillFile), skillFile("alpha", "Tree 1. Use when testing."))
	root := filepath.Join(base, "current")
	if err := os.Symlink("wt1", root); err != nil {
		t.Fatal(err)
	}
	r := quietRegistry([]string{root})
	stop := watching(t, r, 20*time.Millisecond)
	desc := func() string {
		s, ok := r.Snapshot().Get("alpha")
		if !ok {
			return ""
		}
		return s.Description
	}
	gen := 1
	swap := func(text string) {
		gen++
		wt := fmt.Sprintf("wt%d", gen)
		writeFile(t, filepath.Join(base, wt, "alpha", SkillFile), skillFile("alpha", text))
		swapLink(t, wt, root)
		// git-sync removes the old worktree after the swap; keep it, the
		// harder case: nothing in the watched tree changes.
	}
	retry(t, "a swapped root link to be followed",
		func() { swap("Tree 2. Use when testing.") },
		func() bool { return strings.HasPrefix(desc(), "Tree 2.") })
	swap("Tree 3. Use when testing.")
	eventually(t, "a second swap", func() bool { return strings.HasPrefix(desc(), "Tree 3.") })
	// An edit inside the folder the link now points to.
	writeFile(t, filepath.Join(base, fmt.Sprintf("wt%d", gen), "alpha", SkillFile), skillFile("alpha", "Edited in place. Use when testing."))
	eventually(t, "an edit in the new folder", func() bool { return strings.HasPrefix(desc(), "Edited in place.") })
	stop()
}

// TestWatchRelativeRoots: a root given relative to the working folder
// (`--skills lib`, or a git-sync link there) is watched through its
// parent, ".", whose events fsnotify names "./lib": the root replaced by
// a new folder, or its link swapped, must still be followed.
func TestWatchRelativeRoots(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	base := t.TempDir()
	t.Chdir(base)
	writeFile(t, filepath.Join(base, "lib", "alpha", SkillFile), skillFile("alpha", "Folder 1. Use when testing."))
	writeFile(t, filepath.Join(base, "wt1", "beta", SkillFile), skillFile("beta", "Tree 1. Use when testing."))
	if err := os.Symlink("wt1", "current"); err != nil {
		t.Fatal(err)
	}
	r := quietRegistry([]string{"lib", "current"})
	stop := watching(t, r, 20*time.Millisecond)
	desc := func(id string) string {
		s, ok := r.Snapshot().Get(id)
		if !ok {
			return ""
		}
		return s.Description
	}
	gen := 1
	retry(t, "a relative root folder replaced",
		func() {
			gen++
			os.RemoveAll(filepath.Join(base, "lib"))
			writeFile(t, filepath.Join(base, "lib", "alpha", SkillFile), skillFile("alpha", fmt.Sprintf("Folder %d. Use when testing.", gen)))
		},
		func() bool {
			return strings.HasPrefix(desc("alpha"), "Folder ") && desc("alpha") != "Folder 1. Use when testing."
		})
	writeFile(t, filepath.Join(base, "lib", "alpha", SkillFile), skillFile("alpha", "Edited. Use when testing."))
	eventually(t, "an edit in the new folder", func() bool { return strings.HasPrefix(desc("alpha"), "Edited.") })
	writeFile(t, filepath.Join(base, "wt2", "beta", SkillFile), skillFile("beta", "Tree 2. Use when testing."))
	retry(t, "a relative root link swapped",
		func() { swapLink(t, "wt2", "current") },
		func() bool { return strings.HasPrefix(desc("beta"), "Tree 2.") })
	stop()
}

// A folder link inside a skill swapped between a folder outside the
// library and one inside it (which the library also reaches by its own
// path), as the event loop and the reload's re-walk see it: fsnotify was
// left with a path whose watch it had dropped, and the next Remove of it
// panicked (nil watch), killing the proxy. Each folder is now watched under
// one path, and a link's old watch is removed before its new target's.
func TestWatchLinkSwappedBetweenWatchedFolders(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	skill := filepath.Join(root, "s")
	writeSkill(t, skill, "x\n")
	writeFile(t, filepath.Join(skill, "real", "a.md"), "a")
	link := filepath.Join(skill, "link")
	retarget := func(target string) { t.Helper(); swapLink(t, target, link) }
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	w := testWatcher(t)
	r := quietRegistry([]string{root})
	ws := newWatchState(w)
	r.addWatches(ws, []string{root}, time.Time{})
	event := func() {
		walked := 0
		r.watchTree(ws, link, nil, map[string]bool{}, &walked) // the link's Create event
	}
	for i := range 6 {
		target := outside
		if i%2 == 1 {
			target = "real"
		}
		retarget(target)
		event()
		r.addWatches(ws, []string{root}, time.Time{}) // the reload after it
	}
	// Swaps faster than reloads: several events between two of them.
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		switch rnd.IntN(4) {
		case 0:
			retarget(outside)
		case 1:
			retarget("real")
		case 2:
			event()
		case 3:
			r.addWatches(ws, []string{root}, time.Time{})
		}
	}
	retarget("real")
	r.addWatches(ws, []string{root}, time.Time{})
	// Every folder is watched once, under a path that leads to it.
	byFile := map[string]bool{}
	for _, p := range w.WatchList() {
		info, err := os.Stat(p)
		if err != nil {
			t.Errorf("watched path %s: %v", p, err)
			continue
		}
		id, _ := fileIDOf(info)
		key := fmt.Sprint(id)
		if byFile[key] {
			t.Errorf("folder of %s watched twice", p)
		}
		byFile[key] = true
	}
	for _, want := range []string{root, skill, filepath.Join(skill, "real")} {
		if !slices.Contains(w.WatchList(), want) {
			t.Errorf("%s not watched: %v", want, w.WatchList())
		}
	}
}
