package skills

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	lib := []*Skill{
		{ID: "anthropics/mcp-builder", Name: "mcp-builder"},
		{ID: "anthropics/pdf", Name: "pdf"},
		{ID: "openai-skills/pdf", Name: "pdf"},
		{ID: "obra/systematic-debugging", Name: "systematic-debugging"},
		{ID: "alireza/pw", Name: "playwright-pro"},
		{ID: "csv-data-profiling", Name: "csv-data-profiling"},
		{ID: "sql-query-tuning", Name: "sql-query-tuning"},
		{ID: "docx", Name: "docx"},
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"mcp-builder", []string{"anthropics/mcp-builder"}},                     // same last element
		{"Anthropics/MCP-Builder", []string{"anthropics/mcp-builder"}},          // case
		{"anthropics/mcp-builder/SKILL.md", []string{"anthropics/mcp-builder"}}, // file path
		{"pdf", []string{"anthropics/pdf", "openai-skills/pdf"}},                // several, sorted
		{"playwright-pro", []string{"alireza/pw"}},                              // frontmatter name
		{"systematic-debug", []string{"obra/systematic-debugging"}},             // prefix
		{"csv-profiling", []string{"csv-data-profiling"}},                       // edit distance
		{"sql-query-tunning", []string{"sql-query-tuning"}},                     // typo
		{"obra/systematic-debuging", []string{"obra/systematic-debugging"}},     // typo with source
		{"kubernetes-operator", nil},                                            // nothing close
		{"", nil},
		{"d", nil},                                               // too short to match by prefix
		{"pfd", []string{"anthropics/pdf", "openai-skills/pdf"}}, // transposition
	}
	for _, tt := range tests {
		got := Suggest(tt.query, lib, MaxSuggestions)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Suggest(%q) = %q, want %q", tt.query, got, tt.want)
		}
	}
	// Never more than asked for.
	many := make([]*Skill, 10)
	for i := range many {
		many[i] = &Skill{ID: "src" + string(rune('a'+i)) + "/pdf"}
	}
	if got := Suggest("pdf", many, MaxSuggestions); len(got) != 3 {
		t.Errorf("got %d suggestions, want 3", len(got))
	}
	// Junk input stays cheap and safe.
	if got := Suggest(strings.Repeat("x", 10000), lib, 3); got != nil {
		t.Errorf("junk matched %q", got)
	}
}

func TestNotFoundNilSnapshot(t *testing.T) {
	out := NotFound("x<y", nil, true)
	if !strings.Contains(out, `id="x&lt;y"`) || !strings.Contains(out, "no skill has this id") {
		t.Errorf("got %s", out)
	}
}

func TestSuggestUnicode(t *testing.T) {
	list := []*Skill{{ID: "l10n/cafe\u0301", Name: "cafe\u0301"}, {ID: "日本語", Name: "日本語"}, {ID: "other", Name: "other"}}
	for want, first := range map[string]string{"CAFÉ": "l10n/cafe\u0301", "l10n/Café": "l10n/cafe\u0301", "日本語/SKILL.md": "日本語"} {
		if got := Suggest(want, list, 3); len(got) == 0 || got[0] != first {
			t.Errorf("Suggest(%q) = %q, want %q first", want, got, first)
		}
	}
}

func TestResolve(t *testing.T) {
	list := []*Skill{
		{ID: "folder", Name: "fancy-name"},
		{ID: "team/pdf-tools", Name: "pdf-tools"},
		{ID: "x/dup", Name: "dup"},
		{ID: "y/dup", Name: "dup"},
		{ID: "z/shared", Name: "pdf-tools-2"},
		{ID: "zz/other", Name: "shared"},
		{ID: "l10n/cafe\u0301", Name: "cafe\u0301"}, // decomposed, as macOS may store a folder name
		{ID: "日本語", Name: "日本語"},
		{ID: "ru/навык-2", Name: "навык"},
	}
	tests := []struct{ want, id string }{
		{"日本語", "日本語"},
		{"café", "l10n/cafe\u0301"}, // composed: compared after NFKC
		{"l10n/café", "l10n/cafe\u0301"},
		{"cafe\u0301", "l10n/cafe\u0301"},
		{"навык", "ru/навык-2"},
		{"навык-2", "ru/навык-2"},
		{"folder", "folder"},
		{"fancy-name", "folder"},
		{"team/pdf-tools", "team/pdf-tools"},
		{"pdf-tools", "team/pdf-tools"},
		{"dup", ""},            // two names, two suffixes
		{"shared", "zz/other"}, // a unique name wins over a unique suffix
		{"x/dup", "x/dup"},
		{"nope", ""},
		{"", ""},
		// An id from before its folder was renamed: the one skill named
		// as its last part.
		{"old/fancy-name", "folder"},
		{"old/place/pdf-tools-2", "z/shared"},
		{"old/dup", ""}, // two skills have that name
		{"old/nope", ""},
	}
	for _, tt := range tests {
		s, ok := Resolve(list, tt.want)
		got := ""
		if ok {
			got = s.ID
		}
		if got != tt.id {
			t.Errorf("Resolve(%q) = %q, want %q", tt.want, got, tt.id)
		}
	}
}

// TestNotFoundSharedName: an id that is the name (or the last part of the
// id) of several skills is answered as such, with their ids.
func TestNotFoundSharedName(t *testing.T) {
	root := t.TempDir()
	for dir, name := range map[string]string{"x/dup": "dup", "y/dup": "dup", "z/tool": "tool", "p/kit": "alpha-kit", "q/kit": "beta-kit", "m/caf1": "cafe\u0301", "n/caf2": "cafe\u0301"} {
		writeFile(t, filepath.Join(root, dir, SkillFile), "---\nname: "+name+"\ndescription: Use when testing shared names.\n---\nBody.\n")
	}
	snap := Load(context.Background(), []string{root}, Options{})
	tests := []struct {
		want   string
		shared []string
		byName bool
	}{
		{"dup", []string{"x/dup", "y/dup"}, true},    // a shared name
		{"DUP", nil, false},                          // names are compared as written, then in NFKC form: no case folding
		{"kit", []string{"p/kit", "q/kit"}, false},   // a shared last part of the id
		{"café", []string{"m/caf1", "n/caf2"}, true}, // composed, the names decomposed: shared in NFKC form
		{"tool", nil, false},                         // one name: Resolve finds z/tool
		{"nothing", nil, false},                      // no skill
	}
	for _, tt := range tests {
		if got, byName := snap.Sharing(tt.want); !slices.Equal(got, tt.shared) || byName != tt.byName {
			t.Errorf("Sharing(%q) = %q, %v; want %q, %v", tt.want, got, byName, tt.shared, tt.byName)
		}
	}
	for want, lines := range map[string][]string{
		"dup": {"2 skills have this name; name one by its id.", "<id>x/dup</id>", "<id>y/dup</id>"},
		"kit": {"2 skill ids end in it; name one by its whole id.", "<id>p/kit</id>", "<id>q/kit</id>"},
	} {
		out := NotFound(want, snap, true)
		for _, line := range lines {
			if !strings.Contains(out, line) {
				t.Errorf("NotFound(%s) lacks %q:\n%s", want, line, out)
			}
		}
	}
	if out := NotFound("nothing", snap, true); !strings.Contains(out, "no skill has this id.") {
		t.Errorf("NotFound(nothing):\n%s", out)
	}
}
