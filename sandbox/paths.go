package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/skillrouter/skillrouter/skills"
)

// resolved is a model-supplied path mapped to a real location inside a skill.
type resolved struct {
	root  string        // the skill folder with symlinks evaluated
	abs   string        // the target with symlinks evaluated; inside root
	rel   string        // abs relative to root, slash-separated ("." for root)
	name  string        // the path as the model gave it, cleaned (for messages)
	skill *skills.Skill // whose folder root must still be (see openRoot); nil: not checked
}

// resolveSkillPath is resolveInSkill in skill s's folder, which must be
// the folder the scan read: a folder swapped for a symlink since resolves
// elsewhere. Reads check it again when they open it (openRoot).
//
// In a library found by convention the scan loads no skill with a file or
// folder another user owns or can write, and only a file's owner (this
// user or root, then) can change that; the watcher rescans on such a
// change. But not before its debounce, nor where no watcher runs or a
// folder could not be watched: so the one path read or run is checked
// again here (Skill.CheckFile), a few Lstats against a process start.
// What a script imports is left to the scan.
func resolveSkillPath(s *skills.Skill, rel string) (resolved, *toolError) {
	r, e := resolveInSkill(s.Dir, rel)
	r.skill = s
	if e != nil {
		return r, e
	}
	if fi, err := os.Stat(r.root); err != nil || !s.SameFolder(fi) {
		return r, newError(CodeReadFailed, "%v", errFolderChanged)
	}
	if err := s.CheckFile(r.name); err != nil {
		e := newError(CodeReadFailed, "%s is not read: %v; a skill found by convention is read only while no user but its owner and root can change its files (the library drops it on the next reload)", r.name, err)
		e.Path = r.name
		return r, e
	}
	return r, nil
}

// errFolderChanged: the skill's folder is no longer the one the scan read.
var errFolderChanged = errors.New("the skill folder was replaced since the library was read; it is read again on the next reload")

// openRoot opens r's skill folder as an os.Root, so that no path opened in
// it leads out, and checks it is the folder the scan read: a folder swapped
// for a symlink after the scan resolves (and would open) elsewhere, where
// os.Root's confinement starts too late.
func openRoot(r resolved) (*os.Root, error) {
	root, err := os.OpenRoot(r.root)
	if err != nil {
		return nil, err
	}
	if r.skill != nil {
		if fi, err := root.Stat("."); err != nil || !r.skill.SameFolder(fi) {
			_ = root.Close()
			return nil, errFolderChanged
		}
	}
	return root, nil
}

// resolveInSkill maps rel, a path relative to the skill folder dir, to a real
// path inside it. "..", absolute paths and symlinks whose target lies outside
// the folder are refused: containment is checked on the fully resolved path,
// so a chain of links cannot step out either. Opening the result through an
// os.Root keeps a link swapped in after this check from escaping.
func resolveInSkill(dir, rel string) (resolved, *toolError) {
	var r resolved
	if strings.IndexByte(rel, 0) >= 0 {
		return r, newError(CodeInvalidPath, "path contains a NUL byte")
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.VolumeName(rel) != "" {
		e := newError(CodePathOutsideSkill, "absolute paths are refused; give a path relative to the skill folder, e.g. scripts/run.py")
		e.Path = rel
		return r, e
	}
	clean := path.Clean(filepath.ToSlash(rel))
	r.name = clean
	if clean == ".." || strings.HasPrefix(clean, "../") {
		e := newError(CodePathOutsideSkill, "%q leads outside the skill folder", rel)
		e.Path = rel
		return r, e
	}
	// Absolute: the script runs in another working directory, and a library
	// root may have been given relative.
	abs, err := filepath.Abs(dir)
	if err != nil {
		return r, newError(CodeReadFailed, "the skill folder is not usable: %v", err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return r, newError(CodeReadFailed, "the skill folder is not readable: %v", errors.Unwrap(err))
	}
	r.root = root
	abs, err = filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(clean)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			e := newError(CodeNotFound, "%s does not exist in the skill folder", clean)
			e.Path = clean
			return r, e
		}
		e := newError(CodeReadFailed, "%s: %v", clean, errors.Unwrap(err))
		e.Path = clean
		return r, e
	}
	inside, ok := within(root, abs)
	if !ok {
		e := newError(CodePathOutsideSkill, "%s is a symbolic link (or passes through one) that leads outside the skill folder", clean)
		e.Path = clean
		return r, e
	}
	// Hidden files (.env, .git/) and dependency trees are not resources:
	// neither the path as written nor where it leads may pass through one.
	if ignoredSegment(clean) || ignoredSegment(inside) {
		e := newError(CodeNotFound, "%s is not a resource of the skill (hidden files and dependency folders are left out)", clean)
		e.Path = clean
		return r, e
	}
	r.abs, r.rel = abs, inside
	return r, nil
}

// ignoredSegment reports whether a slash path passes through a name the
// library leaves out (skills.Ignored).
func ignoredSegment(rel string) bool {
	for seg := range strings.SplitSeq(rel, "/") {
		if seg != "." && seg != "" && skills.Ignored(seg) {
			return true
		}
	}
	return false
}

// within reports p relative to root, and whether p is root or beneath it.
func within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
