package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

const (
	examplesLib = "../../examples/skills"
	fixtureLib  = "../../skills/testdata/lib"
)

// run executes the CLI with args and returns stdout, stderr and the error.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ec exitCode
	if asExit(err, &ec) {
		return int(ec)
	}
	return -1
}

func TestSkillsListTable(t *testing.T) {
	out, _, err := run(t, "skills", "list", "--skills", examplesLib)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "DESCRIPTION") {
		t.Errorf("no header: %q", lines[0])
	}
	if len(lines)-1 < 8 {
		t.Errorf("the example library must have at least 8 skills, listed %d", len(lines)-1)
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, " ok ") && !strings.HasSuffix(strings.Fields(l)[3], "ok") {
			t.Errorf("example skill not clean: %q", l)
		}
	}
}

func TestSkillsListJSON(t *testing.T) {
	out, _, err := run(t, "skills", "list", "--json", "--skills", fixtureLib)
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, out)
	}
	if len(list) != 16 {
		t.Errorf("want every skill including skipped ones (16), got %d", len(list))
	}
	for _, obj := range list {
		for _, k := range []string{"id", "name", "description", "path", "type", "resources", "problems"} {
			if _, ok := obj[k]; !ok {
				t.Errorf("object %s lacks %q", obj["id"], k)
			}
		}
		if string(obj["resources"]) == "null" || string(obj["problems"]) == "null" {
			t.Errorf("%s: resources/problems must be arrays", obj["id"])
		}
	}
	if !strings.Contains(out, `"id": "broken/empty"`) || !strings.Contains(out, `"skipped": true`) {
		t.Error("skipped skills missing from --json")
	}
}

func TestSkillsValidate(t *testing.T) {
	out, errOut, err := run(t, "skills", "validate", "--skills", fixtureLib)
	if exitStatus(err) != 1 {
		t.Fatalf("errors in the library must exit 1, got %v", err)
	}
	for _, want := range []string{
		"../../skills/testdata/lib/broken/empty/SKILL.md:1: error: SKILL.md is empty",
		"../../skills/testdata/lib/broken/invalid-yaml/SKILL.md:4: error: invalid YAML in frontmatter",
		"../../skills/testdata/lib/source-a/beta/SKILL.md:2: warning: name \"beta-skill\" does not match",
		"../../skills/testdata/lib/lowercase/skill.md: error: found skill.md",
	} {
		if !strings.Contains(out, want+"") {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "16 skills checked (7 loaded, 9 skipped): 12 errors, 11 warnings") {
		t.Errorf("summary: %q", errOut)
	}

	if _, _, err := run(t, "skills", "validate", "--skills", examplesLib, "--strict"); err != nil {
		t.Errorf("the example library must validate cleanly even with --strict: %v", err)
	}

	warnOnly := t.TempDir()
	writeSkillFile(t, filepath.Join(warnOnly, "folder", "SKILL.md"), "---\nname: other-name\ndescription: d\n---\n")
	if _, _, err := run(t, "skills", "validate", "--skills", warnOnly); err != nil {
		t.Errorf("warnings alone must exit 0: %v", err)
	}
	if _, _, err := run(t, "skills", "validate", "--skills", warnOnly, "--strict"); exitStatus(err) != 1 {
		t.Errorf("--strict must exit 1 on warnings: %v", err)
	}
}

func TestSkillsShow(t *testing.T) {
	out, _, err := run(t, "skills", "show", "--skills", examplesLib, "csv-data-profiling")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, `<skill_context id="csv-data-profiling">`) ||
		!strings.Contains(out, `<resource path="scripts/profile.py" kind="script"`) ||
		!strings.HasSuffix(out, "</skill_context>\n") {
		t.Errorf("unexpected envelope:\n%s", out)
	}

	out, errOut, err := run(t, "skills", "--skills", fixtureLib, "show", "alph")
	if exitStatus(err) != 1 {
		t.Fatalf("unknown id must exit 1: %v", err)
	}
	if !strings.Contains(errOut, `no skill "alph" in the library`) || !strings.Contains(errOut, "did you mean source-a/alpha") {
		t.Errorf("no plain message for the person on stderr: %q", errOut)
	}
	if !strings.Contains(out, `reason="not_found"`) || !strings.Contains(out, "<id>source-a/alpha</id>") {
		t.Errorf("not-found result:\n%s", out)
	}

	_, errOut, err = run(t, "skills", "show", "--skills", fixtureLib, "broken/empty")
	if exitStatus(err) != 1 || !strings.Contains(errOut, "was skipped because of these problems") ||
		!strings.Contains(errOut, "SKILL.md is empty") {
		t.Errorf("skipped skill should explain why: err=%v stderr=%q", err, errOut)
	}

	if _, _, err := run(t, "skills", "show", "--skills", fixtureLib); err == nil {
		t.Error("show without an id must fail")
	}
}

// skills show prints what load_skill answers for the same argument: an id,
// a unique frontmatter name or a unique last path element all load the
// skill, an ambiguous one does not.
func TestSkillsShowResolvesLikeLoadSkill(t *testing.T) {
	lib := t.TempDir()
	writeSkillFile(t, filepath.Join(lib, "team", "pdf-tools", "SKILL.md"), "---\nname: pdf-tools\ndescription: d\n---\n")
	writeSkillFile(t, filepath.Join(lib, "folder", "SKILL.md"), "---\nname: fancy-name\ndescription: d\n---\n")
	writeSkillFile(t, filepath.Join(lib, "x", "dup", "SKILL.md"), "---\nname: dup\ndescription: d\n---\n")
	writeSkillFile(t, filepath.Join(lib, "y", "dup", "SKILL.md"), "---\nname: dup\ndescription: d\n---\n")
	tests := []struct {
		arg, want string // want: the envelope's id, "" for not found
	}{
		{"team/pdf-tools", "team/pdf-tools"},
		{"pdf-tools", "team/pdf-tools"},
		{"fancy-name", "folder"},
		{"folder", "folder"},
		{"dup", ""},
		{"x/dup", "x/dup"},
	}
	for _, tt := range tests {
		out, errOut, err := run(t, "skills", "show", "--skills", lib, tt.arg)
		if tt.want == "" {
			if exitStatus(err) != 1 || !strings.Contains(out, `reason="not_found"`) {
				t.Errorf("show %s: want not found, got err %v:\n%s", tt.arg, err, out)
			}
			// The person is told the name is shared, not that no skill has it.
			if want := `"dup" is the name of 2 skills: x/dup, y/dup; give one of their ids`; !strings.Contains(errOut, want) {
				t.Errorf("show %s: stderr %q, want %q", tt.arg, errOut, want)
			}
			continue
		}
		if err != nil || !strings.HasPrefix(out, `<skill_context id="`+tt.want+`">`) {
			t.Errorf("show %s: want the envelope of %s, got err %v:\n%s", tt.arg, tt.want, err, out)
		}
	}
}

func TestSkillsCatalog(t *testing.T) {
	out, _, err := run(t, "skills", "catalog", "--skills", examplesLib)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "## Agent Skills\n") || !strings.Contains(out, "<id>regex-builder</id>") {
		t.Errorf("catalog:\n%s", out)
	}
	out, _, err = run(t, "skills", "catalog", "--skills", examplesLib, "--format", "anthropic")
	abs, _ := filepath.Abs(filepath.Join(examplesLib, "regex-builder", "SKILL.md"))
	if err != nil || !strings.Contains(out, "<location>"+filepath.ToSlash(abs)+"</location>") { // absolute: the agent may run anywhere
		t.Errorf("anthropic catalog (err %v):\n%s", err, out)
	}
	out, _, err = run(t, "skills", "catalog", "--skills", examplesLib, "--format", "qark", "--priority", "regex-builder,sql-query-tuning")
	if err != nil || !strings.Contains(out, `<skill name="regex-builder">`) ||
		!strings.Contains(out, "<prioritized_skills>regex-builder, sql-query-tuning</prioritized_skills>") {
		t.Errorf("qark catalog (err %v):\n%s", err, out)
	}
	if _, _, err := run(t, "skills", "catalog", "--skills", examplesLib, "--format", "markdown"); err == nil || !strings.Contains(err.Error(), "unknown catalog format") || !isUsage(err) {
		t.Errorf("bad format: %v", err)
	}
	out, _, err = run(t, "skills", "catalog", "--skills", examplesLib, "--tool")
	var tool map[string]any
	if err != nil || json.Unmarshal([]byte(out), &tool) != nil || !strings.Contains(out, `"enum":["api-design-review"`) {
		t.Errorf("tool (err %v):\n%s", err, out)
	}

	// Disabled skills stay out of the catalog.
	lib := t.TempDir()
	writeSkillFile(t, filepath.Join(lib, "on", "SKILL.md"), "---\nname: on\ndescription: d\n---\n")
	writeSkillFile(t, filepath.Join(lib, "off", "SKILL.md"), "---\nname: off\ndescription: d\nenabled: false\n---\n")
	out, _, _ = run(t, "skills", "catalog", "--skills", lib)
	if !strings.Contains(out, "<id>on</id>") || strings.Contains(out, "<id>off</id>") {
		t.Errorf("disabled skill handling:\n%s", out)
	}
}

func TestSkillsNoLibrary(t *testing.T) {
	examples, err := filepath.Abs(examplesLib)
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	t.Setenv("HOME", empty)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(empty, "cfg"))
	t.Chdir(empty)
	for _, sub := range []string{"list", "validate", "catalog"} {
		_, _, err := run(t, "skills", sub)
		if err == nil || !strings.Contains(err.Error(), "--skills") || exitStatus(err) != -1 {
			t.Errorf("%s without any library: %v", sub, err)
		}
	}
	_, _, err = run(t, "skills", "list", "--skills", filepath.Join(empty, "nope"))
	if err == nil || !strings.Contains(err.Error(), "no such folder") {
		t.Errorf("missing --skills folder: %v", err)
	}
	// One missing root among existing ones is a reported problem, not a failure.
	out, errOut, err := run(t, "skills", "list", "--skills", filepath.Join(empty, "nope"), "--skills", examples)
	if err != nil || !strings.Contains(errOut, "skills root does not exist") || !strings.Contains(out, "regex-builder") {
		t.Errorf("partial roots: err %v stderr %q", err, errOut)
	}
}

func writeSkillFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSkillsValidateLibraryWarnings: warnings that only the library as a
// whole shows (two skills sharing a name) and an empty body are printed
// with path and line, fail --strict, and count in doctor's library row.
func TestSkillsValidateLibraryWarnings(t *testing.T) {
	skill := func(name, body string) string {
		return "---\nname: " + name + "\ndescription: The " + name + " skill. Use when testing.\n---\n" + body
	}
	tests := []struct {
		name  string
		files map[string]string // path under the root -> content
		want  []string          // parts of validate's output; ROOT is the root
		warns int
	}{
		{"shared name", map[string]string{"a/pdf/SKILL.md": skill("pdf", "A\n"), "b/pdf/SKILL.md": skill("pdf", "B\n")},
			[]string{`ROOT/a/pdf/SKILL.md:2: warning: name "pdf" is also the name of "b/pdf" (ROOT/b/pdf/SKILL.md)`, `by its full id "a/pdf"`,
				`ROOT/b/pdf/SKILL.md:2: warning: name "pdf" is also the name of "a/pdf" (ROOT/a/pdf/SKILL.md)`, `by its full id "b/pdf"`}, 2},
		{"empty body", map[string]string{"x/SKILL.md": skill("x", "\n\n")},
			[]string{`ROOT/x/SKILL.md:4: warning: body is empty`}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range tt.files {
				writeSkillFile(t, filepath.Join(root, filepath.FromSlash(p)), content)
			}
			out, errOut, err := run(t, "skills", "validate", "--skills", root)
			if err != nil {
				t.Fatalf("warnings alone must exit 0: %v\n%s%s", err, out, errOut)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "ROOT", root); !strings.Contains(out, w) {
					t.Errorf("validate output lacks %q:\n%s", w, out)
				}
			}
			if !strings.Contains(errOut, plural(tt.warns, "warning")) {
				t.Errorf("summary: %q", errOut)
			}
			if _, _, err := run(t, "skills", "validate", "--skills", root, "--strict"); exitStatus(err) != 1 {
				t.Errorf("--strict must exit 1: %v", err)
			}
			row := libraryRow(context.Background(), &config{Skills: []string{root}}, "", "router skills validate")
			if row.status != checkWarn || !strings.Contains(row.detail, plural(tt.warns, "warning")) {
				t.Errorf("doctor's library row: %+v", row)
			}
		})
	}
}

// skills list says what frontmatter turns off, not a plain "ok".
func TestSkillsListStatusOptOuts(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		s    *skills.Skill
		want string
	}{
		{&skills.Skill{}, "ok"},
		{&skills.Skill{Enabled: &no}, "disabled (enabled: false)"},
		{&skills.Skill{AutoLoad: &no}, "ok, never auto-loaded"},
		{&skills.Skill{Enabled: &yes, Problems: []skills.Problem{{Severity: skills.SeverityWarning}}}, "ok, 1 warning"},
		{&skills.Skill{Enabled: &no, Problems: []skills.Problem{{Severity: skills.SeverityWarning}}}, "disabled (enabled: false), 1 warning"},
	} {
		if got := status(tc.s); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// A folder with no skill at all (a wrong path, a lowercase skill.md) fails
// validate and says what a library looks like; route says the library is
// empty instead of "no skill is a confident match".
func TestEmptyLibrarySaid(t *testing.T) {
	empty := t.TempDir()
	_, errOut, err := run(t, "skills", "validate", "--skills", empty)
	if exitStatus(err) != 1 || !strings.Contains(errOut, "no skill found under "+empty) {
		t.Errorf("validate: exit %d, stderr %q", exitStatus(err), errOut)
	}
	out, _, err := run(t, "route", "--skills", empty, "tune my slow sql query")
	if err != nil || !strings.Contains(out, "the library has no skill") {
		t.Errorf("route: %v\n%s", err, out)
	}
}

// A misspelled SKILLROUTER_ variable is not read; every command says so
// (serve and mcp in their log).
func TestMisspelledEnvSaid(t *testing.T) {
	t.Setenv("SKILLROUTER_ROUTNG_STRATEGY", "bm25")
	_, errOut, err := run(t, "route", "--skills", examplesLib, "tune my slow sql query")
	if err != nil || !strings.Contains(errOut, "SKILLROUTER_ROUTNG_STRATEGY is not read by skillrouter; did you mean SKILLROUTER_ROUTING_STRATEGY?") {
		t.Errorf("route: %v, stderr %q", err, errOut)
	}
}

// TestProblemHintsNameTheLibrary: the `router skills validate` a command
// points to for the problems it counted reads the same library (its
// --skills or --config): a bare one reads the default folders instead.
func TestProblemHintsNameTheLibrary(t *testing.T) {
	root := filepath.Join(t.TempDir(), "lib")
	// A name that differs from its folder: a warning, the skill loads.
	writeSkillFile(t, filepath.Join(root, "notes", "SKILL.md"), "---\nname: release-notes\ndescription: Write release notes from merged changes.\n---\nGroup them.\n")
	cfgFile := writeFile(t, "router.yaml", "skills: ["+root+"]\n")
	queries := writeFile(t, "q.jsonl", `{"query": "release notes", "expected": ["notes"]}`+"\n")
	bySkills := "`router skills validate --skills " + shellQuote(root) + "`"
	byConfig := "`router skills validate --config " + shellQuote(cfgFile) + "`"
	for _, tc := range []struct {
		name   string
		args   []string
		stdout bool // the hint is in the doctor's table, not on stderr
		want   string
	}{
		{"route", []string{"route", "--skills", root, "release notes"}, false, "1 warning (the skills still load): " + bySkills + " lists them"},
		{"route with a config file", []string{"route", "--config", cfgFile, "release notes"}, false, "1 warning (the skills still load): " + byConfig + " lists them"},
		{"skills list", []string{"skills", "list", "--skills", root}, false, bySkills},
		{"skills catalog", []string{"skills", "catalog", "--skills", root}, false, bySkills},
		{"bench", []string{"bench", "--skills", root, "--queries", queries, "--strategies", "bm25"}, false, bySkills},
		{"doctor", []string{"doctor", "--skills", root, "--upstream", "http://127.0.0.1:1/v1"}, true, "fix: " + bySkills + " lists them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, _ := run(t, tc.args...)
			got := errOut
			if tc.stdout {
				got = out
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("lacks %q:\n%s", tc.want, got)
			}
		})
	}
}
