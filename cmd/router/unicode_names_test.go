package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnicodeSkillNames: a skill named with lowercase non-ASCII letters
// loads with a portability warning on its name line (so validate --strict
// fails), and route, skills show and skills catalog handle its id.
func TestUnicodeSkillNames(t *testing.T) {
	lib := t.TempDir()
	writeSkillFile(t, filepath.Join(lib, "l10n", "café", "SKILL.md"), "---\nname: café\ndescription: Bake French pastries and croissants.\n---\nBody.\n")
	writeSkillFile(t, filepath.Join(lib, "日本語", "SKILL.md"), "---\nname: 日本語\ndescription: Proofread Japanese text.\n---\nBody.\n")
	writeSkillFile(t, filepath.Join(lib, "Café", "SKILL.md"), "---\nname: Café\ndescription: Uppercase stays an error.\n---\nBody.\n")

	out, errOut, err := run(t, "skills", "validate", "--skills", lib)
	if exitStatus(err) != 1 || !strings.Contains(out, filepath.Join(lib, "Café", "SKILL.md")+`:2: error: name "Café" may only contain lowercase letters, digits and hyphens (found "C"); "café" would be valid`) {
		t.Errorf("uppercase non-ASCII must be an error: %v\n%s%s", err, out, errOut)
	}
	for _, id := range []string{"l10n/café", "日本語"} {
		want := filepath.Join(lib, filepath.FromSlash(id), "SKILL.md") + ":2: warning: name"
		if !strings.Contains(out, want) || !strings.Contains(out, "outside a-z, 0-9 and hyphens") {
			t.Errorf("validate lacks the portability warning %q:\n%s", want, out)
		}
	}
	ok := t.TempDir()
	writeSkillFile(t, filepath.Join(ok, "café", "SKILL.md"), "---\nname: café\ndescription: Bake French pastries.\n---\nBody.\n")
	if _, _, err := run(t, "skills", "validate", "--skills", ok); err != nil {
		t.Errorf("a portability warning alone must exit 0: %v", err)
	}
	if _, _, err := run(t, "skills", "validate", "--skills", ok, "--strict"); exitStatus(err) != 1 {
		t.Errorf("--strict must exit 1 on the portability warning: %v", err)
	}

	for arg, id := range map[string]string{"l10n/café": "l10n/café", "café": "l10n/café", "cafe\u0301": "l10n/café", "日本語": "日本語"} {
		out, _, err := run(t, "skills", "show", "--skills", lib, arg)
		if err != nil || !strings.HasPrefix(out, `<skill_context id="`+id+`">`) {
			t.Errorf("show %s: err %v\n%s", arg, err, out)
		}
	}

	out, errOut, err = run(t, "route", "--skills", lib, "--strategy", "bm25", "--json", "#café which pastry goes with espresso?")
	if err != nil {
		t.Fatalf("route: %v\n%s", err, errOut)
	}
	var d struct {
		Selected []string `json:"selected"`
		Pinned   []string `json:"pinned"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(d.Pinned) != 1 || d.Pinned[0] != "l10n/café" {
		t.Errorf("route #café: %s", out)
	}
	out, _, err = run(t, "route", "--skills", lib, "--strategy", "bm25", "croissants")
	if err != nil || !strings.Contains(out, "l10n/café") {
		t.Errorf("route table: %v\n%s", err, out)
	}
}
