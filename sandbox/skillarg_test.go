package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// TestSkillArgumentAsLoadSkillTakesIt: read_skill_resource and
// skill_execute took only the exact id while load_skill also takes a
// unique frontmatter name or id suffix ("scripts-demo" for
// grp/scripts-demo) and a copied #mention: the model loaded a skill by
// one and was told the skill did not exist. One rule names a skill in
// every tool (skills.SkillArg, skills.Resolve).
func TestSkillArgumentAsLoadSkillTakesIt(t *testing.T) {
	s := fixtureSkill(t, "scripts-demo")
	s.ID = "grp/scripts-demo"
	other := fixtureSkill(t, "word-count")
	other.ID = "grp/word-count"
	library := []*skills.Skill{s, other}
	p, _ := newTestProvider(t, func(c *Config) {
		c.Lookup = func(id string) (*skills.Skill, bool) { return skills.Resolve(library, id) }
	})
	tools := p.Tools(context.Background(), []*skills.Skill{s})
	read := toolNamed(t, tools, ToolReadResource)
	for _, tt := range []struct {
		arg, code string // code "": read
	}{
		{"grp/scripts-demo", ""},
		{"scripts-demo", ""},  // the frontmatter name, the id's last element
		{"#scripts-demo", ""}, // a copied mention
		{" /grp/scripts-demo ", ""},
		{"word-count", CodeSkillNotActive}, // known, by the same rule, but not loaded
		{"nope", CodeUnknownSkill},
		{"  ", CodeInvalidArguments},
	} {
		out := callTool(t, read, "c", map[string]string{"skill_id": tt.arg, "path": "SKILL.md"})
		if tt.code == "" {
			var r readResult
			if err := json.Unmarshal([]byte(out), &r); err != nil || !r.OK || r.SkillID != "grp/scripts-demo" {
				t.Errorf("read_skill_resource %q: %s", tt.arg, out)
			}
			continue
		}
		if e := failureOf(t, out); e.Code != tt.code {
			t.Errorf("read_skill_resource %q: %s, want %s", tt.arg, out, tt.code)
		}
	}
	// skill_execute resolves the same way (refused on the command, past the skill).
	out := callTool(t, toolNamed(t, tools, ToolExecute), "c", map[string]any{"skill_id": "scripts-demo", "command": "no-such-script.py"})
	if e := failureOf(t, out); e.Code != CodeNotFound || e.SkillID != "grp/scripts-demo" || strings.Contains(out, "unknown_skill") {
		t.Errorf("skill_execute by name: %s", out)
	}
}

// The same text names the same skill here as in load_skill: resolved in
// the whole library first. With pdf, other/pdf and team/pdf (named pdf)
// in the library and team/pdf alone loaded, "pdf" and "other/pdf" are
// other skills, not loaded; matched among the active skills only, both
// read (and ran) team/pdf.
func TestSkillArgumentResolvedInTheLibraryFirst(t *testing.T) {
	mk := func(id string) *skills.Skill {
		s := fixtureSkill(t, "scripts-demo")
		s.ID, s.Name = id, "pdf"
		return s
	}
	plain, other, team := mk("pdf"), mk("other/pdf"), mk("team/pdf")
	plain.Name, other.Name = "pdf-plain", "pdf-other"
	library := []*skills.Skill{other, plain, team} // sorted by id
	p, _ := newTestProvider(t, func(c *Config) {
		c.Lookup = func(id string) (*skills.Skill, bool) { return skills.Resolve(library, id) }
	})
	read := toolNamed(t, p.Tools(context.Background(), []*skills.Skill{team}), ToolReadResource)
	for _, tt := range []struct {
		arg, code, skill string
	}{
		{"team/pdf", "", "team/pdf"},
		{"pdf", CodeSkillNotActive, "pdf"},
		{"other/pdf", CodeSkillNotActive, "other/pdf"},
	} {
		out := callTool(t, read, "c", map[string]string{"skill_id": tt.arg, "path": "SKILL.md"})
		if tt.code == "" {
			var r readResult
			if err := json.Unmarshal([]byte(out), &r); err != nil || !r.OK || r.SkillID != tt.skill {
				t.Errorf("%q: %s", tt.arg, out)
			}
			continue
		}
		if e := failureOf(t, out); e.Code != tt.code || e.SkillID != tt.skill {
			t.Errorf("%q: %s, want %s for %s", tt.arg, out, tt.code, tt.skill)
		}
	}
}
