package embed

import (
	"context"
	"slices"
	"testing"
)

// TestVocabGivesTheSameVectors checks that the precomputed vocabulary is only
// a shortcut: texts of vocabulary words, unknown words, repeats, stop words,
// numbers, non-ASCII and long words embed to exactly the vectors the full
// computation gives, with the vocabulary whole, cut to a few words, or absent.
func TestVocabGivesTheSameVectors(t *testing.T) {
	corpus := []string{
		"Review pull requests: check the diff, run the tests and comment on risky changes.",
		"Deploy containers with Docker and Kubernetes; roll back a failed release.",
		"Analyze CSV files with pandas and plot the results. Résumé parsing für Übersetzungen.",
		"Write SQL migrations for PostgreSQL 16 and review query plans.",
	}
	texts := []string{
		"review the failing tests in this pull request",
		"deploy deploy deploy the containers to kubernetes",
		"completely unrelated vocabulary: zeppelin marmalade quixotic",
		"the and of to", // stop words only
		"postgresql 16 résumé für über pneumonoultramicroscopicsilicovolcanoconiosis",
		"",
	}
	fit := NewBuiltin(Config{}).Fit(corpus)
	if fit.vocab == nil || len(fit.vocab.entries) == 0 {
		t.Fatal("fitted builtin has no vocabulary")
	}
	want := embedAll(t, withVocab(fit, nil), texts)
	for _, limit := range []int{maxVocab, 5, 0} {
		got := embedAll(t, withVocab(fit, newVocabFrom(corpus, limit, fit)), texts)
		for i := range texts {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("vocabulary of %d words: vector of %q differs", limit, texts[i])
			}
		}
	}
}

func withVocab(b *Builtin, v *vocab) *Builtin {
	c := *b
	c.vocab = v
	return &c
}

func newVocabFrom(corpus []string, limit int, fit *Builtin) *vocab {
	words := map[string]int{}
	var fs featureSet
	for _, text := range corpus {
		fs.extract(text, &fit.opts, nil)
		for i, w := range fs.wseq {
			words[w] += fs.wcount[i]
		}
	}
	return newVocab(words, limit, &fit.opts, fit.idf)
}

func embedAll(t *testing.T, b *Builtin, texts []string) [][]float32 {
	t.Helper()
	out, err := b.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
