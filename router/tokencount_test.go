package router

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
)

// TestCountTokensExact checks that chunked, memoised counting equals the
// tokenizer on the whole text, on catalogs and on adversarial random text.
func TestCountTokensExact(t *testing.T) {
	c := tokens.Default()
	texts := []string{
		"", "\n", "\n\n", "a\n/b", "x>\n/\n/y", "a \n b", "tool \n   to", "line\r\nnext", "é\n  ü\n",
	}
	snap := fixture(t)
	for _, f := range skills.Formats {
		texts = append(texts,
			skills.RenderCatalog(snap.Skills(), skills.CatalogOptions{Format: f, Priority: []string{"pdf-tools"}, Footer: catalogFooter(3, true)}),
			skills.RenderCatalog(snap.Skills(), skills.CatalogOptions{Format: f, MaxDescription: 40}))
	}
	for _, s := range snap.Skills() {
		texts = append(texts, skills.Envelope(s))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"\n", "\n", "\r", "/", " ", "  ", "<", ">", "a", "B", "7", "é", "的", "\t", "'s", ".", "-", "</x>", "word"}
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		if got, want := countTokens(s), c.Count(s); got != want {
			t.Fatalf("countTokens(%q) = %d, tokenizer says %d", s, got, want)
		}
		if got, want := countWhole(s), c.Count(s); got != want {
			t.Fatalf("countWhole(%q) = %d, tokenizer says %d", s, got, want)
		}
	}
}

func TestCountTokensBenchCatalog(t *testing.T) {
	snap := benchLibrary(t)
	text := skills.RenderCatalog(snap.Skills(), skills.CatalogOptions{})
	if got, want := countTokens(text), tokens.Default().Count(text); got != want {
		t.Fatalf("full bench catalog: countTokens = %d, tokenizer = %d", got, want)
	}
}

func TestSafeCut(t *testing.T) {
	tests := []struct{ in, first string }{
		{"abc", "abc"},
		{"a\nb", "a\n"},
		{"a\n\nb", "a\n\n"},
		{"a\n/b\nc", "a\n/b\n"},
		{"a\n", "a\n"},
		{"a\r\nb", "a\r\n"},
	}
	for _, tt := range tests {
		if got := tt.in[:safeCut(tt.in)]; got != tt.first {
			t.Errorf("safeCut(%q) first chunk %q, want %q", tt.in, got, tt.first)
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
