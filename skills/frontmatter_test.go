package skills

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestFrontmatter(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "demo", SkillFile)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("\uFEFF---\r\nname: demo\r\ndescription: >\r\n  Folded text\r\n  over lines.\r\nlicense: MIT\r\nmetadata:\r\n  released: 2025-03-01\r\n  n: 3\r\n  tags: [a, b]\r\nx-custom: true\r\n---\r\nBody\r\n"), 0o644)
	sk, ok := Load(t.Context(), []string{dir}, Options{}).Get("demo")
	if !ok {
		t.Fatal("not loaded")
	}
	fm, err := sk.Frontmatter()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(fm)
	want := `{"description":"Folded text over lines.\n","license":"MIT","metadata":{"n":3,"released":"2025-03-01","tags":["a","b"]},"name":"demo","x-custom":true}`
	if string(b) != want {
		t.Errorf("frontmatter\n%s\nwant\n%s", b, want)
	}
	if v := sk.Extra["x-custom"]; v != true {
		t.Errorf("extra %v", sk.Extra)
	}
	if _, err := (&Skill{}).SetText("", "no file").Frontmatter(); err == nil {
		t.Error("a skill without SKILL.md text has frontmatter")
	}
}
