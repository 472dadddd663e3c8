package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// kindOf classifies a resource by the first element of its slash path.
func kindOf(rel string) ResourceKind {
	first, _, nested := strings.Cut(rel, "/")
	if !nested {
		return KindOther // top-level files: LICENSE.txt, files.txt, ...
	}
	switch first {
	case "scripts", "script":
		return KindScript
	case "references", "reference", "docs":
		return KindReference
	case "assets", "asset", "templates":
		return KindAsset
	}
	return KindOther
}

// lister walks one skill folder. Symlinks are followed only while they stay
// inside the folder: a skill must not be able to expose ~/.ssh to a model.
type lister struct {
	dir      *skillDir
	folder   string // the skill's folder name, for messages
	max      int
	res      []Resource
	omitted  int
	problems []Problem
}

// warn records a problem about the resource at p (its path as scanned).
func (l *lister) warn(p, format string, args ...any) {
	l.problems = append(l.problems, Problem{Path: p, Severity: SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

// listResources lists every file in the skill folder except SKILL.md, sorted
// by path. entries is the folder's listing, already read by discovery.
//
// Past max files, scripts are kept first (they are what a model runs), then
// files at the top of the folder, then the rest by path: cut by path
// alone, a large references/ hid scripts/ behind the omitted count. At most
// resourceGather×max files are gathered to choose from.
func listResources(dir *skillDir, folder string, entries []os.DirEntry, max int) ([]Resource, int, []Problem) {
	l := &lister{dir: dir, folder: folder, max: max * resourceGather, res: []Resource{}}
	l.walk(dir.path, "", entries, []string{dir.path})
	if len(l.res) > max {
		rank := func(r Resource) int {
			switch {
			case r.Kind == KindScript:
				return 0
			case !strings.Contains(r.Path, "/"):
				return 1
			}
			return 2
		}
		sort.SliceStable(l.res, func(i, j int) bool {
			if a, b := rank(l.res[i]), rank(l.res[j]); a != b {
				return a < b
			}
			return l.res[i].Path < l.res[j].Path
		})
		l.omitted += len(l.res) - max
		l.res = append([]Resource(nil), l.res[:max]...) // not the gathered rest
	}
	sort.Slice(l.res, func(i, j int) bool { return l.res[i].Path < l.res[j].Path })
	return l.res, l.omitted, l.problems
}

// resourceGather is how many times the listing cap listResources gathers
// to choose the files kept from.
const resourceGather = 4

func (l *lister) add(rel string, size int64) {
	// Discovery stops at the first SKILL.md, so one further down is a file
	// of this skill; say so unless it sits in a resource folder, where it is
	// material the skill ships (a sample or template skill).
	if rel != SkillFile && path.Base(rel) == SkillFile && kindOf(rel) == KindOther {
		l.warn(filepath.Join(l.dir.path, filepath.FromSlash(rel)),
			"%s is inside the skill %q, so it is one of that skill's files, not a skill of its own; move its folder out of %q to load it as a skill",
			SkillFile, l.folder, l.folder)
	}
	if len(l.res) >= l.max {
		l.omitted++
		return
	}
	l.res = append(l.res, Resource{Path: rel, Size: size, Kind: kindOf(rel)})
}

// walk lists dir (shown as rel). stack holds the folders being walked, to
// catch symlinks that lead back up.
func (l *lister) walk(dir, rel string, entries []os.DirEntry, stack []string) {
	for _, e := range entries {
		name := e.Name()
		if (rel == "" && name == SkillFile) || Ignored(name) {
			continue
		}
		p := filepath.Join(dir, name)
		if !utf8.ValidString(name) {
			l.warn(p, "%s; not listed", notUTF8)
			continue
		}
		r := path.Join(rel, name)
		switch t := e.Type(); {
		case t&fs.ModeSymlink != 0:
			l.symlink(p, r, stack)
		case t.IsDir():
			l.subdir(p, r, stack)
		case t.IsRegular():
			info, err := e.Info()
			if err != nil {
				l.warn(p, "cannot stat resource: %v; not listed", pathErr(err))
				continue
			}
			l.add(r, info.Size())
		default:
			l.warn(p, "resource is not a regular file (%s); not listed", t.Type())
		}
	}
}

func (l *lister) subdir(p, r string, stack []string) {
	if len(stack) > maxDepth {
		l.warn(p, "resource folder nests more than %d levels; not listed", maxDepth)
		return
	}
	sub, err := os.ReadDir(p)
	if err != nil {
		l.warn(p, "cannot list resource folder: %v; not listed", pathErr(err))
		return
	}
	l.walk(p, r, sub, append(stack, p))
}

func (l *lister) symlink(p, r string, stack []string) {
	target, err := filepath.EvalSymlinks(p)
	switch {
	case isLoop(err):
		l.warn(p, "resource is a symlink loop; not listed")
		return
	case errors.Is(err, fs.ErrNotExist):
		l.warn(p, "resource is a broken symlink; not listed")
		return
	case err != nil:
		l.warn(p, "cannot follow resource symlink: %v; not listed", pathErr(err))
		return
	}
	real, err := l.dir.real()
	if err != nil {
		l.warn(p, "cannot resolve the skill folder: %v; symlink not listed", pathErr(err))
		return
	}
	if !within(real, target) {
		l.warn(p, "resource is a symlink to %s, outside the skill folder; not listed", target)
		return
	}
	info, err := os.Stat(target)
	if err != nil {
		l.warn(p, "cannot stat resource: %v; not listed", pathErr(err))
		return
	}
	switch {
	case info.IsDir():
		// Symlinks are rare, so resolving the folders above only here is cheap.
		for _, s := range stack {
			if rs, err := filepath.EvalSymlinks(s); err == nil && rs == target {
				l.warn(p, "resource is a symlink loop (points back to %s); not listed", displayRel(real, target))
				return
			}
		}
		l.subdir(p, r, stack)
	case info.Mode().IsRegular():
		l.add(r, info.Size())
	default:
		l.warn(p, "resource is not a regular file (%s); not listed", info.Mode().Type())
	}
}

// displayRel names a folder inside the skill relative to it.
func displayRel(base, p string) string {
	rel, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	if rel == "." {
		return "the skill folder"
	}
	return fmt.Sprintf("%q", filepath.ToSlash(rel))
}
