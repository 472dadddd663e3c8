package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skillrouter/skillrouter/internal/private"
)

// Every conversation directory carries this marker; the sweeper removes only
// directories that have it, so a misconfigured OutputRoot cannot cost data.
const convMarker = ".skillrouter-conversation"

const (
	maxSnapshotEntries = 10000 // entries (files and folders) walked per output-directory snapshot
	snapshotBatch      = 256   // entries read from a folder at a time
	maxListedFiles     = 200   // files reported per execution
)

// convDirs are the directories of one conversation: out is the working
// directory (SKILLROUTER_OUTPUT_DIR), home and tmp back HOME and TMPDIR.
type convDirs struct {
	root, out, home, tmp string
}

var convIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// conversationDirName turns a conversation id into a safe directory name.
// Ids that are not plain tokens are hashed rather than escaped, so two ids
// can never map to the same directory and none can name "..".
func conversationDirName(conv string) string {
	if convIDRE.MatchString(conv) {
		return conv
	}
	if conv == "" {
		// No conversation to share files with: a private directory per call.
		var b [12]byte
		_, _ = rand.Read(b[:])
		return "anon-" + hex.EncodeToString(b[:])
	}
	sum := sha256.Sum256([]byte(conv))
	return "h-" + hex.EncodeToString(sum[:16])
}

// conversationDirs creates (or reuses) the directories of a conversation.
func (p *Provider) conversationDirs(conv string) (*convDirs, error) {
	root := filepath.Join(p.cfg.OutputRoot, conversationDirName(conv))
	d := &convDirs{
		root: root,
		out:  filepath.Join(root, "out"),
		home: filepath.Join(root, "home"),
		tmp:  filepath.Join(root, "tmp"),
	}
	for _, dir := range []string{d.out, d.home, d.tmp} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: conversation directory: %w", err)
		}
	}
	// Checked on every use, not only at start-up: a root removed meanwhile
	// (tmpfiles cleaning /tmp) may have been re-created by someone else.
	if err := checkPrivate(p.cfg.OutputRoot); err != nil {
		return nil, err
	}
	// The marker holds the conversation's last use, for the sweeper: in
	// its content, which a confined script cannot write (the folder
	// holding it is not one of its writable ones), not only in its mtime,
	// which the script's user, the file's owner, can set to any time
	// (Landlock does not restrict utimes) to have the sweeper remove
	// another conversation's folder.
	marker := filepath.Join(root, convMarker)
	now := time.Now()
	if err := os.WriteFile(marker, []byte(strconv.FormatInt(now.UnixNano(), 10)), 0o600); err != nil {
		return nil, fmt.Errorf("sandbox: conversation directory: %w", err)
	}
	_ = os.Chtimes(marker, now, now)
	p.maybeSweep(now)
	return d, nil
}

// maybeSweep removes conversation directories unused for OutputTTL, at most
// once per quarter TTL, on the calling goroutine (cheap: one ReadDir).
func (p *Provider) maybeSweep(now time.Time) {
	ttl := p.cfg.OutputTTL
	if ttl < 0 {
		return
	}
	last := p.lastSweep.Load()
	if now.UnixNano()-last < int64(ttl/4) || !p.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	entries, err := os.ReadDir(p.cfg.OutputRoot)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(p.cfg.OutputRoot, e.Name())
		used, age := filepath.Join(dir, convMarker), ttl
		if strings.HasPrefix(e.Name(), helpPrefix) {
			// A --help-json run's scratch folder, left by a process that
			// stopped during the run (removed at its end otherwise); a run
			// lasts at most exec.timeout.
			used, age = dir, max(ttl, time.Hour)
		}
		last, err := lastUse(used)
		if err != nil || now.Sub(last) < age {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			p.log.Warn("sandbox: removing old conversation directory", "dir", dir, "err", err)
		}
	}
}

// lastUse is when the conversation whose marker (or --help-json folder)
// is at p was last used: the time the proxy wrote into the marker, or its
// mtime for a folder or a marker an older version left empty.
func lastUse(p string) (time.Time, error) {
	info, err := os.Stat(p)
	if err != nil {
		return time.Time{}, err
	}
	if info.Mode().IsRegular() && info.Size() > 0 && info.Size() < 64 {
		if b, err := os.ReadFile(p); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return time.Unix(0, n), nil
			}
		}
	}
	return info.ModTime(), nil
}

// fileState is what a snapshot remembers of one file.
type fileState struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

// FileChange is a file an execution created or modified in its output directory.
type FileChange struct {
	Path   string `json:"path"` // slash path relative to the output directory
	Size   int64  `json:"size"`
	Status string `json:"status"` // created | modified
}

// snapshot records the files under dir without following symlinks. It
// visits at most maxSnapshotEntries entries, folders included, and reads
// each folder in batches: the script owns dir, and a tree of a million
// empty folders, or one folder of a million files, would otherwise cost the
// proxy time and memory outside the script's timeout, before and after
// every later execution of the conversation. complete is false when the
// budget ran out, or folders nested deeper than maxSnapshotDepth.
//
// Each folder is opened from its parent's descriptor (os.Root), never by
// its path: a script of another execution of the conversation, running
// meanwhile, can turn a folder the walk listed into a symlink to anywhere
// before the walk opens it, and the proxy would list, and report, the
// files there.
func snapshot(dir string) (files map[string]fileState, complete bool) {
	files = map[string]fileState{}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return files, true
	}
	defer root.Close()
	w := snapshotWalk{files: files, complete: true}
	w.walk(root, "", 0)
	return files, w.complete
}

// maxSnapshotDepth bounds how deep the snapshot walks: it holds two
// descriptors per level.
const maxSnapshotDepth = 128

type snapshotWalk struct {
	files    map[string]fileState
	visited  int
	complete bool
}

// walk records the files in the folder r, rel below the output folder
// (depth levels); false when the budget ran out.
func (w *snapshotWalk) walk(r *os.Root, rel string, depth int) bool {
	f, err := r.Open(".")
	if err != nil {
		return true // unreadable folders are skipped, not fatal
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(snapshotBatch)
		for _, e := range ents {
			if w.visited >= maxSnapshotEntries {
				w.complete = false
				return false
			}
			w.visited++
			name := e.Name()
			p := path.Join(rel, name)
			if e.IsDir() {
				if depth >= maxSnapshotDepth {
					w.complete = false
					continue
				}
				// Opened from r: a symlink that replaced the folder
				// meanwhile and leads out of it is refused.
				sub, err := r.OpenRoot(name)
				if err != nil {
					continue
				}
				more := w.walk(sub, p, depth+1)
				sub.Close()
				if !more {
					return false
				}
				continue
			}
			info, err := r.Lstat(name)
			if err != nil || info.IsDir() {
				continue
			}
			w.files[p] = fileState{size: info.Size(), mtime: info.ModTime(), mode: info.Mode()}
		}
		if err != nil || len(ents) == 0 {
			return true
		}
	}
}

// diffFiles lists files created or changed between two snapshots, by path.
func diffFiles(before, after map[string]fileState) (changes []FileChange, truncated bool) {
	paths := make([]string, 0, len(after))
	for p := range after {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		a := after[p]
		status := ""
		if b, ok := before[p]; !ok {
			status = "created"
		} else if b != a {
			status = "modified"
		}
		if status == "" {
			continue
		}
		if len(changes) == maxListedFiles {
			return changes, true
		}
		changes = append(changes, FileChange{Path: p, Size: a.size, Status: status})
	}
	return changes, false
}

// errOutputInsideSkill guards against an OutputRoot placed inside a skill:
// the script's writable directory would then be the skill folder itself.
var errOutputInsideSkill = errors.New("the output directory lies inside the skill folder")

// checkPrivate refuses an output root that another user could have planted
// or can write to: the default lies in the shared /tmp, and whoever can
// write there could otherwise prepare a conversation's HOME (a Python .pth
// file, an .npmrc) and have the operator's scripts run its code.
func checkPrivate(dir string) error {
	if err := private.Check(dir); err != nil {
		return fmt.Errorf("sandbox: output root: %w; set exec.output_dir to a folder of this user's that no one else can write (one that does not exist yet is created 0700)", err)
	}
	return nil
}

// separateFromLibrary refuses an output root inside a library root, equal
// to one, or holding one: scripts write beneath the output root, and a
// SKILL.md written there would be loaded as a skill of every conversation.
// Paths are compared with their symbolic links resolved as far as they
// exist (the output root may not exist yet).
func separateFromLibrary(out string, roots []string) error {
	o := resolvedPath(out)
	for _, root := range roots {
		r := resolvedPath(root)
		_, inside := within(r, o)
		_, holds := within(o, r)
		if inside || holds {
			return fmt.Errorf("sandbox: exec.output_dir %s overlaps the skill library at %s: a script's files there would be loaded as skills; choose a folder outside every skill root", out, root)
		}
	}
	return nil
}

// resolvedPath is p absolute and clean, with the symbolic links of its
// longest existing prefix resolved.
func resolvedPath(p string) string {
	p, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}
