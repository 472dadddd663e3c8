package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func utf8Valid(b []byte) bool { return utf8.Valid(b) }

func TestResolveInSkill(t *testing.T) {
	root := t.TempDir()
	skill := filepath.Join(root, "skill")
	for _, d := range []string{"scripts", "refs"} {
		if err := os.MkdirAll(filepath.Join(skill, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(skill, "scripts", "a.sh"), nil, 0o644)
	_ = os.WriteFile(filepath.Join(root, "secret"), nil, 0o644)
	_ = os.Symlink("../scripts/a.sh", filepath.Join(skill, "refs", "in"))
	_ = os.Symlink("../../secret", filepath.Join(skill, "refs", "out"))
	_ = os.Symlink(root, filepath.Join(skill, "up"))
	_ = os.Symlink("loop", filepath.Join(skill, "loop"))

	tests := []struct {
		path, rel, code string
	}{
		{"scripts/a.sh", "scripts/a.sh", ""},
		{"./scripts//a.sh", "scripts/a.sh", ""},
		{"scripts/../scripts/a.sh", "scripts/a.sh", ""},
		{"refs/in", "scripts/a.sh", ""},
		{"", ".", ""},
		{".", ".", ""},
		{"refs/out", "", CodePathOutsideSkill},
		{"up/secret", "", CodePathOutsideSkill},
		{"up/skill/scripts/a.sh", "scripts/a.sh", ""}, // leaves and re-enters: the real path is inside
		{"..", "", CodePathOutsideSkill},
		{"../secret", "", CodePathOutsideSkill},
		{"scripts/../../secret", "", CodePathOutsideSkill},
		{"/etc/passwd", "", CodePathOutsideSkill},
		{`\etc\passwd`, "", CodePathOutsideSkill},
		{"a\x00b", "", CodeInvalidPath},
		{"scripts/none", "", CodeNotFound},
		{"loop", "", CodeReadFailed},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r, e := resolveInSkill(skill, tt.path)
			if tt.code != "" {
				if e == nil || e.Code != tt.code {
					t.Fatalf("got %+v %+v, want code %s", r, e, tt.code)
				}
				return
			}
			if e != nil || r.rel != tt.rel {
				t.Fatalf("got %+v %+v, want rel %s", r, e, tt.rel)
			}
		})
	}
}

func TestResolveRelativeSkillDirIsAbsolute(t *testing.T) {
	r, e := resolveInSkill(filepath.Join("testdata", "skills", "calc"), "execute.py")
	if e != nil || !filepath.IsAbs(r.abs) || !filepath.IsAbs(r.root) {
		t.Fatalf("%+v %v", r, e)
	}
}

// FuzzResolveInSkill: whatever the path, an accepted result lies inside the
// skill folder.
func FuzzResolveInSkill(f *testing.F) {
	root := f.TempDir()
	skill := filepath.Join(root, "skill")
	_ = os.MkdirAll(filepath.Join(skill, "a", "b"), 0o755)
	_ = os.WriteFile(filepath.Join(skill, "a", "f"), nil, 0o644)
	_ = os.WriteFile(filepath.Join(root, "outside"), nil, 0o644)
	_ = os.Symlink(root, filepath.Join(skill, "a", "up"))
	_ = os.Symlink("../f", filepath.Join(skill, "a", "b", "in"))
	for _, s := range []string{"a/f", "../outside", "a/up/outside", "a/b/in", "/etc", "a/b/../../..", "a/./b//in"} {
		f.Add(s)
	}
	realSkill, err := filepath.EvalSymlinks(skill)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		r, e := resolveInSkill(skill, p)
		if e != nil {
			return
		}
		if _, in := within(realSkill, r.abs); !in {
			t.Fatalf("%q resolved outside: %s", p, r.abs)
		}
		if _, err := os.Lstat(r.abs); errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%q resolved to a missing path %s", p, r.abs)
		}
		if strings.HasPrefix(r.rel, "..") {
			t.Fatalf("rel %q", r.rel)
		}
	})
}

func TestConversationDirName(t *testing.T) {
	if got := conversationDirName("abc-DEF_123"); got != "abc-DEF_123" {
		t.Errorf("plain id changed: %s", got)
	}
	a, b := conversationDirName("a/b"), conversationDirName("a_b")
	if a == b || !strings.HasPrefix(a, "h-") {
		t.Errorf("%s %s", a, b)
	}
	if x, y := conversationDirName(""), conversationDirName(""); x == y || !strings.HasPrefix(x, "anon-") {
		t.Errorf("anonymous conversations share %s", x)
	}
}

func FuzzConversationDirName(f *testing.F) {
	for _, s := range []string{"", "..", "../x", "a/b", "ok", strings.Repeat("z", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, conv string) {
		name := conversationDirName(conv)
		if !convIDRE.MatchString(name) || name == "." || name == ".." || filepath.Base(name) != name {
			t.Fatalf("%q → unsafe directory name %q", conv, name)
		}
	})
}
