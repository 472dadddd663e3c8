package router

import (
	"slices"
	"testing"

	"github.com/skillrouter/skillrouter/analysis"
)

// TestCodeFingerprintCJK: the fingerprint's probe has CJK text, so an index
// built before CJK text was split into bigrams (fingerprint 0b29b2d64abeb651)
// is rebuilt rather than loaded, and a later change to that rule shows.
func TestCodeFingerprintCJK(t *testing.T) {
	terms := analysis.Terms(fingerprintProbe)
	for _, want := range []string{"pdf", "文件", "转换", "デー", "検索", "데이", "쿼리"} {
		if !slices.Contains(terms, want) {
			t.Errorf("probe terms lack %q: %q", want, terms)
		}
	}
	if got := codeFingerprint(); got == "0b29b2d64abeb651" {
		t.Errorf("codeFingerprint() = %s, the fingerprint of the analysis without CJK bigrams", got)
	}
}
