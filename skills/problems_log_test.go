package skills

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReloadLogsNewProblems: a broken SKILL.md is logged with its path when
// it first appears (startup or a reload), not again on later reloads, and
// warnings are summarised at info.
func TestReloadLogsNewProblems(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "good"), "Body.\n")
	broken := writeFile(t, filepath.Join(root, "broken", SkillFile), "---\nname: broken\n---\nno description\n")
	writeFile(t, filepath.Join(root, "warned", SkillFile), "---\nname: other-name\ndescription: Named unlike its folder.\n---\nBody.\n")

	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	reg := NewRegistry([]string{root}, Options{})
	reg.SetLogger(log)
	reg.Snapshot().LogProblems(log, nil) // what serve does at startup
	out := buf.String()
	for _, want := range []string{"level=WARN", "skipped a broken skill", broken, "new_warnings=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("startup log lacks %q:\n%s", want, out)
		}
	}

	buf.Reset()
	reg.Reload(context.Background())
	if buf.Len() != 0 {
		t.Errorf("a reload with the same problems logged again:\n%s", buf.String())
	}

	broken2 := writeFile(t, filepath.Join(root, "broken2", SkillFile), "not frontmatter at all\n")
	reg.Reload(context.Background())
	out = buf.String()
	if !strings.Contains(out, broken2) || strings.Contains(out, broken+":") || strings.Contains(out, "new_warnings") {
		t.Errorf("reload should log only the new broken skill %s:\n%s", broken2, out)
	}
}

// TestReloadLogsFixedSkills: a skill that a reload finds fixed is logged at
// info, so an author who logged "skipped a broken skill" sees the fix take.
func TestReloadLogsFixedSkills(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "good"), "Body.\n")
	broken := writeFile(t, filepath.Join(root, "broken", SkillFile), "---\nname: broken\n---\nno description\n")
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	reg := NewRegistry([]string{root}, Options{})
	reg.SetLogger(log)

	writeSkill(t, filepath.Join(root, "broken"), "Fixed.\n")
	reg.Reload(context.Background())
	if out := buf.String(); !strings.Contains(out, "level=INFO") || !strings.Contains(out, "loads again") || !strings.Contains(out, broken) {
		t.Errorf("the fix is not logged:\n%s", out)
	}

	writeFile(t, filepath.Join(root, "gone", SkillFile), "---\nname: gone\ndescription: [oops\n---\n")
	reg.Reload(context.Background())
	buf.Reset()
	os.RemoveAll(filepath.Join(root, "gone"))
	reg.Reload(context.Background())
	if strings.Contains(buf.String(), "loads again") {
		t.Errorf("a broken skill that was deleted does not load again:\n%s", buf.String())
	}
}

// TestReloadLogsAddedAndRemoved: a reload names the skills that came and
// went (a deletion was otherwise silent); one broken or fixed is logged as
// such, not again here.
func TestReloadLogsAddedAndRemoved(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "good"), "Body.\n")
	writeSkill(t, filepath.Join(root, "old"), "Body.\n")
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	reg := NewRegistry([]string{root}, Options{})
	reg.SetLogger(log)
	writeSkill(t, filepath.Join(root, "new"), "Body.\n")
	os.RemoveAll(filepath.Join(root, "old"))
	reg.Reload(context.Background())
	if out := buf.String(); !strings.Contains(out, `msg="skills: library changed" added=new removed=old changed="" skills=2`) {
		t.Errorf("log:\n%s", out)
	}
	// An edit names the skill; a reload that changes nothing logs nothing.
	buf.Reset()
	writeSkill(t, filepath.Join(root, "new"), "Edited body.\n")
	reg.Reload(context.Background())
	reg.Reload(context.Background())
	if out := buf.String(); strings.Count(out, "library changed") != 1 || !strings.Contains(out, `added="" removed="" changed=new skills=2`) {
		t.Errorf("an edit:\n%s", out)
	}
	buf.Reset()
	writeFile(t, filepath.Join(root, "good", SkillFile), "---\nname: good\n---\nno description\n")
	reg.Reload(context.Background())
	if out := buf.String(); strings.Contains(out, "library changed") || !strings.Contains(out, "skipped a broken skill") {
		t.Errorf("a broken skill is logged as broken, not as removed:\n%s", out)
	}
}

// TestReloadWarnsWhenTheLibraryEmpties: a library that loses all its
// skills, or most of them at once, is warned about (a volume gone, a
// git-sync link broken), where an edit that removes a few is info.
func TestReloadWarnsWhenTheLibraryEmpties(t *testing.T) {
	root := t.TempDir()
	for i := range 12 {
		writeSkill(t, filepath.Join(root, "s"+string(rune('a'+i))), "Body.\n")
	}
	var buf bytes.Buffer
	reg := NewRegistry([]string{root}, Options{})
	reg.SetLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	os.RemoveAll(filepath.Join(root, "sa"))
	reg.Reload(context.Background())
	if out := buf.String(); strings.Contains(out, "level=WARN") {
		t.Errorf("one skill removed:\n%s", out)
	}
	buf.Reset()
	for i := 1; i < 8; i++ {
		os.RemoveAll(filepath.Join(root, "s"+string(rune('a'+i))))
	}
	reg.Reload(context.Background())
	if out := buf.String(); !strings.Contains(out, `level=WARN msg="skills: the library lost more than half its skills at once" skills_before=11 skills=4`) {
		t.Errorf("7 of 11 removed:\n%s", out)
	}
	buf.Reset()
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	reg.Reload(context.Background())
	if out := buf.String(); !strings.Contains(out, `level=WARN msg="skills: the library is empty now`) || !strings.Contains(out, "skills_before=4") {
		t.Errorf("the root gone:\n%s", out)
	}
}
