package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

func TestReadSkillResource(t *testing.T) {
	p, _ := newTestProvider(t, func(c *Config) { c.ReadLimit = 40 })
	s := fixtureSkill(t, "scripts-demo")
	read := toolNamed(t, p.Tools(context.Background(), []*skills.Skill{s}), ToolReadResource)
	guide, err := os.ReadFile(filepath.Join(s.Dir, "references", "guide.md"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("truncated at the limit with marker and full size", func(t *testing.T) {
		var r readResult
		if err := json.Unmarshal([]byte(callTool(t, read, "c", map[string]string{"skill_id": s.ID, "path": "references/guide.md"})), &r); err != nil {
			t.Fatal(err)
		}
		body, marker, ok := strings.Cut(r.Content, "\n[truncated: showing the first ")
		if !r.OK || !r.Truncated || r.Size != int64(len(guide)) || !ok || len(body) > 40 || !strings.HasPrefix(string(guide), body) {
			t.Fatalf("%+v", r)
		}
		if !strings.Contains(marker, " of ") {
			t.Errorf("marker %q", marker)
		}
	})
	t.Run("whole file under the limit, UTF-8 intact", func(t *testing.T) {
		p, _ := newTestProvider(t, nil)
		read := toolNamed(t, p.Tools(context.Background(), []*skills.Skill{s}), ToolReadResource)
		var r readResult
		_ = json.Unmarshal([]byte(callTool(t, read, "c", map[string]string{"skill_id": s.ID, "path": "./references/../references/guide.md"})), &r)
		if !r.OK || r.Truncated || r.Content != string(guide) || r.Path != "references/guide.md" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("a cut never splits a character", func(t *testing.T) {
		for limit := 60; limit < 80; limit++ {
			p, _ := newTestProvider(t, func(c *Config) { c.ReadLimit = limit })
			read := toolNamed(t, p.Tools(context.Background(), []*skills.Skill{s}), ToolReadResource)
			var r readResult
			_ = json.Unmarshal([]byte(callTool(t, read, "c", map[string]string{"skill_id": s.ID, "path": "references/guide.md"})), &r)
			if strings.ContainsRune(r.Content, '\uFFFD') {
				t.Fatalf("limit %d split a rune: %q", limit, r.Content)
			}
		}
	})
	t.Run("directory listing", func(t *testing.T) {
		var l listResult
		_ = json.Unmarshal([]byte(callTool(t, read, "c", map[string]string{"skill_id": s.ID, "path": ""})), &l)
		if !l.OK || l.Type != "directory" || !slices.Contains(l.Entries, "SKILL.md") || !slices.Contains(l.Entries, "references/") {
			t.Fatalf("%+v", l)
		}
	})
	refusals := []struct{ path, code string }{
		{"assets/blob.bin", CodeBinaryFile},
		{"../calc/SKILL.md", CodePathOutsideSkill},
		{"/etc/passwd", CodePathOutsideSkill},
		{"references/none.md", CodeNotFound},
	}
	for _, tt := range refusals {
		t.Run("refuses "+tt.path, func(t *testing.T) {
			out := callTool(t, read, "c", map[string]string{"skill_id": s.ID, "path": tt.path})
			if e := failureOf(t, out); e.Code != tt.code {
				t.Errorf("code %q (%s), want %q", e.Code, e.Message, tt.code)
			}
			if strings.Contains(out, "root:") {
				t.Errorf("leaked content: %s", out)
			}
		})
	}
	t.Run("a FIFO does not hang", func(t *testing.T) {
		c := copySkill(t, "scripts-demo")
		if err := syscall.Mkfifo(filepath.Join(c.Dir, "fifo"), 0o600); err != nil {
			t.Skip("mkfifo:", err)
		}
		read := toolNamed(t, p.Tools(context.Background(), []*skills.Skill{c}), ToolReadResource)
		if e := failureOf(t, callTool(t, read, "c", map[string]string{"skill_id": c.ID, "path": "fifo"})); e.Code != CodeNotAFile {
			t.Errorf("code %q", e.Code)
		}
	})
}

// A folder listing gives what a read of each entry would: a symbolic link
// inside the skill is listed as what it leads to (a folder with its "/"),
// one leading outside the skill or nowhere is left out, as resources/list
// leaves it out, instead of listed and then refused.
func TestListDirSymlinks(t *testing.T) {
	dir := t.TempDir()
	skill := filepath.Join(dir, "linky")
	for _, d := range []string{"references", "scripts"} {
		if err := os.MkdirAll(filepath.Join(skill, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"SKILL.md": "---\nname: linky\ndescription: Links.\n---\nBody.\n", "references/guide.md": "guide", "scripts/run.sh": "echo"} {
		if err := os.WriteFile(filepath.Join(skill, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"references/passwd":  "/etc/passwd", // outside: left out
		"references/etc":     "/etc",        // outside: left out
		"references/gone":    "missing.md",  // nowhere: left out
		"references/readme":  "../SKILL.md", // inside: a file
		"references/scripts": "../scripts",  // inside: a folder
	} {
		if err := os.Symlink(target, filepath.Join(skill, link)); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := newTestProvider(t, nil)
	s := skillAt("linky", skill)
	read := toolNamed(t, p.Tools(context.Background(), []*skills.Skill{s}), ToolReadResource)
	var l listResult
	if err := json.Unmarshal([]byte(callTool(t, read, "c", map[string]string{"skill_id": s.ID, "path": "references"})), &l); err != nil {
		t.Fatal(err)
	}
	want := []string{"references/guide.md", "references/readme", "references/scripts/"}
	if !l.OK || !slices.Equal(l.Entries, want) {
		t.Fatalf("entries %q, want %q", l.Entries, want)
	}
	for _, e := range l.Entries {
		var r struct{ OK bool }
		if err := json.Unmarshal([]byte(callTool(t, read, "c", map[string]string{"skill_id": s.ID, "path": strings.TrimSuffix(e, "/")})), &r); err != nil || !r.OK {
			t.Errorf("%s is listed but does not read", e)
		}
	}
}
