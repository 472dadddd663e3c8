package router

import (
	"testing"
	"unicode/utf8"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
)

// TestCountTokens checks the wiring: o200k_base, memoised, equal to counting
// whole. Exactness itself is tested in package tokens.
func TestCountTokens(t *testing.T) {
	c := tokens.Default()
	snap := fixture(t)
	texts := []string{"", "a\n/b", string(skills.LoadSkillTool(snap.Skills()))}
	for _, f := range skills.Formats {
		texts = append(texts, skills.RenderCatalog(snap.Skills(), skills.CatalogOptions{Format: f, Priority: []string{"pdf-tools"}, Footer: catalogFooter(3, true)}))
	}
	for _, s := range snap.Skills() {
		texts = append(texts, skills.Envelope(s))
	}
	for _, s := range texts {
		if got, want := countTokens(s), c.Count(s); got != want {
			t.Fatalf("countTokens(%q) = %d, tokenizer says %d", s, got, want)
		}
	}
}

func TestTruncateWords(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"  folded \n  spaces ", 0, "folded spaces"},
		{"one two three four five", 12, "one two…"},
		{"abcdefghijklmnop", 6, "abcde…"},
		{"déjà vu encore une fois", 9, "déjà vu…"},
		{"end. Next sentence", 6, "end…"},
	}
	for _, tt := range tests {
		if got := truncateWords(tt.in, tt.limit); got != tt.want {
			t.Errorf("truncateWords(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
		if tt.limit > 0 && utf8.RuneCountInString(truncateWords(tt.in, tt.limit)) > tt.limit {
			t.Errorf("truncateWords(%q, %d) is over the limit", tt.in, tt.limit)
		}
	}
}
