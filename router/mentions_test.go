package router

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillrouter/skillrouter/skills"
)

func testMentionTable() mentionTable {
	var list []*skills.Skill
	for _, id := range []string{"anthropics/mcp-builder", "a/code-review", "b/code-review", "pdf", "x/y/deep-skill"} {
		list = append(list, &skills.Skill{ID: id})
	}
	return newMentionTable(list)
}

func TestFindStrip(t *testing.T) {
	tab := testMentionTable()
	tests := []struct{ in, ids, rest string }{
		{"use /mcp-builder now", "anthropics/mcp-builder", "use  now"},
		{"#anthropics/mcp-builder", "anthropics/mcp-builder", ""},
		{"/pdf, then #deep-skill.", "pdf x/y/deep-skill", ", then ."},
		{"/pdf /pdf", "pdf", " "},
		{"/code-review", "", "/code-review"},
		{"http://h/pdf and a/pdf and foo#pdf", "", "http://h/pdf and a/pdf and foo#pdf"},
		{"/pdf/ /usr/bin", "pdf", "/ /usr/bin"},
	}
	for _, tt := range tests {
		ids, rest := tab.findStrip(tt.in)
		if strings.Join(ids, " ") != tt.ids || rest != tt.rest {
			t.Errorf("findStrip(%q) = %q, %q; want %q, %q", tt.in, ids, rest, tt.ids, tt.rest)
		}
	}
}

func TestCapText(t *testing.T) {
	long := "START " + strings.Repeat("word ", 3000) + "ü END"
	got := capText(long, 1000)
	if len(got) > 1010 || !strings.HasPrefix(got, "START ") || !strings.HasSuffix(got, "ü END") || !utf8.ValidString(got) {
		t.Errorf("capText: %d bytes, %.20q…%.20q", len(got), got, got[len(got)-20:])
	}
	if capText("  short  ", 1000) != "short" {
		t.Error("short text changed")
	}
}

func FuzzFindStrip(f *testing.F) {
	tab := testMentionTable()
	for _, s := range []string{"/pdf", "#a/code-review x", "https://x/pdf", "((#pdf))", "/\xff", "#", "/ /"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, rest := tab.findStrip(s)
		if len(rest) > len(s) {
			t.Fatalf("stripped text longer than the input")
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if _, ok := tab.full[strings.ToLower(id)]; !ok || seen[id] {
				t.Fatalf("%q: bad or repeated id %q", s, id)
			}
			seen[id] = true
		}
		if len(ids) == 0 && rest != s {
			t.Fatalf("%q: no mention but text changed to %q", s, rest)
		}
	})
}
