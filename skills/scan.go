package skills

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// SkillFile is the file that makes a folder a skill.
const SkillFile = "SKILL.md"

// Options bounds a scan. Zero values mean the defaults.
type Options struct {
	MaxFileSize  int64 // bytes of SKILL.md read at most; default 1 MiB
	MaxBodySize  int64 // default 512 KiB; a larger body is an error
	MaxResources int   // files listed per skill folder; default 1000
	// Conventional, when not nil, says the roots were found by convention
	// (DefaultRoots, which reads only those Root.Check accepts), and lists
	// them as DefaultRootCandidates gives them: each with the folder its
	// convention starts from. A folder below such a root on the way to a
	// skill, the skill folder included, that Root.Check's rule refuses
	// from that same folder down (another user's, writable by other
	// users, a link to such a place) is skipped with a warning, since
	// whoever can change it chooses what this user's prompts get. Checked
	// from where the root's own check starts, a relative link below the
	// root that climbs back into the project (or home) folder is judged
	// as the root is. Inside a skill folder every file and folder listed
	// follows the same rule, or the skill is not loaded (listResources):
	// its scripts run as this user. A root scanned that the list does not
	// hold is checked from / down, the strictest start; a listed Root
	// without a convention (one given with --skills) is not checked.
	Conventional []Root
}

// convention is the Root of Conventional that root is: how the folders
// below it are checked (Root.checkBelow). With Conventional nil, none.
func (o Options) convention(root string) Root {
	r := Root{Path: root}
	if o.Conventional == nil {
		return r
	}
	for _, c := range o.Conventional {
		if filepath.Clean(c.Path) == filepath.Clean(root) {
			return c
		}
	}
	r.base = string(filepath.Separator)
	return r
}

const (
	defaultMaxFileSize  = 1 << 20
	defaultMaxBodySize  = 512 << 10
	defaultMaxResources = 1000
	// maxDepth bounds how deep folders nest below a root or a skill; real
	// libraries nest two levels, so hitting this means a runaway tree.
	maxDepth = 16
)

// maxFolders bounds the folders scanned (and watched) below one root: a
// 10,000-skill library has a few thousand outside its skill folders, and a
// symlink to / would otherwise walk the whole file system. A variable for
// the tests.
var maxFolders = 50_000

func (o Options) withDefaults() Options {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = defaultMaxFileSize
	}
	if o.MaxBodySize <= 0 {
		o.MaxBodySize = defaultMaxBodySize
	}
	if o.MaxResources <= 0 {
		o.MaxResources = defaultMaxResources
	}
	return o
}

// Ignored reports names (of files or folders) that are never skills or
// resources: hidden ones (VCS and editor state, .env files), dependency
// trees and caches. Everything that reads a skill's files by path applies
// it too, so what is not a resource cannot be read another way.
func Ignored(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules" || name == "__pycache__"
}

// job is a skill folder found by discovery, parsed later by a worker.
type job struct {
	root    string
	id      string
	dir     string
	entries []os.DirEntry
	// shadowed lists SKILL.md paths in later roots hidden by this one.
	// Written by discovery only; read after the workers are done.
	shadowed []string
	conv     Root   // the convention of its root (Options.Conventional)
	skill    *Skill // written by the worker that took the job
	// refused, written by the worker instead of skill, is the file that
	// keeps a skill found by convention out (listResources).
	refused *refusal
}

// Load scans roots in order and never fails: problems are attached to skills
// (or returned by Problems for issues not tied to one skill). When ctx ends
// early the snapshot is incomplete and Err reports why.
//
// Discovery walks the roots on this goroutine and streams each skill folder
// to a bounded pool of workers that read, parse and list it, so directory
// listing and parsing overlap. Output order does not depend on scheduling:
// skills are sorted by id at the end.
func Load(ctx context.Context, roots []string, opts Options) *Snapshot {
	began := time.Now()
	opts = opts.withDefaults()
	work := make(chan *job, 64)
	var wg sync.WaitGroup
	for range min(max(runtime.GOMAXPROCS(0), 2), 8) {
		wg.Go(func() {
			buf := make([]byte, 64<<10)
			for j := range work {
				if ctx.Err() == nil {
					j.skill = loadSkill(j, opts, buf)
				}
			}
		})
	}
	d := &discoverer{ctx: ctx, work: work, byID: map[string]*job{}, opts: opts}
	d.discover(roots)
	close(work)
	wg.Wait()

	list := make([]*Skill, 0, len(d.jobs))
	for _, j := range d.jobs {
		if j.refused != nil {
			d.refused(j)
			continue
		}
		s := j.skill
		if s == nil {
			continue // cancelled before a worker got to it
		}
		if len(j.shadowed) > 0 {
			for _, other := range j.shadowed {
				s.Problems = append(s.Problems, Problem{Path: s.Path, Severity: SeverityWarning,
					Message: fmt.Sprintf("skill id %q is also defined at %s; the earlier root wins, so that copy is ignored", j.id, other)})
			}
			sortProblems(s.Problems)
		}
		list = append(list, s)
	}
	warnSharedNames(list)
	snap := newSnapshot(roots, list, d.problems)
	snap.began = began
	snap.err = ctx.Err()
	if snap.err != nil {
		snap.addLibraryProblem(Problem{Path: strings.Join(roots, string(os.PathListSeparator)), Severity: SeverityError,
			Message: fmt.Sprintf("scan stopped early: %v; the library is incomplete", snap.err)})
	}
	return snap
}

// warnSharedNames warns on each loaded skill whose frontmatter name another
// loaded skill has too: Resolve (load_skill, `skills show`) finds neither by
// an ambiguous name, so only the full id reaches them. Names are compared as
// written, as Resolve first compares them. Skipped skills are not in the
// library, so they take no name from anyone.
func warnSharedNames(list []*Skill) {
	byName := map[string][]*Skill{}
	for _, s := range list {
		if !s.Skipped && s.Name != "" {
			byName[s.Name] = append(byName[s.Name], s)
		}
	}
	for name, group := range byName {
		if len(group) < 2 {
			continue
		}
		slices.SortFunc(group, func(a, b *Skill) int { return strings.Compare(a.ID, b.ID) })
		for _, s := range group {
			var others []string
			for _, o := range group {
				if o != s {
					others = append(others, fmt.Sprintf("%q (%s)", o.ID, o.Path))
				}
			}
			s.Problems = append(s.Problems, Problem{Path: s.Path, Line: s.nameLine, Severity: SeverityWarning,
				Message: fmt.Sprintf("name %q is also the name of %s; a skill is found by its name only when no other skill has it, so mention or load this skill by its full id %q",
					name, strings.Join(others, ", "), s.ID)})
			sortProblems(s.Problems)
		}
	}
}

type discoverer struct {
	ctx      context.Context
	work     chan<- *job
	jobs     []*job
	byID     map[string]*job
	problems []Problem
	folders  int // listed below the root being scanned (maxFolders)
	opts     Options
	// conv is the convention of the root being scanned: the folders below
	// it must pass its checkBelow (Options.Conventional).
	conv Root
}

func (d *discoverer) discover(roots []string) {
	var seen []os.FileInfo
	for _, root := range roots {
		if d.ctx.Err() != nil {
			return
		}
		info, err := os.Stat(root)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			d.problem(root, SeverityError, "skills root does not exist")
			continue
		case err != nil:
			d.problem(root, SeverityError, "cannot read skills root: %v", pathErr(err))
			continue
		case !info.IsDir():
			d.problem(root, SeverityError, "skills root is a file, not a directory")
			continue
		}
		if k := slices.IndexFunc(seen, func(prev os.FileInfo) bool { return prev != nil && os.SameFile(prev, info) }); k >= 0 {
			d.problem(root, SeverityWarning, "skills root is the same directory as %s; scanned once", roots[k])
			seen = append(seen, nil)
			continue
		}
		seen = append(seen, info)
		d.discoverRoot(root)
	}
}

// refused warns that j's skill is not loaded, at the path that keeps it out,
// as a folder on the way would be: left out of the library, not a skipped
// skill of it. Its id stays taken, as a skill's with errors does.
func (d *discoverer) refused(j *job) {
	r := j.refused
	msg := fmt.Sprintf("not read: %v; a skill found by convention is read only when no user but you and root can change any of its files, so the skill %q is not loaded (%s, or give its root with --skills to read it anyway)",
		r.err, j.id, r.fix)
	if len(j.shadowed) > 0 {
		msg += fmt.Sprintf("; its id stays taken, so %s is not loaded either", strings.Join(j.shadowed, ", "))
	}
	d.problem(r.path, SeverityWarning, "%s", msg)
}

// emit hands a skill folder to the workers unless an earlier root already
// has that id (the earlier one wins; the warning is added after the scan).
func (d *discoverer) emit(j *job) {
	if first, ok := d.byID[j.id]; ok {
		first.shadowed = append(first.shadowed, filepath.Join(j.dir, SkillFile))
		return
	}
	d.byID[j.id] = j
	d.jobs = append(d.jobs, j)
	d.work <- j
}

func (d *discoverer) problem(p string, sev Severity, format string, args ...any) {
	d.problems = append(d.problems, Problem{Path: p, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

// readable checks dir, the root or a folder below it, with the root's
// convention (Root.checkBelow), and warns when it is not read.
func (d *discoverer) readable(dir string) bool {
	err := d.conv.checkBelow(dir)
	if err != nil {
		d.problem(dir, SeverityWarning, "not read: %v; a skills folder found by convention is read only when no user but you and root can change it (give its root with --skills to read it anyway)", err)
	}
	return err == nil
}

func (d *discoverer) discoverRoot(root string) {
	// The root passed its check when it was chosen (DefaultRoots); it is
	// checked again for every scan, as the folders below it are, since a
	// reload may find it changed.
	d.conv = d.opts.convention(root)
	if !d.readable(root) {
		return
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		d.problem(root, SeverityError, "cannot list skills root: %v", pathErr(err))
		return
	}
	if hasSkillFile(entries) {
		// The root itself is one skill (--skills path/to/one-skill); its id is
		// its folder name, as it would be in the parent library.
		id := filepath.Base(root)
		if abs, err := filepath.Abs(root); err == nil {
			id = filepath.Base(abs)
		}
		if !utf8.ValidString(id) {
			d.problem(root, SeverityError, "%s; not loaded", notUTF8)
			return
		}
		d.emit(&job{root: root, id: id, dir: root, entries: entries, conv: d.conv})
		return
	}
	d.folders = 0
	d.walk(root, root, "", entries, []string{root})
}

// walk looks for skill folders below dir. ancestors holds the folders on the
// current path so a symlink back up the tree is recognised as a loop.
func (d *discoverer) walk(root, dir, rel string, entries []os.DirEntry, ancestors []string) {
	for _, e := range entries {
		if d.ctx.Err() != nil {
			return
		}
		name := e.Name()
		if Ignored(name) {
			continue
		}
		child := filepath.Join(dir, name)
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := os.Stat(child)
			if err != nil {
				if isLoop(err) {
					d.problem(child, SeverityWarning, "symlink loop; skipped")
				} else if errors.Is(err, fs.ErrNotExist) {
					d.problem(child, SeverityWarning, "broken symlink; skipped")
				} else {
					d.problem(child, SeverityWarning, "cannot follow symlink: %v; skipped", pathErr(err))
				}
				continue
			}
			if !target.IsDir() {
				continue
			}
			if anc := loopsTo(target, ancestors); anc != "" {
				d.problem(child, SeverityWarning, "symlink loop: points back to %s; skipped", anc)
				continue
			}
		} else if !e.IsDir() {
			if strings.EqualFold(name, SkillFile) {
				d.problem(child, SeverityError, "found %s but the file must be named exactly %s; not loaded", name, SkillFile)
			}
			continue
		}
		if len(ancestors) > maxDepth {
			d.problem(child, SeverityWarning, "folder nests more than %d levels below its root; not scanned", maxDepth)
			continue
		}
		if !utf8.ValidString(name) {
			// The id would be written with U+FFFD in every request and
			// tool, and no request could name the skill again.
			d.problem(child, SeverityError, "%s; not scanned", notUTF8)
			continue
		}
		if d.folders >= maxFolders {
			if d.folders == maxFolders {
				d.problem(root, SeverityWarning, "more than %d folders below this root: stopped scanning at %s (a symlink to a large tree, such as /?); skills further on are not loaded", maxFolders, child)
				d.folders++ // said once
			}
			return
		}
		d.folders++
		if !d.readable(child) {
			continue
		}
		sub, err := os.ReadDir(child)
		if err != nil {
			d.problem(child, SeverityWarning, "cannot list folder: %v; skipped", pathErr(err))
			continue
		}
		childRel := path.Join(rel, name)
		if hasSkillFile(sub) {
			d.emit(&job{root: root, id: childRel, dir: child, entries: sub, conv: d.conv})
			continue
		}
		d.walk(root, child, childRel, sub, append(ancestors, child))
	}
}

// notUTF8 says why a folder or file of another encoding's name is left
// out: ids and resource paths travel in JSON, which holds UTF-8 only.
const notUTF8 = "name is not valid UTF-8 (ids and resource paths travel in JSON, which holds only UTF-8): rename it"

func hasSkillFile(entries []os.DirEntry) bool {
	// ReadDir sorts by name, so a binary search would do; the lists are short.
	for _, e := range entries {
		if e.Name() == SkillFile {
			return true
		}
	}
	return false
}

// loopsTo returns the ancestor folder that target is, if any.
func loopsTo(target os.FileInfo, ancestors []string) string {
	for _, a := range ancestors {
		if ai, err := os.Stat(a); err == nil && os.SameFile(ai, target) {
			return a
		}
	}
	return ""
}

func isLoop(err error) bool {
	return err != nil && (errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "too many links") ||
		strings.Contains(err.Error(), "too many levels of symbolic links"))
}

// pathErr strips the path from an *fs.PathError: problems already name the
// path, and repeating it makes messages hard to read.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// skillDir is a skill folder whose resolved path is computed only when a
// symlink needs checking: EvalSymlinks costs a syscall per path element, and
// most skills contain no symlinks at all.
type skillDir struct {
	path     string
	resolved bool
	realPath string
	err      error
}

func (d *skillDir) real() (string, error) {
	if !d.resolved {
		d.realPath, d.err = filepath.EvalSymlinks(d.path)
		d.resolved = true
	}
	return d.realPath, d.err
}

// loadSkill reads, parses and validates one skill folder and lists its
// resources; nil, with j.refused, when a file of a skill found by
// convention keeps it out.
func loadSkill(j *job, opts Options, buf []byte) *Skill {
	file := filepath.Join(j.dir, SkillFile)
	dir := &skillDir{path: j.dir}

	// Listed first: the listing checks every file of a skill found by
	// convention, and SKILL.md is not read when one fails.
	res, omitted, probs, refused := listResources(dir, path.Base(j.id), j.entries, opts.MaxResources, j.conv)
	if refused != nil {
		j.refused = refused
		return nil
	}

	var s *Skill
	text, err := readSkillFile(file, entryType(j.entries, SkillFile), dir, opts.MaxFileSize, buf)
	if err != nil {
		s = &Skill{Path: file, Type: TypeContextual, Resources: []Resource{},
			Problems: []Problem{{Path: file, Severity: SeverityError, Message: err.Error()}}, Skipped: true}
	} else {
		s = parse(file, text, path.Base(j.id), opts.MaxBodySize)
	}
	s.ID, s.Dir, s.Root = j.id, j.dir, j.root
	s.folder, _ = os.Stat(j.dir)
	s.conv = j.conv
	s.Resources, s.ResourcesOmitted = res, omitted
	s.Problems = append(s.Problems, probs...)
	sortProblems(s.Problems)
	s.Skipped = hasError(s.Problems)
	return s
}

// entryType is the type bits of the named entry as the directory listing
// reported them (no extra syscall).
func entryType(entries []os.DirEntry, name string) fs.FileMode {
	for _, e := range entries {
		if e.Name() == name {
			return e.Type()
		}
	}
	return fs.ModeIrregular
}

// fileHandle is what readSkillFile needs from an open file.
type fileHandle interface {
	io.ReadCloser
	Stat() (fs.FileInfo, error)
}

// openFile is os.Open; tests swap it to simulate read failures that running
// as root would otherwise make impossible.
var openFile = func(name string) (fileHandle, error) { return os.Open(name) }

// readSkillFile reads SKILL.md with a hard bound: the size is checked before
// reading (a 50 MB file is never read) and the read itself is limited in case
// the file grows or lies about its size. typ is the directory entry's type:
// a plain file is opened straight away (open+fstat, the common case); anything
// else is inspected first, because opening a FIFO would block forever.
func readSkillFile(file string, typ fs.FileMode, dir *skillDir, limit int64, buf []byte) (string, error) {
	if typ&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(file)
		switch {
		case isLoop(err):
			return "", fmt.Errorf("%s is a symlink loop", SkillFile)
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("%s is a broken symlink", SkillFile)
		case err != nil:
			return "", fmt.Errorf("cannot follow %s symlink: %v", SkillFile, pathErr(err))
		}
		real, err := dir.real()
		if err != nil {
			return "", fmt.Errorf("cannot resolve the skill folder: %v", pathErr(err))
		}
		if !within(real, target) {
			// Following it could put any file on the machine into a prompt.
			return "", fmt.Errorf("%s is a symlink to %s, outside the skill folder; refusing to read it", SkillFile, target)
		}
	}
	if !typ.IsRegular() {
		info, err := os.Stat(file)
		if err != nil {
			return "", fmt.Errorf("cannot read %s: %v", SkillFile, pathErr(err))
		}
		if err := checkSkillFileInfo(info, limit); err != nil {
			return "", err
		}
	}
	f, err := openFile(file)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", SkillFile, pathErr(err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", SkillFile, pathErr(err))
	}
	if err := checkSkillFileInfo(info, limit); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(int(info.Size()))
	n, err := io.CopyBuffer(&b, io.LimitReader(f, limit+1), buf)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", SkillFile, pathErr(err))
	}
	if n > limit {
		return "", fmt.Errorf("%s is larger than the limit of %s — move long material into references/ files", SkillFile, byteSize(limit))
	}
	return b.String(), nil
}

func checkSkillFileInfo(info fs.FileInfo, limit int64) error {
	switch {
	case info.IsDir():
		return fmt.Errorf("%s is a directory, not a file", SkillFile)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s)", SkillFile, info.Mode().Type())
	case info.Size() > limit:
		return fmt.Errorf("%s is %s; the limit is %s — move long material into references/ files", SkillFile, byteSize(info.Size()), byteSize(limit))
	}
	return nil
}

// within reports whether p is dir or inside it (both already resolved).
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}
