//go:build unix

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/internal/private"
	"github.com/skillrouter/skillrouter/skills"
)

// TestConventionalFileCheckedWhenUsed: a skill of a library found by
// convention whose file, or a folder on the way to it, was made writable
// by other users after the scan is not read (read_skill_resource) nor run
// (skill_execute resolves its script the same way) until a reload drops
// the skill: the path is checked again when used. A given library's is.
func TestConventionalFileCheckedWhenUsed(t *testing.T) {
	p, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts skills.Options
		use  string      // the path read, then resolved as a script
		make string      // made writable by everyone after the scan
		mode os.FileMode // its new mode
		want string      // in the refusal; "" when it is read
	}{
		{"reference made writable", skills.Options{Conventional: []skills.Root{}}, "references/a.md", "references/a.md", 0o666, "a.md is writable by other users (mode 0666)"},
		{"script folder made writable", skills.Options{Conventional: []skills.Root{}}, "scripts/run.py", "scripts", 0o777, "scripts is writable by other users (mode 0777)"},
		{"own files", skills.Options{Conventional: []skills.Root{}}, "scripts/run.py", "", 0, ""},
		{"given library", skills.Options{}, "references/a.md", "references/a.md", 0o666, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			lib := t.TempDir()
			if err := private.CheckPath("/", lib); err != nil {
				t.Skipf("the temp folder's path does not pass: %v", err)
			}
			dir := filepath.Join(lib, "pdf")
			for f, body := range map[string]string{
				"SKILL.md":        "---\nname: pdf\ndescription: a skill\n---\nbody\n",
				"references/a.md": "library text",
				"scripts/run.py":  "print(1)\n",
			} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, ok := skills.Load(context.Background(), []string{lib}, c.opts).Get("pdf")
			if !ok {
				t.Fatal("the skill did not load")
			}
			if c.make != "" {
				if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(c.make)), c.mode); err != nil {
					t.Fatal(err)
				}
			}
			got := p.ReadSkillResource(s.ID, s, c.use)
			_, e := resolveSkillPath(s, c.use)
			if c.want == "" {
				if !strings.Contains(got, `"ok":true`) || e != nil {
					t.Fatalf("refused: %s; resolving: %v", got, e)
				}
				return
			}
			if !strings.Contains(got, `"code":"read_failed"`) || !strings.Contains(got, c.want) {
				t.Errorf("read_skill_resource: %s", got)
			}
			if e == nil || e.Code != CodeReadFailed || !strings.Contains(e.Message, c.want) {
				t.Errorf("resolving the script: %v", e)
			}
		})
	}
}
