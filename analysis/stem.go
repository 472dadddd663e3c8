package analysis

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kljensen/snowball/english"
)

// The Snowball stemmer allocates and walks suffix tables for every call;
// vocabularies are small next to the text they come from (a 1,267-skill
// library is ~4M words but ~60k distinct ones), so stems are memoized.
//
// The memo is read on every routed request (a few dozen words) and written
// almost only while a library is analysed, so it is plain maps behind
// read-write locks, sharded so that the analysing cores do not queue on
// one lock. A sync.Map was tried first: its lookups (boxed keys, a trie of
// small nodes) cost ~250 ns each when the caches are cold, a tenth of a
// routed request's query analysis.
var (
	stemShards [stemShardCount]stemShard
	stemSeed   = maphash.MakeSeed()
	stemCount  atomic.Int64
)

const stemShardCount = 16

type stemShard struct {
	mu sync.RWMutex
	m  map[string]string
}

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
	sh := &stemShards[maphash.String(stemSeed, word)%stemShardCount]
	sh.mu.RLock()
	s, ok := sh.m[word]
	sh.mu.RUnlock()
	if ok {
		return s
	}
	s = english.Stem(word, true)
	if s == "" {
		s = word
	}
	if stemCount.Load() < maxStemCache {
		sh.mu.Lock()
		if sh.m == nil {
			sh.m = make(map[string]string)
		}
		if _, ok := sh.m[word]; !ok {
			// A copy of the key: word may be a slice of a whole document,
			// which the memo would otherwise keep alive.
			key := strings.Clone(word)
			if s == word {
				s = key
			}
			sh.m[key] = s
			stemCount.Add(1)
		}
		sh.mu.Unlock()
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
