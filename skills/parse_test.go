package skills

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// want describes one expected problem: severity, line (0 = any) and a
// substring of the message.
type want struct {
	sev  Severity
	line int
	msg  string
}

func checkProblems(t *testing.T, got []Problem, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(wants), problemList(got))
	}
	for i, w := range wants {
		p := got[i]
		if p.Severity != w.sev || (w.line != 0 && p.Line != w.line) || !strings.Contains(p.Message, w.msg) {
			t.Errorf("problem %d = %s\nwant %s at line %d containing %q", i, p, w.sev, w.line, w.msg)
		}
	}
}

func problemList(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

// emptyBody is the warning of a skill with nothing after its frontmatter,
// which most of the frontmatter cases below are.
var emptyBody = want{SeverityWarning, 0, "body is empty"}

func TestParseBrokenInput(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []want
	}{
		{"empty file", "", []want{{SeverityError, 1, "SKILL.md is empty"}}},
		{"whitespace only", " \n\n\t\n", []want{{SeverityError, 1, "SKILL.md is empty"}}},
		{"missing frontmatter", "# Title\nname: x\n", []want{{SeverityError, 1, "missing YAML frontmatter"}}},
		{"frontmatter not at start", "\n---\nname: x\ndescription: y\n---\n", []want{{SeverityError, 1, "missing YAML frontmatter"}}},
		{"unterminated frontmatter", "---\nname: x\ndescription: y\n# Body\n", []want{{SeverityError, 1, "unterminated frontmatter"}}},
		{"only opening line", "---", []want{{SeverityError, 1, "unterminated frontmatter"}}},
		{"invalid YAML line mapped", "---\nname: x\ndescription: y\nmetadata: {a: 1\n---\n", []want{{SeverityError, 4, "invalid YAML in frontmatter"}}},
		{"invalid YAML mapping values", "---\nname: x\ndescription: a: b\n---\n", []want{{SeverityError, 3, "mapping values are not allowed"}}},
		{"invalid YAML tab indent", "---\nname: x\ndescription: y\nmetadata:\n\tk: v\n---\n", []want{{SeverityError, 5, "invalid YAML in frontmatter"}}},
		{"invalid YAML after multi-line flow", "---\ntags: [a,\n  b]\nname: x: y\ndescription: d\n---\n", []want{{SeverityError, 4, "mapping values are not allowed"}}},
		{"not UTF-8", "---\nname: x\ndescription: caf\xe9\n---\n", []want{{SeverityError, 3, "not valid UTF-8"}}},
		{"not UTF-8 in body", "---\nname: x\ndescription: y\n---\nok\n\xff\xfe\n", []want{{SeverityError, 6, "not valid UTF-8"}}},
		{"NUL byte", "---\nname: x\ndescription: y\n---\nbin\x00ary\n", []want{{SeverityError, 5, "NUL byte"}}},
		{"empty frontmatter", "---\n---\nbody\n", []want{{SeverityError, 1, "frontmatter is empty"}}},
		{"frontmatter is a list", "---\n- a\n- b\n---\n", []want{{SeverityError, 2, "must be key: value pairs"}}},
		{"frontmatter is a scalar", "---\njust text\n---\n", []want{{SeverityError, 2, "must be key: value pairs"}}},
		{"duplicate key", "---\nname: x\ndescription: a\ndescription: b\n---\n", []want{{SeverityError, 4, `duplicate key "description" (first set on line 3)`}}},
		{"missing name", "---\ndescription: y\n---\n", []want{{SeverityError, 1, "no name"}}},
		{"missing description", "---\nname: x\n---\n", []want{{SeverityError, 1, "no description"}}},
		{"missing both", "---\nlicense: MIT\n---\n", []want{{SeverityError, 1, "no name"}, {SeverityError, 1, "no description"}}},
		{"capitalised keys", "---\nName: x\nDescription: d\n---\n", []want{{SeverityError, 1, `no name ("Name" is another key: keys are lower case)`}, {SeverityError, 1, `no description ("Description" is another key`}}},
		{"name not a string", "---\nname: [a]\ndescription: y\n---\n", []want{{SeverityError, 2, "name must be a string"}}},
		{"description not a string", "---\nname: x\ndescription: {a: b}\n---\n", []want{{SeverityError, 3, "description must be a string"}}},
		{"empty name", "---\nname:\ndescription: y\n---\n", []want{{SeverityError, 2, "name is empty"}}},
		{"empty description", "---\nname: x\ndescription: \"  \"\n---\n", []want{{SeverityError, 3, "description is empty"}}},
		{"null description", "---\nname: x\ndescription: ~\n---\n", []want{{SeverityError, 3, "description is empty"}}},
		{"unknown type", "---\nname: x\ndescription: y\ntype: plugin\n---\n", []want{{SeverityWarning, 4, `unknown type "plugin"`}, emptyBody}},
		{"enabled not bool", "---\nname: x\ndescription: y\nenabled: \"yes\"\n---\n", []want{{SeverityWarning, 4, "enabled must be true or false"}, emptyBody}},
		{"auto_load not bool", "---\nname: x\ndescription: y\nauto_load: 3\n---\n", []want{{SeverityWarning, 4, "auto_load must be true or false"}, emptyBody}},
		{"tags mapping", "---\nname: x\ndescription: y\ntags: {a: b}\n---\n", []want{{SeverityWarning, 4, "tags must be a list of strings"}, emptyBody}},
		{"dependency item not string", "---\nname: x\ndescription: y\ndependencies:\n  - a\n  - [b]\n---\n", []want{{SeverityWarning, 6, "dependencies items must be strings"}, emptyBody}},
		{"metadata list", "---\nname: x\ndescription: y\nmetadata: [1]\n---\n", []want{{SeverityWarning, 4, "metadata must be a mapping"}, emptyBody}},
		{"license list", "---\nname: x\ndescription: y\nlicense: [MIT]\n---\n", []want{{SeverityWarning, 4, "license must be a string"}, emptyBody}},
		{"compatibility too long", "---\nname: x\ndescription: y\ncompatibility: " + strings.Repeat("c", 501) + "\n---\n", []want{{SeverityWarning, 4, "compatibility is 501 characters"}, emptyBody}},
		{"complex key", "---\nname: x\ndescription: y\n? [a, b]\n: v\n---\n", []want{{SeverityWarning, 4, "not a plain string"}, emptyBody}},
		// A plain value ends where " #" starts a YAML comment: the text after it
		// silently left the description (or name) the catalog shows.
		{"description cut by a comment", "---\nname: x\ndescription: Use #python for scripts\n---\n", []want{{SeverityWarning, 3, `description ends at " #"`}, emptyBody}},
		{"name cut by a comment", "---\nname: x #draft\ndescription: y\n---\n", []want{{SeverityWarning, 2, `name ends at " #"`}, emptyBody}},
		{"comment on its own line", "---\n# a comment\nname: x\ndescription: y\n---\n", []want{emptyBody}},
		{"quoted hash", "---\nname: x\ndescription: \"Use #python for scripts\"\n---\n", []want{emptyBody}},
		{"hash inside a word", "---\nname: x\ndescription: C# and F#\n---\n", []want{emptyBody}},
		{"block scalar with hash", "---\nname: x\ndescription: >\n  Use #python\n  for scripts\n---\n", []want{emptyBody}},
		// A comment line ends a plain multi-line value too, however it is
		// indented. Text after it is invalid YAML (yaml.v3: "did not find
		// expected key" on the text's line): the error names the comment line
		// as the cause. Without text after it the YAML is valid and the
		// comment, indented as part of the value, is not in it: a warning.
		{"comment line then more text", "---\nname: x\ndescription: Extract text from PDFs,\n  fill forms.\n  # TODO mention OCR\n  Use when the user mentions PDFs.\n---\n",
			[]want{{SeverityError, 5, `invalid YAML in frontmatter: description is cut at line 5: "# TODO mention OCR" is a YAML comment, which ends an unquoted value, so line 6 ("Use when the user mentions PDFs.") continues nothing (did not find expected key); to keep the text, quote the whole description or make it a block scalar ("description: >"`}}},
		{"unindented comment line then more text", "---\nname: x\ndescription: Extract text,\n# TODO\n  Use when PDFs.\n---\n", []want{{SeverityError, 4, `description is cut at line 4: "# TODO" is a YAML comment`}}},
		{"comment line between blank lines then more text", "---\nname: x\ndescription: Extract text,\n\n  # TODO\n\n  Use when PDFs.\n---\n", []want{{SeverityError, 5, `so line 7 ("Use when PDFs.") continues nothing`}}},
		{"two comment lines then more text", "---\nname: x\ndescription: a\n  # one\n  # two\n  b\n---\n", []want{{SeverityError, 4, `description is cut at line 4: "# one"`}}},
		{"comment line then text with a colon", "---\nname: x\ndescription: a\n  # one\n  Use when: b\n---\n", []want{{SeverityError, 4, `description is cut at line 4`}}},
		{"name cut by a comment line", "---\nname: x\n  # draft\n  y\ndescription: d\n---\n", []want{{SeverityError, 3, `name is cut at line 3`}}},
		{"indented frontmatter comment line", "---\n  name: x\n  description: a\n    # one\n    b\n---\n", []want{{SeverityError, 4, `description is cut at line 4`}}},
		{"trailing comment then more text", "---\nname: x\ndescription: tools #internal\n  more text\n---\n", []want{{SeverityError, 3, `description is cut at line 3: " #internal" is a YAML comment (after a space, # starts one), which ends an unquoted value, so line 4 ("more text") continues nothing`}}},
		{"trailing comment on a later line then more text", "---\nname: x\ndescription: tools\n  fill #internal\n\n  more text\n---\n", []want{{SeverityError, 4, `so line 6 ("more text") continues nothing`}}},
		{"trailing comment, comment line, then more text", "---\nname: x\ndescription: a\n  b #x\n  # y\n  c\n---\n", []want{{SeverityError, 4, `description is cut at line 4: " #x" is a YAML comment`}}},
		{"comment on the key's line, comment line, then more text", "---\nname: x\ndescription: # note\n  a\n  # c\n  b\n---\n", []want{{SeverityError, 5, `description is cut at line 5: "# c" is a YAML comment`}}},
		{"comment line then the next key", "---\nname: x\ndescription: Extract text from PDFs,\n  fill forms.\n  # TODO mention OCR\nlicense: MIT\n---\n",
			[]want{{SeverityWarning, 5, `description is cut at line 5: "# TODO mention OCR" is a YAML comment, which ends an unquoted value, so it is not in the description "Extract text from PDFs, fill forms."; to keep the text, quote the whole description`}, emptyBody}},
		{"comment line ends the frontmatter", "---\nname: x\ndescription: a\n  b\n    # more\n---\n", []want{{SeverityWarning, 5, `description is cut at line 5: "# more"`}, emptyBody}},
		{"indented comment line after an unindented one", "---\nname: x\ndescription: a\n# note\n  # inside\nlicense: MIT\n---\n", []want{{SeverityWarning, 5, `"# inside" is a YAML comment`}, emptyBody}},
		{"comment line in an empty description", "---\nname: x\ndescription:\n  # Extract text\nlicense: MIT\n---\n", []want{{SeverityWarning, 4, `description is cut at line 4`}, {SeverityError, 3, "description is empty"}}},
		{"comment line between keys", "---\nname: x\ndescription: a\n  b\n# a note\nlicense: MIT\n---\n", []want{emptyBody}},
		{"comment line above the value", "---\nname: x\ndescription:\n  # a note\n  Use when PDFs.\n---\n", []want{emptyBody}},
		{"comment line in a block scalar", "---\nname: x\ndescription: >\n  a\n  # b\n  c\n---\n", []want{emptyBody}},
		{"comment line in a quoted value", "---\nname: x\ndescription: \"a\n  # b\n  c\"\n---\n", []want{emptyBody}},
		{"comment line in another key", "---\nname: x\ndescription: y\nlicense: MIT\n  # b\n---\n", []want{emptyBody}},
		{"hash inside words on continuation lines", "---\nname: x\ndescription: Tools for C#\n  and F# projects.\n---\n", []want{emptyBody}},
		{"comment line under a nested mapping", "---\nname: x\ndescription: y\nmetadata:\n  a: 1\n  # c\n   b: 2\n---\n", []want{{SeverityError, 7, "invalid YAML in frontmatter: did not find expected key"}}},
		{"invalid YAML colon hint", "---\nname: x\ndescription: Use when: the user asks\n---\n", []want{{SeverityError, 3, `quote a value that contains ": "`}}},
		{"invalid YAML tab hint", "---\nname: x\ndescription: d\ntags:\n\t- a\n---\n", []want{{SeverityError, 5, "that line holds a tab: YAML indents with spaces"}}},
		// A skill with no instructions is almost certainly a mistake; the
		// warning points at the closing "---" after which nothing follows.
		{"empty body", "---\nname: x\ndescription: y\n---\n", []want{{SeverityWarning, 4, "body is empty"}}},
		{"empty body without final newline", "---\nname: x\ndescription: y\n---", []want{{SeverityWarning, 4, "body is empty"}}},
		{"whitespace body", "---\nname: x\ndescription: y\n---\n\n \t\n\n", []want{{SeverityWarning, 4, "body is empty"}}},
		{"body of one word", "---\nname: x\ndescription: y\n---\nx", nil},
		{"body over limit", "---\nname: x\ndescription: y\n---\n" + strings.Repeat("b", 101), []want{{SeverityError, 5, "body is 101 bytes; the limit is 100 bytes"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parse("lib/x/SKILL.md", tt.text, "x", 100)
			checkProblems(t, s.Problems, tt.want)
			if got := hasError(s.Problems); s.Skipped != got {
				t.Errorf("Skipped = %v, want %v", s.Skipped, got)
			}
			for _, p := range s.Problems {
				if p.Path != "lib/x/SKILL.md" {
					t.Errorf("problem path %q", p.Path)
				}
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(fixtureLib, "good-skill", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := parse("good-skill/SKILL.md", string(text), "good-skill", 1<<20)
	if len(s.Problems) != 0 || s.Skipped {
		t.Fatalf("unexpected problems:\n%s", problemList(s.Problems))
	}
	yes, no := true, false
	checks := []struct {
		field     string
		got, want any
	}{
		{"Name", s.Name, "good-skill"},
		{"Description", s.Description, "Exercise every frontmatter field & resource kind. Use when testing the <skills> loader."},
		{"License", s.License, "Apache-2.0"},
		{"Compatibility", s.Compatibility, "Requires bash and python3."},
		{"Metadata", s.Metadata, map[string]any{"author": "skillrouter", "version": "1.2"}},
		{"AllowedTools", s.AllowedTools, []string{"Bash(git add:*)", "Read", "Write"}},
		{"Type", s.Type, TypeExecutable},
		{"Enabled", s.Enabled, &yes},
		{"AutoLoad", s.AutoLoad, &no},
		{"Dependencies", s.Dependencies, []string{"alpha"}},
		{"Tags", s.Tags, []string{"data", "testing"}},
		{"Extra", s.Extra, map[string]any{"x-custom": map[string]any{"nested": []any{1, 2}, "flag": "yes"}}},
		{"Content", s.Content(), string(text)},
		{"Body", s.Body(), "\n# Good skill\n\nRun `scripts/run.sh`.\n"},
		{"BodyLine", s.BodyLine, 21},
		{"OptedIn", s.OptedIn(), true},
		{"Disabled", s.Disabled(), false},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.field, c.got, c.want)
		}
	}
}

func TestParseDefaultsAndNormalisation(t *testing.T) {
	s := parse("p", "\uFEFF---\r\nname: x\r\ndescription: |\r\n  line one\r\n  line two\r\n---\r\nBody\r\n", "x", 0)
	if len(s.Problems) != 0 {
		t.Fatalf("problems: %s", problemList(s.Problems))
	}
	if s.Type != TypeContextual {
		t.Errorf("Type = %q, want the contextual default", s.Type)
	}
	if strings.Contains(s.Content(), "\r") || strings.HasPrefix(s.Content(), "\uFEFF") {
		t.Errorf("Content not normalised: %q", s.Content())
	}
	if s.Description != "line one\nline two" || s.Body() != "Body\n" || s.BodyLine != 7 {
		t.Errorf("Description %q Body %q BodyLine %d", s.Description, s.Body(), s.BodyLine)
	}
	if s.Resources == nil || s.Problems == nil {
		t.Error("Resources and Problems must be non-nil so JSON shows [] not null")
	}
	// Numbers as names are still names; closing delimiter with trailing
	// spaces and no final newline are accepted.
	// (The body is empty, which is the one warning, on the closing line.)
	s = parse("p", "---\nname: 2048\ndescription: Game.\n---  ", "2048", 0)
	if len(s.Problems) != 1 || s.Problems[0].Line != 4 || !strings.Contains(s.Problems[0].Message, "body is empty") || s.Name != "2048" || s.Body() != "" {
		t.Errorf("got name %q body %q problems %s", s.Name, s.Body(), problemList(s.Problems))
	}
}

func TestParseExtraIsJSONSafe(t *testing.T) {
	text := "---\nname: x\ndescription: y\nweights: [.inf, -.inf, .nan]\nwhen: 2024-01-02\n" +
		"bin: !!binary aGVsbG8=\nmap:\n  1: one\n  ? [k]\n  : v\nanchor: &a {k: v}\nalias: *a\n---\nBody.\n"
	s := parse("p", text, "x", 0)
	if len(s.Problems) != 0 {
		t.Fatalf("problems: %s", problemList(s.Problems))
	}
	for _, k := range []string{"weights", "when", "bin", "map", "anchor", "alias"} {
		if _, ok := s.Extra[k]; !ok {
			t.Errorf("Extra lost key %q", k)
		}
	}
	if _, err := json.Marshal(s); err != nil {
		t.Fatalf("skill with odd YAML values must marshal to JSON: %v", err)
	}
	if got := s.Extra["alias"]; !reflect.DeepEqual(got, map[string]any{"k": "v"}) {
		t.Errorf("alias = %#v", got)
	}
}

func TestParseAliasBomb(t *testing.T) {
	// Each level doubles: 2^30 leaves if expanded naively.
	var b strings.Builder
	b.WriteString("---\nname: x\ndescription: y\na0: [x, x]\n")
	for i := 1; i <= 30; i++ {
		b.WriteString("a" + itoa(i) + ": [*a" + itoa(i-1) + ", *a" + itoa(i-1) + "]\n")
	}
	b.WriteString("---\n")
	// a0 must be an anchor for the aliases to resolve.
	text := strings.Replace(b.String(), "a0: [x, x]", "a0: &a0 [x, x]", 1)
	for i := 1; i <= 30; i++ {
		text = strings.Replace(text, "a"+itoa(i)+": [", "a"+itoa(i)+": &a"+itoa(i)+" [", 1)
	}
	s := parse("p", text, "x", 0)
	if s.Skipped {
		t.Fatalf("an alias bomb in an unknown key must not skip the skill:\n%s", problemList(s.Problems))
	}
	found := false
	for _, p := range s.Problems {
		found = found || strings.Contains(p.Message, "too large")
	}
	if !found {
		t.Errorf("expected a 'too large' warning for the expanded alias, got:\n%s", problemList(s.Problems))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestSplitTools(t *testing.T) {
	tests := map[string][]string{
		"Bash(git:*) Bash(jq:*) Read":  {"Bash(git:*)", "Bash(jq:*)", "Read"},
		"Read, Grep, Glob":             {"Read", "Grep", "Glob"},
		"Bash(git add:*), Edit":        {"Bash(git add:*)", "Edit"},
		"  ":                           nil,
		"Bash(unbalanced Read":         {"Bash(unbalanced Read"},
		"Bash(python3 -c 'a, b') Edit": {"Bash(python3 -c 'a, b')", "Edit"},
	}
	for in, want := range tests {
		if got := splitTools(in); !reflect.DeepEqual(got, want) {
			t.Errorf("splitTools(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse feeds arbitrary bytes to the SKILL.md parser: it must never
// panic, must flag invalid UTF-8, and a skill without errors must have a
// valid name and a description.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"", "---", "---\n---\n", "---\nname: x\ndescription: y\n---\nbody\n",
		"---\nname: x\ndescription: {a: 1\n---\n", "\uFEFF---\r\nname: a\r\ndescription: b\r\n---\r\n",
		"---\n- a\n---\n", "---\nname: x\ndescription: y\nmeta: &a [*a]\n---\n",
		"---\nname: x\ndescription: y\nname: z\n---\n", "---\nname: \xff\n---\n",
		"---\nname: x\ndescription: a\n  # c\n  b\n---\n", "---\nname: x\ndescription: a\n  # c\nlicense: y\n---\n",
		"---\nname: x\ndescription: a #c\n\n  b\n---\n", "---\n  name: x\n  description: *a\n    # c\n---\n",
	}
	_ = filepath.WalkDir(fixtureLib, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == SkillFile {
			if b, err := os.ReadFile(p); err == nil {
				seeds = append(seeds, string(b))
			}
		}
		return nil
	})
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := parse("fuzz/SKILL.md", string(data), "fuzz", 1<<16)
		if s.Problems == nil || s.Resources == nil {
			t.Fatal("nil slices")
		}
		if !utf8.Valid(data) && !s.Skipped {
			t.Fatal("invalid UTF-8 accepted")
		}
		if !s.Skipped {
			if s.Name == "" || s.Description == "" {
				t.Fatalf("loaded without name/description: %q %q", s.Name, s.Description)
			}
			if firstInvalidNameRune(NormalizeName(s.Name)) != "" {
				t.Fatalf("loaded with invalid name %q", s.Name)
			}
		}
		lines := strings.Count(string(data), "\n") + 1
		for _, p := range s.Problems {
			if p.Line < 0 || p.Line > lines {
				t.Fatalf("line out of the file's %d: %v", lines, p)
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("skill does not marshal: %v", err)
		}
	})
}
