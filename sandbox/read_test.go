package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

func TestReadFile(t *testing.T) {
	root := t.TempDir()
	skill := filepath.Join(root, "s")
	os.MkdirAll(filepath.Join(skill, "references"), 0o755)
	os.WriteFile(filepath.Join(skill, "references", "a.md"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(root, "secret"), []byte("secret"), 0o644)
	os.Symlink(filepath.Join(root, "secret"), filepath.Join(skill, "out"))
	os.Symlink("references/a.md", filepath.Join(skill, "in"))
	for _, tc := range []struct {
		rel, want string
		err       bool
	}{
		{"references/a.md", "hello", false},
		{"in", "hello", false}, // a link that stays inside
		{"out", "", true},      // a link that leads out
		{"../secret", "", true},
		{filepath.Join(root, "secret"), "", true},
		{"references", "", true}, // a folder
		{"nope", "", true},
	} {
		b, err := ReadFile(skill, tc.rel, 1<<20)
		if (err != nil) != tc.err || string(b) != tc.want {
			t.Errorf("%s: %q %v", tc.rel, b, err)
		}
	}
	if _, err := ReadFile(skill, "references/a.md", 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("limit: %v", err)
	}
}

func TestReadSkillResourceWithoutExec(t *testing.T) {
	p, err := New(Config{}, nil) // disabled: reading still works
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("notes"), 0o644)
	sk := &skills.Skill{ID: "x", Dir: dir}
	for _, tc := range []struct {
		id   string
		sk   *skills.Skill
		path string
		want string
	}{
		{"x", sk, "notes.md", `{"ok":true,"skill_id":"x","path":"notes.md","size":5,"truncated":false,"content":"notes"}`},
		{"x", sk, "../etc", `"code":"path_outside_skill"`},
		{"y", nil, "notes.md", `"code":"unknown_skill"`},
		{"", nil, "notes.md", `"code":"invalid_arguments"`},
	} {
		if got := p.ReadSkillResource(tc.id, tc.sk, tc.path); !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: %s", tc.id, tc.path, got)
		}
	}
}
