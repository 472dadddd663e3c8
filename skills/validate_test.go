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
		// Lowercase non-ASCII letters and digits load (the spec's "unicode
		// lowercase alphanumeric"), with a portability warning.
		{"café", []w{{SeverityWarning, "outside a-z, 0-9 and hyphens"}}},
		{"日本語", []w{{SeverityWarning, "outside a-z, 0-9 and hyphens"}}},
		{"навык-2", []w{{SeverityWarning, "outside a-z, 0-9 and hyphens"}}},
		{"data-٣", []w{{SeverityWarning, "outside a-z, 0-9 and hyphens"}}},     // Arabic-Indic digit
		{"cafe\u0301", []w{{SeverityWarning, "outside a-z, 0-9 and hyphens"}}}, // NFD: checked as NFKC "café"
		{"ｐｄｆ", []w{{SeverityWarning, "outside a-z, 0-9 and hyphens"}}},        // fullwidth: NFKC "pdf"
		{strings.Repeat("é", 64), []w{{SeverityWarning, "outside a-z"}}},       // characters, not bytes
		{strings.Repeat("e\u0301", 64), []w{{SeverityWarning, "outside a-z"}}}, // 128 runes, 64 after NFKC
		{strings.Repeat("é", 65), []w{{SeverityError, "65 characters; the limit is 64"}, {SeverityWarning, "outside a-z"}}},
		{"Café", []w{{SeverityError, `lowercase letters, digits and hyphens (found "C"); "café" would be valid`}, {SeverityWarning, "outside a-z"}}},
		{"cafÉ", []w{{SeverityError, `(found "É"); "café" would be valid`}, {SeverityWarning, "outside a-z"}}},
		{"НАВЫК", []w{{SeverityError, `"навык" would be valid`}, {SeverityWarning, "outside a-z"}}},
		{"ǅ", []w{{SeverityError, `found "D"`}, {SeverityWarning, "outside a-z"}}}, // titlecase is not lowercase
		{"x²", []w{{SeverityWarning, "outside a-z"}}},                              // NFKC "x2"
		{"a\u00a0b", []w{{SeverityError, `found " "`}, {SeverityWarning, "outside a-z"}}},
		{"-日本", []w{{SeverityError, "must not start or end with a hyphen"}, {SeverityWarning, "outside a-z"}}},
		{"-pdf", []w{{SeverityError, "must not start or end with a hyphen"}}},
		{"pdf-", []w{{SeverityError, "must not start or end with a hyphen"}}},
		{"pdf--tools", []w{{SeverityError, "consecutive hyphens"}}},
		{"claude-api", []w{{SeverityWarning, `reserved word "claude"`}}},
		{"my-anthropic-helper", []w{{SeverityWarning, `reserved word "anthropic"`}}},
		{"Claude_Tools", []w{{SeverityError, `"claude-tools" would be valid`}, {SeverityWarning, `reserved word "claude"`}}},
		{"-Bad--Name-", []w{
			{SeverityError, "lowercase letters, digits and hyphens"},
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
		"ÄÖÜ":                     "äöü",
		"Café":                    "café", // not "caf": dropping a letter makes another name
		"НАВЫК 2":                 "навык-2",
		"日本語_ツール":                 "日本語-ツール",
		strings.Repeat("É", 70):   strings.Repeat("é", 64), // 64 characters, not bytes
		strings.Repeat("Ab_", 40): strings.TrimRight(strings.Repeat("ab-", 40)[:64], "-"),
	}
	for in, want := range tests {
		if got := suggestName(in); got != want {
			t.Errorf("suggestName(%q) = %q, want %q", in, got, want)
		}
		if got := suggestName(in); got != "" {
			for _, f := range validateName(got) {
				if f.sev == SeverityError {
					t.Errorf("suggestName(%q) = %q is itself invalid: %v", in, got, f.msg)
				}
			}
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
	// A folder is compared after the same NFKC normalisation as the name:
	// macOS may hand back a folder name decomposed (NFD).
	if got := validateFolder("café", "cafe\u0301"); len(got) != 0 {
		t.Errorf("NFD folder: %v", got)
	}
	if got := validateFolder("cafe\u0301", "café"); len(got) != 0 {
		t.Errorf("NFD name: %v", got)
	}
	if got := validateFolder("café", "cafe"); len(got) != 1 {
		t.Errorf("café in cafe: %v", got)
	}
	// An invalid name is reported once, without a folder warning on top.
	s := parse("p", "---\nname: Pdf_Tools\ndescription: d\n---\n", "pdf-tools", 0)
	if len(s.Problems) != 1 || s.Problems[0].Severity != SeverityError {
		t.Errorf("got %s", problemList(s.Problems))
	}
	// A valid name that differs from the folder loads with a warning on the name line.
	s = parse("p", "---\ndescription: d\nname: beta-skill\n---\nBody.\n", "beta", 0)
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
// "unicode lowercase alphanumeric characters and hyphens". Such a name loads
// with a portability warning (Anthropic's upload rules take a-z, 0-9 and
// hyphens only), on the name's line, so `skills validate --strict` fails.
func TestValidateNameUnicodeLowercase(t *testing.T) {
	for _, name := range []string{"café", "日本語", "навык-2"} {
		got := validateName(name)
		if len(got) != 1 || got[0].sev != SeverityWarning || !strings.Contains(got[0].msg, "Anthropic") {
			t.Errorf("validateName(%q) = %v, want one portability warning", name, got)
		}
		s := parse("lib/"+name+"/SKILL.md", "---\ndescription: d\nname: "+name+"\n---\nbody\n", name, 0)
		if s.Skipped || len(s.Problems) != 1 || s.Problems[0].Line != 3 || s.Problems[0].Severity != SeverityWarning {
			t.Errorf("parse %q: skipped=%v %s", name, s.Skipped, problemList(s.Problems))
		}
	}
}
