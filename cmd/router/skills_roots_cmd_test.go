package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/internal/private/privatetest"
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

// TestSkillsRootsAgreesWithList: `router skills roots` shows a default
// folder as scanned only when `skills list` (and serve) read it, and counts
// the skills they load: a ./.claude/skills that other users can change is
// "not read: why", and a skill folder of another user's in a folder of this
// user's is left out of both. Cases marked root make files another user's.
func TestSkillsRootsAgreesWithList(t *testing.T) {
	const skill = "---\nname: %s\ndescription: The %s skill. Use when testing.\n---\nBody.\n"
	for _, c := range []struct {
		name   string
		root   bool
		setup  func(t *testing.T, proj string)
		status string   // of ./.claude/skills: "scanned", else the start of "not read: ..."
		listed []string // ids skills list shows; nil: it finds no library
	}{
		{"own folder", false, func(t *testing.T, proj string) {}, "scanned", []string{"evil", "fine"}},
		{"folder every user can write", false, func(t *testing.T, proj string) {
			if err := os.Chmod(filepath.Join(proj, ".claude", "skills"), os.ModeSticky|0o777); err != nil {
				t.Fatal(err)
			}
		}, "not read: " + "PROJ/.claude/skills is writable by other users (mode 1777)", nil},
		{"another user's folder", true, func(t *testing.T, proj string) {
			if err := os.Chown(filepath.Join(proj, ".claude", "skills"), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "not read: PROJ/.claude/skills belongs to another user (uid 65534)", nil},
		{"another user's link to a root-owned 1777 folder", true, func(t *testing.T, proj string) {
			shared := filepath.Join(t.TempDir(), "vartmp")
			if err := os.Rename(filepath.Join(proj, ".claude", "skills"), shared); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(shared, os.ModeSticky|0o777); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(proj, ".claude", "skills")
			if err := os.Symlink(shared, link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "not read: PROJ/.claude/skills belongs to another user (uid 65534)", nil},
		{"link climbing back into a project in a team folder", false, func(t *testing.T, proj string) {
			// The team folder above the project is its group's to write:
			// checked from the project down, as the root is, the link is
			// read; checked from / (as the scan did), it was not.
			team := filepath.Dir(proj)
			if err := os.Chmod(team, 0o775); err != nil {
				t.Fatal(err)
			}
			privatetest.ShareGroup(t, team)
			evil := filepath.Join(proj, ".claude", "skills", "evil")
			if err := os.Rename(evil, filepath.Join(proj, "shared-skills")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join("..", "..", "shared-skills"), evil); err != nil {
				t.Fatal(err)
			}
		}, "scanned", []string{"evil", "fine"}},
		{"script every user can write in an own skill folder", false, func(t *testing.T, proj string) {
			script := filepath.Join(proj, ".claude", "skills", "evil", "scripts", "run.py")
			writeSkillFile(t, script, "print(1)\n")
			if err := os.Chmod(script, 0o666); err != nil {
				t.Fatal(err)
			}
		}, "scanned", []string{"fine"}},
		{"another user's skill folder in an own folder", true, func(t *testing.T, proj string) {
			if err := os.Chown(filepath.Join(proj, ".claude", "skills", "evil"), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "scanned", []string{"fine"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("making a file another user's needs root")
			}
			isolate(t)
			proj := filepath.Join(t.TempDir(), "team", "proj")
			for _, id := range []string{"evil", "fine"} {
				writeSkillFile(t, filepath.Join(proj, ".claude", "skills", id, "SKILL.md"), fmt.Sprintf(skill, id, id))
			}
			c.setup(t, proj)
			t.Chdir(proj)

			out, _, err := run(t, "skills", "roots", "--json")
			if err != nil {
				t.Fatal(err)
			}
			var rows []rootReport
			if err := json.Unmarshal([]byte(out), &rows); err != nil {
				t.Fatal(err)
			}
			if rows[0].Path != filepath.Join(".claude", "skills") {
				t.Fatalf("first row: %+v", rows[0])
			}
			if want := strings.ReplaceAll(c.status, "PROJ", proj); !strings.HasPrefix(rows[0].Status, want) {
				t.Errorf("skills roots: status %q, want %q", rows[0].Status, want)
			}
			if rows[0].Skills != len(c.listed) {
				t.Errorf("skills roots: %d skills, skills list %d", rows[0].Skills, len(c.listed))
			}

			out, _, err = run(t, "skills", "list", "--json")
			if c.listed == nil {
				if err == nil || !strings.Contains(err.Error(), "those that exist are not read") {
					t.Fatalf("skills list: %v\n%s", err, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var list []struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range list {
				ids = append(ids, s.ID)
			}
			if !reflect.DeepEqual(ids, c.listed) {
				t.Errorf("skills list: %q, want %q", ids, c.listed)
			}
		})
	}
}
