package analysis

import (
	"sync"
	"sync/atomic"

	"github.com/kljensen/snowball/english"
)

// The Snowball stemmer allocates and walks suffix tables for every call;
// vocabularies are small next to the text they come from (a 1,267-skill
// library is ~4M words but ~60k distinct ones), so stems are memoized.
var (
	stemCache sync.Map // string -> string
	stemCount atomic.Int64
)

// maxStemCache bounds the memo so adversarial input (random words in chat
// messages) cannot grow it without limit; beyond it stems are computed.
const maxStemCache = 1 << 18

// Stem returns the Snowball English stem of a lowercase word. Words that are
// not plain ASCII letters (numbers, "p5js", non-Latin scripts) and words of
// two letters or fewer are returned as they are.
func Stem(word string) string {
	if len(word) <= 2 || !asciiLetters(word) {
		return word
	}
	if s, ok := stemCache.Load(word); ok {
		return s.(string)
	}
	s := english.Stem(word, true)
	if s == "" {
		s = word
	}
	if stemCount.Load() < maxStemCache {
		if _, loaded := stemCache.LoadOrStore(word, s); !loaded {
			stemCount.Add(1)
		}
	}
	return s
}

func asciiLetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
