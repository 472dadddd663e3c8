package router

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillrouter/skillrouter/skills"
)

func testMentionTable() mentionTable {
	var list []*skills.Skill
	for _, id := range []string{"anthropics/mcp-builder", "a/code-review", "b/code-review", "pdf", "x/y/deep-skill", "l10n/café", "日本語", "навык-2"} {
		list = append(list, &skills.Skill{ID: id})
	}
	// Names another than the folder's: one skill's, and one two share.
	list = append(list, &skills.Skill{ID: "mismatch-folder", Name: "other-name"},
		&skills.Skill{ID: "team/x1", Name: "shared-name"}, &skills.Skill{ID: "team/x2", Name: "shared-name"})
	return newMentionTable(list)
}

func TestFindStrip(t *testing.T) {
	tab := testMentionTable()
	tests := []struct{ in, ids, rest string }{
		// Lowercase non-ASCII ids (the spec allows them): matched like
		// ASCII ones, case-folded and NFKC-normalised.
		{"use #café now", "l10n/café", "use  now"},
		{"use #CAFÉ and #cafe\u0301", "l10n/café", "use  and "},
		{"#l10n/café", "l10n/café", ""},
		{"/навык-2 сейчас", "навык-2", " сейчас"},
		// Unicode punctuation and spaces end a mention and may lead one.
		{"#café。", "l10n/café", "。"},
		{"«#café», «/навык-2»", "l10n/café навык-2", "«», «»"},
		{"「#日本語」を使う", "日本語", "「」を使う"},
		{"x\u3000#café…", "l10n/café", "x\u3000…"},
		// CJK text has no spaces: a mention ends where a known id does and
		// the same script goes on, and may follow a CJK character.
		{"これは#日本語を使って", "日本語", "これはを使って"},
		{"#pdfを読む", "pdf", "を読む"},
		{"#日本語の", "日本語", "の"},
		// Not mentions: a cased letter before # (C#, URL fragments), or
		// more letters of a cased script after the id.
		{"a#café e#pdfx", "", "a#café e#pdfx"},
		{"#cafébar #pdfé", "", "#cafébar #pdfé"},
		{"#日本", "", "#日本"},
		{"use /mcp-builder now", "anthropics/mcp-builder", "use  now"},
		{"#anthropics/mcp-builder", "anthropics/mcp-builder", ""},
		{"/pdf, then #deep-skill.", "pdf x/y/deep-skill", ", then ."},
		{"/pdf /pdf", "pdf", " "},
		{"/code-review", "", "/code-review"},
		{"http://h/pdf and a/pdf and foo#pdf", "", "http://h/pdf and a/pdf and foo#pdf"},
		{"/pdf/ /usr/bin", "pdf", "/ /usr/bin"},
		// A frontmatter name one skill has pins it, as load_skill takes it;
		// one two skills share pins neither.
		{"use #other-name please", "mismatch-folder", "use  please"},
		// Inside a fenced code block a # is code ("x = 1 #pdf"), not a mention.
		{"here:\n```\nx = 1 #pdf\n```\nand #deep-skill", "x/y/deep-skill", "here:\n```\nx = 1 #pdf\n```\nand "},
		{"  ```py\n#pdf\n", "", "  ```py\n#pdf\n"},
		{"use #shared-name", "", "use #shared-name"},
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
	for _, s := range []string{"/pdf", "#a/code-review x", "https://x/pdf", "((#pdf))", "/\xff", "#", "/ /", "#café。", "これは#日本語を", "«/навык-2»"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, rest := tab.findStrip(s)
		if len(rest) > len(s) {
			t.Fatalf("stripped text longer than the input")
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if _, ok := tab.full[mentionKey(id)]; !ok || seen[id] {
				t.Fatalf("%q: bad or repeated id %q", s, id)
			}
			seen[id] = true
		}
		if len(ids) == 0 && rest != s {
			t.Fatalf("%q: no mention but text changed to %q", s, rest)
		}
	})
}
