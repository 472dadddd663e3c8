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

	"github.com/skillrouter/skillrouter/internal/private"
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
	// conv is the convention of the skill's root. Found by convention,
	// every entry the walk visits must pass its rule (checkEntry); the
	// first that does not ends the walk, in refused.
	conv     Root
	refused  *refusal
	unlisted int // entries checkUnlisted has read (maxUnlistedEntries)
}

// refusal is the file or folder of a skill found by convention that
// another user owns or can change, which keeps the whole skill out: its
// scripts run as this user (skill_execute) and its files go into prompts
// (read_skill_resource), so whoever can change one chooses what they do.
type refusal struct {
	path string
	err  error
	fix  string // what the user can do about it
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
//
// With conv a root's convention (Options.Conventional), every entry walked,
// SKILL.md included, is checked as it is met (checkEntry); the first that
// fails is returned as a refusal, and nothing else.
func listResources(dir *skillDir, folder string, entries []os.DirEntry, max int, conv Root) ([]Resource, int, []Problem, *refusal) {
	l := &lister{dir: dir, folder: folder, max: max * resourceGather, res: []Resource{}, conv: conv}
	l.walk(dir.path, "", entries, []string{dir.path})
	if l.refused != nil {
		return nil, 0, nil, l.refused
	}
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
	return l.res, l.omitted, l.problems, nil
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
		if l.refused != nil {
			return
		}
		name := e.Name()
		if Ignored(name) {
			if l.conv.base != "" {
				if l.checkUnlisted(filepath.Join(dir, name), e, len(stack)); l.refused != nil {
					return
				}
			}
			continue
		}
		p := filepath.Join(dir, name)
		var info fs.FileInfo // e.Info(), when checkEntry took it
		if l.conv.base != "" {
			if info = l.checkEntry(p, e); l.refused != nil {
				return
			}
		}
		if rel == "" && name == SkillFile {
			continue
		}
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
			if info == nil {
				var err error
				if info, err = e.Info(); err != nil {
					l.warn(p, "cannot stat resource: %v; not listed", pathErr(err))
					continue
				}
			}
			l.add(r, info.Size())
		default:
			l.warn(p, "resource is not a regular file (%s); not listed", t.Type())
		}
	}
}

func (l *lister) subdir(p, r string, stack []string) {
	if len(stack) > maxDepth {
		if l.conv.base != "" {
			l.tooDeep(p, maxDepth, "move its files up")
			return
		}
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

// checkEntry applies the rule of the skill's root's convention to p, an
// entry of a folder the scan has checked (the skill folder, a folder in
// it): another user's entry, or one its group or everyone can write (a
// sticky folder too: anyone may add scripts to it), is refused
// (private.CheckEntry, on the Lstat the listing takes anyway); a symlink
// is followed as the kernel follows it, and what it leads to checked from
// where the convention starts (private.CheckPath), wherever it leads: a
// link out of the folder is not listed, but the rule is one for every
// link. A broken link or a loop is left to the listing to report. It
// returns the entry's Lstat, for the listing to reuse.
func (l *lister) checkEntry(p string, e os.DirEntry) fs.FileInfo {
	info, err := e.Info()
	if !l.checkable(p, err) {
		return nil
	}
	if err := private.CheckEntry(p, info); err != nil {
		fix := "make it yours or remove it"
		if _, other := private.Foreign(info); !other {
			fix = "chmod go-w " + p
		}
		l.refused = &refusal{path: p, err: err, fix: fix}
		return info
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if err := l.conv.checkBelow(p); err != nil && !errors.Is(err, fs.ErrNotExist) && !isLoop(err) {
			l.refused = &refusal{path: p, err: err, fix: "fix what it names, or remove the link"}
		}
	}
	return info
}

// Bounds of checkUnlisted's walk of the folders the listing leaves out: a
// skill found by convention with more, or deeper, is not loaded, since
// what the walk did not reach is not checked.
const (
	maxUnlistedDepth   = 64
	maxUnlistedEntries = 100_000
)

// checkUnlisted applies checkEntry's rule to p, an entry the listing leaves
// out (hidden files, node_modules, __pycache__; Ignored), and to
// everything in it when it is a folder: interpreters load code from them
// (a .pyc in __pycache__ runs in place of its source, a module in
// node_modules, a .env a script reads its settings from), so whoever could
// change them chooses what a script does as this user. depth is how many
// folders p lies below the skill folder.
func (l *lister) checkUnlisted(p string, e os.DirEntry, depth int) {
	info := l.checkEntry(p, e)
	if l.refused != nil || info == nil || !info.IsDir() {
		return // a link is checked where it leads by checkEntry
	}
	if depth >= maxUnlistedDepth {
		l.tooDeep(p, maxUnlistedDepth, "remove it")
		return
	}
	sub, err := os.ReadDir(p)
	if !l.checkable(p, err) {
		return
	}
	for _, s := range sub {
		if l.unlisted++; l.unlisted > maxUnlistedEntries {
			l.refused = &refusal{path: p, err: fmt.Errorf("more than %d files in folders the listing leaves out (%s among them), more than the check reads", maxUnlistedEntries, p),
				fix: "remove what the skill does not need"}
			return
		}
		if l.checkUnlisted(filepath.Join(p, s.Name()), s, depth+1); l.refused != nil {
			return
		}
	}
}

// checkable reports whether err, from reading p for the check, leaves it
// to check: p gone since it was listed is passed over (nothing left to
// read), and any other error refuses the skill, since p cannot be checked.
func (l *lister) checkable(p string, err error) bool {
	switch {
	case err == nil:
		return true
	case !errors.Is(err, fs.ErrNotExist):
		l.refused = &refusal{path: p, err: fmt.Errorf("cannot check %s: %w", p, pathErr(err)), fix: "make it readable"}
	}
	return false
}

// tooDeep refuses the skill for folder p, nested deeper than limit levels
// below the skill folder: what lies there is not walked, so not checked,
// and skill_execute would still run it.
func (l *lister) tooDeep(p string, limit int, fix string) {
	l.refused = &refusal{path: p, err: fmt.Errorf("%s nests more than %d levels below the skill folder, deeper than the check goes", p, limit), fix: fix}
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
