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
		b, err := ReadFile(&skills.Skill{Dir: skill}, tc.rel, 1<<20)
		if (err != nil) != tc.err || string(b) != tc.want {
			t.Errorf("%s: %q %v", tc.rel, b, err)
		}
	}
	if _, err := ReadFile(&skills.Skill{Dir: skill}, "references/a.md", 4); !errors.Is(err, ErrTooLarge) {
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

// A skill folder swapped for a symlink after the scan (by whoever can write
// the library) must not let reads follow it: the folder was resolved again
// on every read and opened as an os.Root there, so read_skill_resource and
// MCP's resources read any file the proxy's user could (~/.ssh/id_rsa).
func TestReadAfterFolderSwap(t *testing.T) {
	lib, outside := t.TempDir(), t.TempDir()
	dir := filepath.Join(lib, "swap")
	if err := os.MkdirAll(filepath.Join(dir, "references"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: swap\ndescription: a skill\n---\nbody\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "references", "a.md"), []byte("library text"), 0o644)
	os.MkdirAll(filepath.Join(outside, "references"), 0o755)
	os.WriteFile(filepath.Join(outside, "references", "a.md"), []byte("SECRET"), 0o644)
	os.WriteFile(filepath.Join(outside, "id_rsa"), []byte("SECRET"), 0o644)
	s, ok := skills.NewRegistry([]string{lib}, skills.Options{}).Snapshot().Get("swap")
	if !ok {
		t.Fatal("the skill did not load")
	}
	if b, err := ReadFile(s, "references/a.md", 1<<20); err != nil || string(b) != "library text" {
		t.Fatalf("before the swap: %q %v", b, err)
	}
	if err := os.Rename(dir, filepath.Join(lib, ".orig")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(s, "references/a.md", 1<<20); err == nil || strings.Contains(string(b), "SECRET") {
		t.Errorf("ReadFile after the swap: %q %v", b, err)
	}
	p, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"id_rsa", "."} {
		if got := p.ReadSkillResource(s.ID, s, path); strings.Contains(got, "SECRET") || !strings.Contains(got, `"code":"read_failed"`) {
			t.Errorf("read_skill_resource %q after the swap: %s", path, got)
		}
	}
	// Nor does a script path resolve through it.
	if _, e := resolveSkillPath(s, "id_rsa"); e == nil || e.Code != CodeReadFailed {
		t.Errorf("a path resolved through the swapped folder: %v", e)
	}
}
