package skills

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	type w struct {
		sev Severity
		msg string
	}
	tests := []struct {
		name string
		want []w
	}{
		{"pdf", nil},
		{"a", nil},
		{"mcp-builder", nil},
		{"web3-tools-2", nil},
		{strings.Repeat("a", 64), nil},
		{"", []w{{SeverityError, "name is empty"}}},
		{strings.Repeat("a", 65), []w{{SeverityError, "65 characters; the limit is 64"}}},
		{"PDF", []w{{SeverityError, `found "P"); "pdf" would be valid`}}},
		{"pdf_tools", []w{{SeverityError, `found "_"); "pdf-tools" would be valid`}}},
		{"pdf tools", []w{{SeverityError, `found " "); "pdf-tools" would be valid`}}},
		{"café", []w{{SeverityError, `found "é"`}}},
		{"-pdf", []w{{SeverityError, "must not start or end with a hyphen"}}},
		{"pdf-", []w{{SeverityError, "must not start or end with a hyphen"}}},
		{"pdf--tools", []w{{SeverityError, "consecutive hyphens"}}},
		{"claude-api", []w{{SeverityWarning, `reserved word "claude"`}}},
		{"my-anthropic-helper", []w{{SeverityWarning, `reserved word "anthropic"`}}},
		{"Claude_Tools", []w{{SeverityError, `"claude-tools" would be valid`}, {SeverityWarning, `reserved word "claude"`}}},
		{"-Bad--Name-", []w{
			{SeverityError, "lowercase letters a-z"},
			{SeverityError, "start or end with a hyphen"},
			{SeverityError, "consecutive hyphens"},
		}},
	}
	for _, tt := range tests {
		got := validateName(tt.name)
		if len(got) != len(tt.want) {
			t.Errorf("validateName(%q) = %v, want %d findings", tt.name, got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if got[i].sev != w.sev || !strings.Contains(got[i].msg, w.msg) {
				t.Errorf("validateName(%q)[%d] = %v, want %s containing %q", tt.name, i, got[i], w.sev, w.msg)
			}
		}
	}
}

func TestSuggestName(t *testing.T) {
	tests := map[string]string{
		"PDF Tools":               "pdf-tools",
		"Customer.io Sync":        "customer-io-sync",
		"__x__":                   "x",
		"a--b":                    "a-b",
		"-21risk":                 "21risk",
		"ÄÖÜ":                     "",
		"café":                    "", // not "caf": dropping a letter makes another name
		"навык-2":                 "",
		strings.Repeat("Ab_", 40): strings.TrimRight(strings.Repeat("ab-", 40)[:64], "-"),
	}
	for in, want := range tests {
		if got := suggestName(in); got != want {
			t.Errorf("suggestName(%q) = %q, want %q", in, got, want)
		}
		if got := suggestName(in); got != "" && len(validateName(got)) != 0 {
			t.Errorf("suggestName(%q) = %q is itself invalid: %v", in, got, validateName(got))
		}
	}
}

func TestValidateDescription(t *testing.T) {
	tests := []struct {
		desc string
		sev  Severity
		msg  string
	}{
		{"Does things. Use when asked.", "", ""},
		{strings.Repeat("é", MaxDescriptionLen), "", ""}, // characters, not bytes
		{"", SeverityError, "description is empty"},
		{" \n\t", SeverityError, "description is empty"},
		{strings.Repeat("x", MaxDescriptionLen+1), SeverityWarning, "1025 characters; the spec allows at most 1024"},
	}
	for _, tt := range tests {
		got := validateDescription(tt.desc)
		if tt.sev == "" {
			if len(got) != 0 {
				t.Errorf("validateDescription(%.20q...) = %v, want none", tt.desc, got)
			}
			continue
		}
		if len(got) != 1 || got[0].sev != tt.sev || !strings.Contains(got[0].msg, tt.msg) {
			t.Errorf("validateDescription(%.20q...) = %v, want %s %q", tt.desc, got, tt.sev, tt.msg)
		}
	}
}

func TestValidateFolder(t *testing.T) {
	if got := validateFolder("pdf", "pdf"); len(got) != 0 {
		t.Errorf("matching folder: %v", got)
	}
	got := validateFolder("playwright-pro", "pw")
	if len(got) != 1 || got[0].sev != SeverityWarning || !strings.Contains(got[0].msg, `"playwright-pro" does not match its folder "pw"`) {
		t.Errorf("mismatch: %v", got)
	}
	// An invalid name is reported once, without a folder warning on top.
	s := parse("p", "---\nname: Pdf_Tools\ndescription: d\n---\n", "pdf-tools", 0)
	if len(s.Problems) != 1 || s.Problems[0].Severity != SeverityError {
		t.Errorf("got %s", problemList(s.Problems))
	}
	// A valid name that differs from the folder loads with a warning on the name line.
	s = parse("p", "---\ndescription: d\nname: beta-skill\n---\n", "beta", 0)
	if s.Skipped || len(s.Problems) != 1 || s.Problems[0].Line != 3 || !strings.Contains(s.Problems[0].Message, "does not match its folder") {
		t.Errorf("got %s", problemList(s.Problems))
	}
}

func TestProblemString(t *testing.T) {
	p := Problem{Path: "lib/x/SKILL.md", Line: 3, Severity: SeverityError, Message: "boom"}
	if got := p.String(); got != "lib/x/SKILL.md:3: error: boom" {
		t.Errorf("got %q", got)
	}
	p.Line = 0
	if got := p.String(); got != "lib/x/SKILL.md: error: boom" {
		t.Errorf("got %q", got)
	}
}

// TestValidateNameUnicodeLowercase: the Agent Skills reference validator
// (skills-ref) accepts lowercase Unicode letters and digits in a name
// ("Skill names support i18n characters"), and the spec's wording is
// "unicode lowercase alphanumeric characters and hyphens". Known to fail:
// such a name is an error here, so the skill is skipped, while a portability
// warning (Anthropic's upload rules take a-z, 0-9 and hyphens only) would
// do. Loading them also needs the places that assume ASCII ids to follow
// (#mentions, skill:// authorities): a design question.
func TestValidateNameUnicodeLowercase(t *testing.T) {
	t.Skip("known: names with lowercase non-ASCII letters are errors (skipped skills); the reference validator accepts them")
	for _, name := range []string{"café", "日本語", "навык-2"} {
		for _, f := range validateName(name) {
			if f.sev == SeverityError {
				t.Errorf("validateName(%q): %s", name, f.msg)
			}
		}
	}
}
