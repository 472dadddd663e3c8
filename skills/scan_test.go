package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// writeSkill creates dir/SKILL.md with a valid frontmatter named after dir.
func writeSkill(t testing.TB, dir, body string) string {
	t.Helper()
	name := filepath.Base(dir)
	return writeFile(t, filepath.Join(dir, SkillFile), "---\nname: "+name+"\ndescription: The "+name+" skill. Use when testing.\n---\n"+body)
}

func writeFile(t testing.TB, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func ids(list []*Skill) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

// findProblem returns the first problem whose path ends with pathSuffix and
// whose message contains msg.
func findProblem(ps []Problem, pathSuffix, msg string) (Problem, bool) {
	for _, p := range ps {
		if strings.HasSuffix(p.Path, pathSuffix) && strings.Contains(p.Message, msg) {
			return p, true
		}
	}
	return Problem{}, false
}

func mustProblem(t *testing.T, ps []Problem, sev Severity, pathSuffix, msg string) Problem {
	t.Helper()
	p, ok := findProblem(ps, pathSuffix, msg)
	if !ok {
		t.Fatalf("no problem at *%s containing %q; got:\n%s", pathSuffix, msg, problemList(ps))
	}
	if p.Severity != sev {
		t.Fatalf("problem %s has severity %s, want %s", p, p.Severity, sev)
	}
	return p
}

func TestLoadFixtureLibrary(t *testing.T) {
	snap := loadFixture(t)
	wantAll := []string{
		"broken/bad-name", "broken/bad-types", "broken/crlf-bom", "broken/duplicate-key", "broken/empty",
		"broken/invalid-yaml", "broken/long-description", "broken/missing-frontmatter", "broken/no-name",
		"broken/not-a-mapping", "broken/not-utf8", "broken/unterminated",
		"good-skill", "source-a/alpha", "source-a/beta", "source-a/deeper/gamma",
	}
	if got := ids(snap.All()); !reflect.DeepEqual(got, wantAll) {
		t.Fatalf("All() ids =\n%q\nwant\n%q", got, wantAll)
	}
	wantLoaded := []string{"broken/bad-types", "broken/crlf-bom", "broken/long-description",
		"good-skill", "source-a/alpha", "source-a/beta", "source-a/deeper/gamma"}
	if got := ids(snap.Skills()); !reflect.DeepEqual(got, wantLoaded) {
		t.Fatalf("Skills() ids = %q, want %q", got, wantLoaded)
	}
	if snap.Len() != len(wantLoaded) {
		t.Errorf("Len() = %d", snap.Len())
	}
	if _, ok := snap.Get("broken/empty"); ok {
		t.Error("Get returned a skipped skill")
	}
	if s, ok := snap.Lookup("broken/empty"); !ok || !s.Skipped {
		t.Error("Lookup should find the skipped skill")
	}
	if got := snap.Roots(); !reflect.DeepEqual(got, []string{fixtureLib}) {
		t.Errorf("Roots() = %q", got)
	}

	good, _ := snap.Get("good-skill")
	if good.Path != "testdata/lib/good-skill/SKILL.md" || good.Dir != "testdata/lib/good-skill" || good.Root != fixtureLib {
		t.Errorf("paths must be the root as given joined with the id: Path %q Dir %q Root %q", good.Path, good.Dir, good.Root)
	}
	wantRes := []Resource{
		{"LICENSE.txt", 4, KindOther},
		{"asset/a.txt", 2, KindAsset},
		{"assets/logo.txt", 5, KindAsset},
		{"docs/d.md", 2, KindReference},
		{"misc/notes.txt", 2, KindOther},
		{"nested-skill/SKILL.md", 82, KindOther}, // a SKILL.md inside a skill is a resource, not a skill
		{"reference/x.md", 2, KindReference},
		{"references/guide.md", 8, KindReference},
		{"script/alt.py", 9, KindScript},
		{"scripts/run.sh", 10, KindScript},
		{"templates/t.md", 2, KindAsset},
	}
	if !reflect.DeepEqual(good.Resources, wantRes) {
		t.Errorf("resources =\n%v\nwant\n%v", good.Resources, wantRes)
	}

	var b strings.Builder
	for _, p := range snap.Problems() {
		b.WriteString(p.String() + "\n")
	}
	golden(t, "problems-lib.golden", b.String())

	lib := snap.LibraryProblems()
	if len(lib) != 1 || !strings.Contains(lib[0].Message, "must be named exactly SKILL.md") {
		t.Errorf("LibraryProblems() = %v", lib)
	}
}

func TestProblemsSorted(t *testing.T) {
	ps := loadFixture(t).Problems()
	for i := 1; i < len(ps); i++ {
		a, b := ps[i-1], ps[i]
		if a.Path > b.Path || (a.Path == b.Path && a.Line > b.Line) {
			t.Fatalf("not sorted by path, line: %s before %s", a, b)
		}
	}
}

func TestLoadSkipsHiddenAndDependencyFolders(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "src", "visible"), "Use it.\n")
	writeSkill(t, filepath.Join(root, ".git", "hidden"), "")
	writeSkill(t, filepath.Join(root, "src", ".cache", "hidden"), "")
	writeSkill(t, filepath.Join(root, "node_modules", "pkg"), "")
	writeSkill(t, filepath.Join(root, "src", "__pycache__", "x"), "")
	writeFile(t, filepath.Join(root, "index.jsonl"), "{}\n")
	writeFile(t, filepath.Join(root, "README.md"), "# not a skill\n")
	writeFile(t, filepath.Join(root, "src", "visible", "node_modules", "dep", "index.js"), "x")
	writeFile(t, filepath.Join(root, "src", "visible", ".env"), "SECRET=1")
	writeFile(t, filepath.Join(root, "src", "visible", "scripts", "__pycache__", "a.pyc"), "x")
	writeFile(t, filepath.Join(root, "src", "visible", "scripts", "a.py"), "print()")
	writeSkill(t, filepath.Join(root, "src", "visible", "inner"), "") // resources, not a skill

	snap := Load(context.Background(), []string{root}, Options{})
	if got := ids(snap.All()); !reflect.DeepEqual(got, []string{"src/visible"}) {
		t.Fatalf("ids = %q", got)
	}
	s, _ := snap.Get("src/visible")
	var paths []string
	for _, r := range s.Resources {
		paths = append(paths, r.Path)
	}
	if want := []string{"inner/SKILL.md", "scripts/a.py"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("resources = %q, want %q", paths, want)
	}
	// Hidden and dependency folders say nothing; the nested SKILL.md is
	// reported (TestLoadNestedSkillFile).
	if ps := snap.Problems(); len(ps) != 1 || !strings.Contains(ps[0].Message, "inside the skill") {
		t.Errorf("problems: %s", problemList(ps))
	}
}

func TestLoadDuplicateIDsAcrossRoots(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	writeSkill(t, filepath.Join(first, "shared", "tool"), "first\n")
	writeSkill(t, filepath.Join(second, "shared", "tool"), "second\n")
	writeSkill(t, filepath.Join(second, "only-second"), "")

	snap := Load(context.Background(), []string{first, second}, Options{})
	if got := ids(snap.All()); !reflect.DeepEqual(got, []string{"only-second", "shared/tool"}) {
		t.Fatalf("ids = %q", got)
	}
	s, _ := snap.Get("shared/tool")
	if !strings.HasSuffix(s.Body(), "first\n") || s.Root != first {
		t.Errorf("the earlier root must win, got body %q root %q", s.Body(), s.Root)
	}
	p := mustProblem(t, s.Problems, SeverityWarning, "", "also defined at")
	firstPath := filepath.Join(first, "shared", "tool", SkillFile)
	secondPath := filepath.Join(second, "shared", "tool", SkillFile)
	if p.Path != firstPath || !strings.Contains(p.Message, secondPath) {
		t.Errorf("warning must name both paths: %s", p)
	}

	// The same folder given twice is scanned once, without duplicate warnings.
	snap = Load(context.Background(), []string{first, first + string(filepath.Separator)}, Options{})
	mustProblem(t, snap.LibraryProblems(), SeverityWarning, "", "same directory as "+first)
	if n := len(snap.Problems()); n != 1 {
		t.Errorf("want only the same-directory warning, got:\n%s", problemList(snap.Problems()))
	}
}

func TestLoadRootProblems(t *testing.T) {
	good := t.TempDir()
	writeSkill(t, filepath.Join(good, "ok"), "")
	file := writeFile(t, filepath.Join(t.TempDir(), "file.txt"), "x")
	missing := filepath.Join(t.TempDir(), "missing")

	snap := Load(context.Background(), []string{missing, file, good}, Options{})
	if got := ids(snap.Skills()); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Fatalf("a bad root must not stop the others: %q", got)
	}
	lib := snap.LibraryProblems()
	mustProblem(t, lib, SeverityError, "missing", "skills root does not exist")
	mustProblem(t, lib, SeverityError, "file.txt", "is a file, not a directory")
	if got := snap.Roots(); !reflect.DeepEqual(got, []string{missing, file, good}) {
		t.Errorf("Roots() = %q", got)
	}
}

func TestLoadRootIsASkill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "solo")
	writeSkill(t, dir, "")
	writeFile(t, filepath.Join(dir, "scripts", "x.sh"), "echo")
	snap := Load(context.Background(), []string{dir}, Options{})
	s, ok := snap.Get("solo")
	if !ok {
		t.Fatalf("root holding SKILL.md should load as skill %q; got %q %s", "solo", ids(snap.All()), problemList(snap.Problems()))
	}
	if s.Path != filepath.Join(dir, SkillFile) || len(s.Resources) != 1 {
		t.Errorf("Path %q resources %v", s.Path, s.Resources)
	}
}

func TestLoadMisnamedSkillFile(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "x", "Skill.md"), "---\nname: x\ndescription: y\n---\n")
	snap := Load(context.Background(), []string{root}, Options{})
	if len(snap.All()) != 0 {
		t.Fatal("Skill.md must not load")
	}
	mustProblem(t, snap.Problems(), SeverityError, "Skill.md", "must be named exactly SKILL.md")
}

func TestLoadSizeLimits(t *testing.T) {
	root := t.TempDir()
	// 50 MB, sparse so the test costs no disk: must be rejected from its size
	// alone, without opening it.
	huge := writeFile(t, filepath.Join(root, "huge", SkillFile), "---\nname: huge\ndescription: d\n---\n")
	if err := os.Truncate(huge, 50<<20); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, filepath.Join(root, "long-body"), strings.Repeat("x", 2000))
	writeSkill(t, filepath.Join(root, "ok"), "short")

	orig := openFile
	t.Cleanup(func() { openFile = orig })
	var hugeRead atomic.Int64
	openFile = func(name string) (fileHandle, error) {
		f, err := os.Open(name)
		if err != nil || name != huge {
			return f, err
		}
		return countingFile{f, &hugeRead}, nil
	}
	snap := Load(context.Background(), []string{root}, Options{MaxBodySize: 1000})
	if n := hugeRead.Load(); n != 0 {
		t.Errorf("read %d bytes of the 50 MB file; its size alone must reject it", n)
	}
	if got := ids(snap.Skills()); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Fatalf("loaded %q", got)
	}
	mustProblem(t, snap.Problems(), SeverityError, "huge/SKILL.md", "SKILL.md is 50.0 MiB (52428800 bytes); the limit is 1.0 MiB (1048576 bytes)")
	p := mustProblem(t, snap.Problems(), SeverityError, "long-body/SKILL.md", "body is 2000 bytes; the limit is 1000 bytes")
	if p.Line != 5 {
		t.Errorf("body problem line = %d, want 5", p.Line)
	}

	snap = Load(context.Background(), []string{root}, Options{MaxFileSize: 100})
	mustProblem(t, snap.Problems(), SeverityError, "long-body/SKILL.md", "the limit is 100 bytes")
}

// countingFile counts the bytes read through it.
type countingFile struct {
	*os.File
	n *atomic.Int64
}

func (c countingFile) Read(p []byte) (int, error) {
	n, err := c.File.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// lyingReader returns more bytes than Stat reported, like a file that grows
// during the scan or a /proc-style file.
type lyingReader struct {
	n    int
	info fs.FileInfo
}

func (r *lyingReader) Stat() (fs.FileInfo, error) { return r.info, nil }

func (r *lyingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = 'x'
	}
	r.n -= n
	return n, nil
}
func (r *lyingReader) Close() error { return nil }

type failingReader struct{ info fs.FileInfo }

func (r failingReader) Stat() (fs.FileInfo, error) { return r.info, nil }

func (failingReader) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: "x", Err: errors.New("input/output error")}
}
func (failingReader) Close() error { return nil }

// TestLoadReadFailures covers files that cannot be read. Root can read any
// file, so permission errors are simulated through the openFile hook; the
// real chmod case runs too when the tests do not run as root.
func TestLoadReadFailures(t *testing.T) {
	root := t.TempDir()
	denied := writeSkill(t, filepath.Join(root, "denied"), "")
	grows := writeSkill(t, filepath.Join(root, "grows"), "")
	ioerr := writeSkill(t, filepath.Join(root, "ioerr"), "")
	writeSkill(t, filepath.Join(root, "fine"), "")

	orig := openFile
	t.Cleanup(func() { openFile = orig })
	openFile = func(name string) (fileHandle, error) {
		info, err := os.Stat(name)
		if err != nil {
			return nil, err
		}
		switch name {
		case denied:
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
		case grows:
			return &lyingReader{n: 2 << 20, info: info}, nil
		case ioerr:
			return failingReader{info}, nil
		}
		return orig(name)
	}
	snap := Load(context.Background(), []string{root}, Options{})
	if got := ids(snap.Skills()); !reflect.DeepEqual(got, []string{"fine"}) {
		t.Fatalf("loaded %q", got)
	}
	ps := snap.Problems()
	p := mustProblem(t, ps, SeverityError, "denied/SKILL.md", "cannot read SKILL.md: permission denied")
	if strings.Count(p.String(), denied) != 1 {
		t.Errorf("the path should appear once: %s", p)
	}
	mustProblem(t, ps, SeverityError, "grows/SKILL.md", "larger than the limit")
	mustProblem(t, ps, SeverityError, "ioerr/SKILL.md", "cannot read SKILL.md: input/output error")
}

func TestLoadUnreadableAsUser(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can read files without permission bits; TestLoadReadFailures covers this path")
	}
	root := t.TempDir()
	f := writeSkill(t, filepath.Join(root, "locked"), "")
	dir := filepath.Join(root, "closed")
	writeSkill(t, filepath.Join(dir, "inner"), "")
	writeSkill(t, filepath.Join(root, "fine"), "")
	if err := os.Chmod(f, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.Chmod(f, 0o644) })
	snap := Load(context.Background(), []string{root}, Options{})
	if got := ids(snap.Skills()); !reflect.DeepEqual(got, []string{"fine"}) {
		t.Fatalf("loaded %q", got)
	}
	mustProblem(t, snap.Problems(), SeverityError, "locked/SKILL.md", "permission denied")
	mustProblem(t, snap.Problems(), SeverityWarning, "closed", "cannot list folder: permission denied")
}

func TestLoadSymlinks(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	secret := writeFile(t, filepath.Join(outside, "id_rsa"), "PRIVATE KEY")

	// Discovery: loops back up the tree and self-loops end the walk with a warning.
	symlink(t, root, filepath.Join(root, "loop-to-root"))
	symlink(t, "..", filepath.Join(root, "src", "up"))
	symlink(t, "self", filepath.Join(root, "self"))
	symlink(t, filepath.Join(root, "nowhere"), filepath.Join(root, "dangling"))
	// A skill folder symlinked into the library (common for ~/.claude/skills) loads.
	writeSkill(t, filepath.Join(outside, "linked"), "")
	symlink(t, filepath.Join(outside, "linked"), filepath.Join(root, "linked"))

	// Resources: inside links are listed, outside/broken/looping ones are not.
	sk := filepath.Join(root, "src", "tool")
	writeSkill(t, sk, "")
	writeFile(t, filepath.Join(sk, "references", "doc.md"), "12345")
	symlink(t, "../references/doc.md", filepath.Join(sk, "scripts", "doc-link.md"))
	symlink(t, "references", filepath.Join(sk, "refs"))
	symlink(t, secret, filepath.Join(sk, "assets", "key"))
	symlink(t, outside, filepath.Join(sk, "outside-dir"))
	symlink(t, ".", filepath.Join(sk, "loop"))
	symlink(t, "..", filepath.Join(sk, "references", "up"))
	symlink(t, "missing.txt", filepath.Join(sk, "broken"))
	symlink(t, "ping", filepath.Join(sk, "pong"))
	symlink(t, "pong", filepath.Join(sk, "ping"))

	// SKILL.md itself: a link out of the folder is refused, one inside is fine.
	leak := filepath.Join(root, "leak")
	symlink(t, writeFile(t, filepath.Join(outside, "other.md"), "---\nname: leak\ndescription: d\n---\n"), filepath.Join(leak, SkillFile))
	inner := filepath.Join(root, "inner")
	writeFile(t, filepath.Join(inner, "real.md"), "---\nname: inner\ndescription: d\n---\n")
	symlink(t, "real.md", filepath.Join(inner, SkillFile))
	symlink(t, "nothing.md", filepath.Join(root, "broken-md", SkillFile))

	snap := Load(context.Background(), []string{root}, Options{})
	if got, want := ids(snap.All()), []string{"broken-md", "inner", "leak", "linked", "src/tool"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ids = %q, want %q\n%s", got, want, problemList(snap.Problems()))
	}
	if got := ids(snap.Skills()); !reflect.DeepEqual(got, []string{"inner", "linked", "src/tool"}) {
		t.Fatalf("loaded = %q\n%s", got, problemList(snap.Problems()))
	}
	ps := snap.Problems()
	mustProblem(t, ps, SeverityWarning, "loop-to-root", "symlink loop")
	mustProblem(t, ps, SeverityWarning, "src/up", "symlink loop")
	mustProblem(t, ps, SeverityWarning, "/self", "symlink loop")
	mustProblem(t, ps, SeverityWarning, "/dangling", "broken symlink")
	mustProblem(t, ps, SeverityError, "leak/SKILL.md", "outside the skill folder; refusing to read it")
	mustProblem(t, ps, SeverityError, "broken-md/SKILL.md", "broken symlink")
	mustProblem(t, ps, SeverityWarning, "assets/key", "outside the skill folder")
	mustProblem(t, ps, SeverityWarning, "outside-dir", "outside the skill folder")
	mustProblem(t, ps, SeverityWarning, "tool/loop", "symlink loop")
	mustProblem(t, ps, SeverityWarning, "references/up", "symlink loop")
	mustProblem(t, ps, SeverityWarning, "tool/broken", "broken symlink")
	mustProblem(t, ps, SeverityWarning, "tool/ping", "symlink loop")

	s, _ := snap.Get("src/tool")
	want := []Resource{
		{"references/doc.md", 5, KindReference},
		{"refs/doc.md", 5, KindOther},
		{"scripts/doc-link.md", 5, KindScript},
	}
	if !reflect.DeepEqual(s.Resources, want) {
		t.Errorf("resources = %v, want %v", s.Resources, want)
	}
	for _, sk := range snap.All() {
		if strings.Contains(sk.Content(), "PRIVATE KEY") {
			t.Fatal("a file outside the skill folder leaked into content")
		}
	}
}

func TestLoadMaxResources(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "many")
	writeSkill(t, dir, "")
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		writeFile(t, filepath.Join(dir, "assets", n+".txt"), n)
	}
	s, _ := Load(context.Background(), []string{root}, Options{MaxResources: 3}).Get("many")
	if len(s.Resources) != 3 || s.ResourcesOmitted != 2 {
		t.Errorf("resources %d omitted %d", len(s.Resources), s.ResourcesOmitted)
	}
	// Past the cap, scripts and top-level files are kept before the rest,
	// which a path order (assets/, references/ before scripts/) hid.
	writeFile(t, filepath.Join(dir, "scripts", "run.sh"), "echo")
	writeFile(t, filepath.Join(dir, "README.md"), "x")
	writeFile(t, filepath.Join(dir, "references", "z.md"), "z")
	s, _ = Load(context.Background(), []string{root}, Options{MaxResources: 3}).Get("many")
	var paths []string
	for _, r := range s.Resources {
		paths = append(paths, r.Path)
	}
	if want := []string{"README.md", "assets/a.txt", "scripts/run.sh"}; !slices.Equal(paths, want) || s.ResourcesOmitted != 5 {
		t.Errorf("kept %v, omitted %d; want %v, 5", paths, s.ResourcesOmitted, want)
	}
}

func TestLoadDepthLimit(t *testing.T) {
	root := t.TempDir()
	deep := root
	for range maxDepth + 3 {
		deep = filepath.Join(deep, "d")
	}
	writeSkill(t, deep, "")
	writeSkill(t, filepath.Join(root, "shallow"), "")
	snap := Load(context.Background(), []string{root}, Options{})
	if got := ids(snap.All()); !reflect.DeepEqual(got, []string{"shallow"}) {
		t.Errorf("ids = %q", got)
	}
	mustProblem(t, snap.Problems(), SeverityWarning, "", "nests more than 16 levels")
}

func TestResourceKinds(t *testing.T) {
	tests := map[string]ResourceKind{
		"scripts/a.py": KindScript, "script/a.sh": KindScript, "scripts/sub/deep.py": KindScript,
		"references/r.md": KindReference, "reference/r.md": KindReference, "docs/d.md": KindReference,
		"assets/logo.png": KindAsset, "asset/x": KindAsset, "templates/t.html": KindAsset,
		"LICENSE.txt": KindOther, "files.txt": KindOther, "scripts": KindOther, "lib/a.py": KindOther,
		"Scripts/a.py": KindOther,
	}
	for in, want := range tests {
		if got := kindOf(in); got != want {
			t.Errorf("kindOf(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestLoadIsDeterministic(t *testing.T) {
	a, b := loadFixture(t), loadFixture(t)
	if a.Fingerprint() != b.Fingerprint() || len(a.Fingerprint()) != 64 {
		t.Fatalf("fingerprints differ: %s %s", a.Fingerprint(), b.Fingerprint())
	}
	ja, _ := json.Marshal(a.All())
	jb, _ := json.Marshal(b.All())
	if !bytes.Equal(ja, jb) {
		t.Fatal("JSON of two loads differs")
	}
	if RenderCatalog(a.Skills(), CatalogOptions{}) != RenderCatalog(b.Skills(), CatalogOptions{}) {
		t.Fatal("catalog differs")
	}
	for _, s := range a.All() {
		if filepath.IsAbs(s.Path) {
			t.Fatalf("path was absolutized: %s", s.Path)
		}
	}

	// Any rendered change moves the fingerprint; a change to a skipped skill
	// does not. Same says what the fingerprints say.
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "x"), "v1")
	writeFile(t, filepath.Join(root, "bad", SkillFile), "no frontmatter")
	load := func() *Snapshot { return Load(context.Background(), []string{root}, Options{}) }
	prev := load()
	step := func(what string, changed bool) {
		t.Helper()
		cur := load()
		if moved := cur.Fingerprint() != prev.Fingerprint(); moved != changed {
			t.Errorf("%s: fingerprint moved %v, want %v", what, moved, changed)
		}
		if same := cur.Same(prev); same == changed {
			t.Errorf("%s: Same %v, want %v", what, same, !changed)
		}
		prev = cur
	}
	step("reloaded unchanged", false)
	writeFile(t, filepath.Join(root, "bad", SkillFile), "still no frontmatter")
	step("skipped skill edited", false)
	writeSkill(t, filepath.Join(root, "x"), "v2")
	step("body changed", true)
	writeFile(t, filepath.Join(root, "x", "scripts", "new.sh"), "echo")
	step("new resource", true)
}

func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	snap := Load(ctx, []string{fixtureLib}, Options{})
	if !errors.Is(snap.Err(), context.Canceled) {
		t.Fatalf("Err() = %v", snap.Err())
	}
	mustProblem(t, snap.Problems(), SeverityError, "", "scan stopped early")
	if loadFixture(t).Err() != nil {
		t.Fatal("a complete load must have no Err")
	}
}

// A SKILL.md below a skill's folder is one of its files, not a skill: an
// author who nests a skill inside another is told so instead of seeing it
// vanish. Inside the spec's resource folders (scripts/, references/,
// assets/ and their variants) it is taken for material the skill ships, such
// as a sample skill, and not reported.
func TestLoadNestedSkillFile(t *testing.T) {
	tests := []struct {
		nested string // slash path of the inner SKILL.md below the outer skill
		warn   bool
	}{
		{"inner/SKILL.md", true},
		{"team/inner/SKILL.md", true},
		{"assets/sample-skill/SKILL.md", false},
		{"templates/new-skill/SKILL.md", false},
		{"references/example/SKILL.md", false},
		{"scripts/fixture/SKILL.md", false},
	}
	for _, tt := range tests {
		root := t.TempDir()
		outer := filepath.Join(root, "outer")
		writeSkill(t, outer, "Body.\n")
		writeFile(t, filepath.Join(outer, filepath.FromSlash(tt.nested)), "---\nname: inner\ndescription: Inside.\n---\n")
		snap := Load(context.Background(), []string{root}, Options{})
		if got := ids(snap.Skills()); !reflect.DeepEqual(got, []string{"outer"}) {
			t.Errorf("%s: skills %v, want only outer", tt.nested, got)
			continue
		}
		p, found := findProblem(snap.Problems(), filepath.FromSlash(tt.nested), "inside the skill")
		switch {
		case found != tt.warn:
			t.Errorf("%s: warned %v, want %v; problems:\n%s", tt.nested, found, tt.warn, problemList(snap.Problems()))
		case found && (p.Severity != SeverityWarning || !strings.Contains(p.Message, `"outer"`)):
			t.Errorf("%s: %s", tt.nested, p)
		}
	}
}

// Two loaded skills with the same frontmatter name: Resolve (load_skill,
// `skills show`) finds neither by that name, so each gets a warning at its
// name: line naming the other and the full id to use instead.
func TestLoadSharedNames(t *testing.T) {
	skill := func(name, body string) string {
		return "---\nname: " + name + "\ndescription: The " + name + " skill. Use when testing.\n---\n" + body
	}
	tests := []struct {
		name  string
		files map[string]string // id -> SKILL.md
		// want maps an id to the ids its warning must name; ids absent get none.
		want map[string][]string
	}{
		{"two collections", map[string]string{"a/pdf": skill("pdf", "A\n"), "b/pdf": skill("pdf", "B\n")},
			map[string][]string{"a/pdf": {"b/pdf"}, "b/pdf": {"a/pdf"}}},
		{"three share one name", map[string]string{"a/pdf": skill("pdf", "A\n"), "b/pdf": skill("pdf", "B\n"), "c/pdf": skill("pdf", "C\n")},
			map[string][]string{"a/pdf": {"b/pdf", "c/pdf"}, "b/pdf": {"a/pdf", "c/pdf"}, "c/pdf": {"a/pdf", "b/pdf"}}},
		{"folder names differ", map[string]string{"x/one": skill("tool", "1\n"), "y/two": skill("tool", "2\n")},
			map[string][]string{"x/one": {"y/two"}, "y/two": {"x/one"}}},
		{"different names", map[string]string{"a/pdf": skill("pdf", "A\n"), "b/docx": skill("docx", "B\n")}, nil},
		// A skipped skill is not in the library: the name finds the other one.
		{"one is skipped", map[string]string{"a/pdf": skill("pdf", "A\n"), "b/pdf": "---\nname: pdf\n---\nB\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for id, text := range tt.files {
				writeFile(t, filepath.Join(root, filepath.FromSlash(id), SkillFile), text)
			}
			snap := Load(context.Background(), []string{root}, Options{})
			for _, s := range snap.All() {
				var shared []Problem
				for _, p := range s.Problems {
					if strings.Contains(p.Message, "is also the name of") {
						shared = append(shared, p)
					}
				}
				others, ok := tt.want[s.ID]
				if !ok {
					if len(shared) > 0 {
						t.Errorf("%s: unexpected warning: %s", s.ID, problemList(shared))
					}
					continue
				}
				if len(shared) != 1 {
					t.Fatalf("%s: want one shared-name warning, got:\n%s", s.ID, problemList(s.Problems))
				}
				p := shared[0]
				if p.Severity != SeverityWarning || p.Path != s.Path || p.Line != 2 {
					t.Errorf("%s: want a warning at %s:2, got %s", s.ID, s.Path, p)
				}
				for _, o := range others {
					other, _ := snap.Lookup(o)
					if !strings.Contains(p.Message, strconv.Quote(o)) || !strings.Contains(p.Message, other.Path) {
						t.Errorf("%s: warning must name %q and its path %s: %s", s.ID, o, other.Path, p)
					}
				}
				if !strings.Contains(p.Message, "full id "+strconv.Quote(s.ID)) {
					t.Errorf("%s: warning must give the full id to use: %s", s.ID, p)
				}
				// The reason for the warning: the name finds neither.
				if got, found := snap.Resolve(s.Name); found {
					t.Errorf("%s: Resolve(%q) found %s; the warning's premise is wrong", s.ID, s.Name, got.ID)
				}
			}
		})
	}
}

// A root with more folders than maxFolders (a symlink to a large tree) is
// scanned up to the bound, with one warning, not walked without end.
func TestScanStopsAtMaxFolders(t *testing.T) {
	defer func(n int) { maxFolders = n }(maxFolders)
	maxFolders = 100
	root := t.TempDir()
	for i := range maxFolders + 10 {
		if err := os.Mkdir(filepath.Join(root, fmt.Sprintf("d%06d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	snap := Load(context.Background(), []string{root}, Options{})
	n := 0
	for _, p := range snap.Problems() {
		if strings.Contains(p.Message, "stopped scanning") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings about the bound, want 1: %v", n, snap.Problems())
	}
}

// A folder or resource file whose name is not UTF-8 is left out with a
// problem naming it: its id or path would reach every request as U+FFFD,
// and no request could name it again.
func TestScanNamesNotUTF8(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "bad\xffname", SkillFile), "---\nname: badname\ndescription: Bad folder name. Use when testing.\n---\nx\n")
	good := filepath.Join(root, "good")
	writeSkill(t, good, "x\n")
	writeFile(t, filepath.Join(good, "references", "caf\xe9.md"), "x")
	writeFile(t, filepath.Join(good, "references", "ok.md"), "x")
	snap := Load(context.Background(), []string{root}, Options{})
	var ids []string
	for _, s := range snap.Skills() {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"good"}) {
		t.Fatalf("skills %q, want only good", ids)
	}
	var folder, file bool
	for _, p := range snap.Problems() {
		if strings.Contains(p.Message, "not valid UTF-8") {
			folder = folder || p.Severity == SeverityError && strings.HasSuffix(p.Path, "bad\xffname")
		}
	}
	s := snap.Skills()[0]
	for _, p := range s.Problems {
		file = file || strings.Contains(p.Message, "not valid UTF-8") && strings.HasSuffix(p.Path, "caf\xe9.md")
	}
	var res []string
	for _, r := range s.Resources {
		res = append(res, r.Path)
	}
	if !folder || !file || !slices.Equal(res, []string{"references/ok.md"}) {
		t.Errorf("folder problem %v, file problem %v, resources %q\n%v\n%v", folder, file, res, snap.Problems(), s.Problems)
	}
}

// TestOptionsConvention: how the folders below each root are checked. No
// list: roots given, nothing checked; a listed root by its base, however
// its path is written; a root the list does not hold from / (the strictest
// start); a listed root without a base (given with --skills) not at all.
func TestOptionsConvention(t *testing.T) {
	proj := Root{Path: filepath.Join(".", ".claude", "skills"), base: "."}
	given := Root{Path: "/srv/lib"}
	for _, c := range []struct {
		name string
		opts Options
		root string
		base string
	}{
		{"no list", Options{}, ".claude/skills", ""},
		{"listed", Options{Conventional: []Root{given, proj}}, ".claude/skills", "."},
		{"listed, written otherwise", Options{Conventional: []Root{proj}}, "./.claude/skills/", "."},
		{"not listed", Options{Conventional: []Root{proj}}, "/elsewhere", string(filepath.Separator)},
		{"empty list", Options{Conventional: []Root{}}, ".claude/skills", string(filepath.Separator)},
		{"listed without a base", Options{Conventional: []Root{given, proj}}, "/srv/lib", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.opts.convention(filepath.FromSlash(c.root)); got.base != c.base {
				t.Errorf("convention(%q).base = %q, want %q", c.root, got.base, c.base)
			}
		})
	}
}
