package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSkillsRoots(t *testing.T) {
	examples, _ := filepath.Abs(examplesLib)
	home := isolate(t)
	mine := filepath.Join(home, ".agents", "skills")
	if err := os.MkdirAll(filepath.Join(mine, "one"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeSkillFile(t, filepath.Join(mine, "one", "SKILL.md"), "---\nname: one\ndescription: One skill. Use when testing.\n---\nBody.\n")
	writeSkillFile(t, filepath.Join(mine, "bad", "SKILL.md"), "---\nname: bad\n---\nno description\n")

	out, _, err := run(t, "skills", "roots")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ROOT", "STATUS", "SKILLS", "SOURCE", "1 (+1 skipped)", "library: 1 skill from 1 scanned root"} {
		if !strings.Contains(out, want) {
			t.Errorf("roots table lacks %q:\n%s", want, out)
		}
	}
	out, _, err = run(t, "skills", "roots", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []rootReport
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	// Run from home: ./.agents/skills is ~/.agents/skills, scanned once.
	want := []rootReport{
		{Path: filepath.Join(".claude", "skills"), Source: "Claude Code project skills", Status: "missing"},
		{Path: filepath.Join(".agents", "skills"), Source: "Agent Skills project skills (Codex)", Status: "scanned", Skills: 1, Skipped: 1},
		{Path: filepath.Join(home, ".claude", "skills"), Source: "Claude Code user skills", Status: "missing"},
		{Path: mine, Source: "Agent Skills user skills (Codex)", Status: "same folder as .agents/skills"},
		{Path: filepath.Join(home, ".codex", "skills"), Source: "Codex user skills (older location)", Status: "missing"},
		{Path: filepath.Join(home, "cfg", "skillrouter", "skills"), Source: "skillrouter user skills", Status: "missing"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("default roots:\n got %+v\nwant %+v", rows, want)
	}

	out, _, err = run(t, "skills", "roots", "--json", "--skills", examples, "--skills", "builtin:examples", "--skills", "nope")
	if err != nil {
		t.Fatal(err)
	}
	rows = nil
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Status != "scanned" || rows[0].Skills != 10 || rows[0].Source != "flag --skills" ||
		rows[1].Source != "flag --skills (builtin:examples)" || rows[1].Skills != 10 || rows[2].Status != "missing" {
		t.Errorf("configured roots: %s", out)
	}
}
