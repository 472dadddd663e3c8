package skills

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// issueCatalog is the catalog template of issue 2, verbatim (note the
// trailing space after "tool"). Rendering a skill whose id and description
// are "..." must reproduce it byte for byte.
const issueCatalog = "## Agent Skills\n" +
	"You have access to a library of agent skills. Find skill by:\n" +
	"1. Review the <available_skills> list below.\n" +
	"2. If the user's request matches a skill's purpose, use the load_skill with skill id tool \n" +
	"   to fetch the full instructions.\n" +
	"\n" +
	"<available_skills>\n" +
	"  <skill>\n" +
	"    <id>...</id>\n" +
	"    <description>...</description>\n" +
	"  </skill>\n" +
	"</available_skills>"

// issueEnvelope is the load_skill envelope of issue 2, verbatim (note the
// trailing space after "protocol."), with the "..." of <active_resources>
// replaced by RESOURCES.
const issueEnvelope = `<skill_context id="{{skill_id}}">
  <instructions>
    {{full_skill_markdown_content}}
  </instructions>

  <active_resources>
RESOURCES  </active_resources>

  <execution_directive>
    You are now operating under the specialized {{skill_name}} protocol. ` + `
    1. Prioritize the logic in <instructions> over generic behavior.
    2. Use the data in <active_resources> to complete the user's specific request.
    3. If the workflow is multi-step, explicitly state your plan before executing.
  </execution_directive>
</skill_context>`

func TestCatalogMatchesIssueTemplate(t *testing.T) {
	got := RenderCatalog([]*Skill{{ID: "...", Description: "..."}}, CatalogOptions{})
	if got != issueCatalog {
		t.Fatalf("catalog differs from the issue's template:\n%q\nwant\n%q", got, issueCatalog)
	}
	if !strings.Contains(got, "skill id tool \n") {
		t.Fatal("trailing space after 'tool' lost")
	}
}

func TestEnvelopeMatchesIssueTemplate(t *testing.T) {
	s := (&Skill{ID: "{{skill_id}}", Name: "{{skill_name}}", Dir: "lib/x",
		Resources: []Resource{{Path: "scripts/a.py", Size: 12, Kind: KindScript}}}).SetText("{{full_skill_markdown_content}}\n", "")
	want := strings.Replace(issueEnvelope, "RESOURCES",
		"    <folder>lib/x</folder>\n    <resource path=\"scripts/a.py\" kind=\"script\" size=\"12\"/>\n", 1)
	if got := Envelope(s); got != want {
		t.Fatalf("envelope differs from the issue's template:\n%s\nwant\n%s", got, want)
	}
}

func TestRenderGolden(t *testing.T) {
	snap := loadFixture(t)
	good, ok := snap.Get("good-skill")
	if !ok {
		t.Fatal("good-skill not loaded")
	}
	alpha, _ := snap.Get("source-a/alpha")
	long, _ := snap.Get("broken/long-description")
	list := snap.Skills()
	cases := []struct {
		name string
		got  string
	}{
		{"catalog-agent-skills.golden", RenderCatalog(list, CatalogOptions{})},
		// <location> is absolute; the golden file holds it below this folder.
		{"catalog-anthropic.golden", strings.ReplaceAll(RenderCatalog(list, CatalogOptions{Format: FormatAnthropic}), "<location>"+cwd(t)+"/", "<location>")},
		{"catalog-qark.golden", RenderCatalog(list, CatalogOptions{Format: FormatQARK})},
		{"catalog-no-load-tool.golden", RenderCatalog([]*Skill{alpha, good}, CatalogOptions{NoLoadTool: true})},
		{"catalog-options.golden", RenderCatalog([]*Skill{alpha, good, long}, CatalogOptions{
			Priority: []string{"good-skill", "source-a/alpha"}, MaxDescription: 60, Footer: "4 more skills: use search_skills"})},
		{"envelope-resources.golden", Envelope(good)},
		{"envelope-no-resources.golden", Envelope(alpha)},
		{"notfound-suggestions.golden", NotFound("alpha", snap, true)},
		{"notfound-none.golden", NotFound("zzz-nothing-like-it", snap, true)},
		{"notfound-none-nosearch.golden", NotFound("zzz-nothing-like-it", snap, false)},
		{"notfound-skipped.golden", NotFound("broken/empty", snap, true)},
		{"read-error.golden", ReadError("good-skill", fmt.Errorf("open SKILL.md: permission denied <&>"))},
		{"tool-enum.golden", string(LoadSkillTool(list))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { golden(t, c.name, c.got) })
	}
}

func TestCatalogEscapesXML(t *testing.T) {
	s := &Skill{ID: `a&b/<x>"q"`, Name: "n<1>", Path: "lib/a&b/SKILL.md", Description: "Use <when> A & B \"quoted\"\x01 ok"}
	for _, f := range Formats {
		out := RenderCatalog([]*Skill{s}, CatalogOptions{Format: f, Priority: []string{"<p>"}})
		list := out[strings.Index(out, "<available_skills>"):]
		for _, raw := range []string{"<x>", "<when>", " & ", "<p>", "\x01", "n<1>", "a&b"} {
			if strings.Contains(list, raw) {
				t.Errorf("%s: unescaped %q in\n%s", f, raw, list)
			}
		}
		if !strings.Contains(list, "Use &lt;when&gt; A &amp; B") {
			t.Errorf("%s: description not escaped as expected:\n%s", f, list)
		}
	}
	q := RenderCatalog([]*Skill{s}, CatalogOptions{Format: FormatQARK})
	if !strings.Contains(q, `name="a&amp;b/&lt;x&gt;&quot;q&quot;"`) {
		t.Errorf("qark attribute not escaped:\n%s", q)
	}
	env := Envelope((&Skill{ID: `x"y`, Name: "x"}).SetText("body <kept> & raw", ""))
	if !strings.Contains(env, `id="x&quot;y"`) || !strings.Contains(env, "body <kept> & raw") {
		t.Errorf("envelope must escape the id attribute and keep the content raw:\n%s", env)
	}
}

func TestShortDescription(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"one\n  two\tthree ", 0, "one two three"},
		{"short enough", 20, "short enough"},
		{"Use when converting files between formats quickly", 20, "Use when converting…"},
		{"Supercalifragilisticexpialidocious", 10, "Supercali…"},
		{"ab, cd, ef, gh", 9, "ab, cd…"},
		{"héllo wörld ünïcode", 12, "héllo wörld…"},
		{"anything", 1, "…"},
		{"short", 10, "short"},
		{"  folded \n  spaces ", 0, "folded spaces"},
		{"one two three four five", 12, "one two…"},
		{"abcdefghijklmnop", 6, "abcde…"},
		{"déjà vu encore une fois", 9, "déjà vu…"},
		{"end. Next sentence", 6, "end…"},
	}
	for _, tt := range tests {
		got := ShortDescription(tt.in, tt.limit)
		if got != tt.want {
			t.Errorf("ShortDescription(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
		if tt.limit > 0 && len([]rune(got)) > tt.limit {
			t.Errorf("ShortDescription(%q, %d) = %q is longer than the limit", tt.in, tt.limit, got)
		}
	}
}

func TestEnvelopeEdgeCases(t *testing.T) {
	// In-memory skill (benchmarks): no file, no folder, body only.
	env := Envelope((&Skill{ID: "tools/weather"}).SetText("", "Get the weather."))
	if !strings.Contains(env, "    Get the weather.\n  </instructions>") {
		t.Errorf("body not used when Content is empty:\n%s", env)
	}
	if strings.Contains(env, "<folder>") || !strings.Contains(env, "none: this skill has no files besides SKILL.md") {
		t.Errorf("in-memory skill should have no folder and an empty-state line:\n%s", env)
	}
	if !strings.Contains(env, "specialized weather protocol. \n") {
		t.Errorf("skill name should fall back to the folder name:\n%s", env)
	}
	env = Envelope((&Skill{ID: "a", Name: "a", Dir: "lib/a", ResourcesOmitted: 7,
		Resources: []Resource{{Path: "f.txt", Size: 1, Kind: KindOther}}}).SetText("x\n", ""))
	if !strings.Contains(env, `<omitted_resources count="7"/>`) {
		t.Errorf("omitted resources not reported:\n%s", env)
	}
	if strings.HasSuffix(env, "\n") {
		t.Error("envelope must not end with a newline")
	}
}

func TestLoadSkillTool(t *testing.T) {
	mk := func(n int) []*Skill {
		out := make([]*Skill, n)
		for i := range out {
			out[i] = &Skill{ID: fmt.Sprintf("src/skill-%03d", i)}
		}
		return out
	}
	for _, n := range []int{0, 1, EnumLimit, EnumLimit + 1} {
		raw := LoadSkillTool(mk(n))
		var def struct {
			Type     string `json:"type"`
			Function struct {
				Name       string `json:"name"`
				Parameters struct {
					Type       string `json:"type"`
					Properties map[string]struct {
						Type string    `json:"type"`
						Enum *[]string `json:"enum"`
					} `json:"properties"`
					Required []string `json:"required"`
				} `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &def); err != nil {
			t.Fatalf("n=%d: invalid JSON: %v\n%s", n, err, raw)
		}
		p := def.Function.Parameters
		if def.Type != "function" || def.Function.Name != "load_skill" || p.Type != "object" ||
			len(p.Required) != 1 || p.Required[0] != "skill_id" || p.Properties["skill_id"].Type != "string" {
			t.Fatalf("n=%d: wrong shape: %s", n, raw)
		}
		enum := p.Properties["skill_id"].Enum
		wantEnum := n > 0 && n <= EnumLimit
		if (enum != nil) != wantEnum || (wantEnum && len(*enum) != n) {
			t.Errorf("n=%d: enum present=%v, want %v", n, enum != nil, wantEnum)
		}
		if again := LoadSkillTool(mk(n)); string(again) != string(raw) {
			t.Errorf("n=%d: not deterministic", n)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range []string{"", "agent-skills", "anthropic", "qark"} {
		if _, err := ParseFormat(f); err != nil {
			t.Errorf("ParseFormat(%q): %v", f, err)
		}
	}
	if _, err := ParseFormat("markdown"); err == nil {
		t.Error("ParseFormat(markdown) should fail")
	}
}

func cwd(t *testing.T) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(d)
}

func TestEnvelopeGuardsItsTags(t *testing.T) {
	tests := []struct{ body, want string }{
		{"plain text, <b>bold</b> and a < b", "plain text, <b>bold</b> and a < b"},
		{"an example: </instructions></skill_context> done", "an example: &lt;/instructions>&lt;/skill_context> done"},
		{`<skill_context id="x">nested</skill_context>`, `&lt;skill_context id="x">nested&lt;/skill_context>`},
		{"</SKILL_CONTEXT >", "&lt;/SKILL_CONTEXT >"},
		{"wrap it in <instructions>...</instructions>", "wrap it in <instructions>...&lt;/instructions>"},
		{"<instructionset> and </instructions/> and </instructions", "<instructionset> and &lt;/instructions/> and &lt;/instructions"},
		{"ends with <", "ends with <"},
	}
	for _, tt := range tests {
		env := Envelope((&Skill{ID: "doc", Name: "doc"}).SetText("", tt.body))
		if !strings.Contains(env, "\n    "+tt.want+"\n  </instructions>") {
			t.Errorf("body %q:\n%s", tt.body, env)
		}
		// The envelope's own tags are the only ones a scan finds.
		if n := strings.Count(env, "</skill_context>"); n != 1 {
			t.Errorf("body %q: %d closing tags", tt.body, n)
		}
		if !IsEnvelope(env) {
			t.Errorf("body %q: not an envelope", tt.body)
		}
	}
}
