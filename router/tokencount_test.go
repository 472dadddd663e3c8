package router

import (
	"testing"

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
