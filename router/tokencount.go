package router

// Memoised token counting. Counting with the BPE tokenizer runs at about
// 6 MB/s, so counting a 1,500-token catalog on every request would cost
// about a millisecond. Catalogs are made of lines that repeat across requests
// (one skill entry is the same few lines whatever the ranking), and envelopes
// and tool definitions repeat whole, so both are memoised.

import (
	"crypto/sha256"
	"strings"
	"sync"

	"github.com/skillrouter/skillrouter/tokens"
)

const memoMax = 1 << 16 // entries per memo before it is cleared (bounds memory)

type tokenMemo struct {
	mu sync.Mutex
	m  map[string]int
}

func (t *tokenMemo) get(key string, count func() int) int {
	t.mu.Lock()
	n, ok := t.m[key]
	t.mu.Unlock()
	if ok {
		return n
	}
	n = count()
	t.mu.Lock()
	if t.m == nil || len(t.m) >= memoMax {
		t.m = make(map[string]int)
	}
	t.m[key] = n
	t.mu.Unlock()
	return n
}

var (
	chunkMemo tokenMemo // short chunks, keyed by their text
	wholeMemo tokenMemo // whole texts, keyed by their SHA-256
)

const chunkKeyMax = 2048 // longer chunks are keyed by digest

// countTokens returns tokens.Default().Count(s), memoised per chunk.
//
// The text is cut after a '\n' whose next byte is not '\r', '\n' or '/'.
// The o200k_base pre-tokenizer never lets a piece run across such a point
// (no alternative of its split pattern continues past a newline unless more
// newlines or, after punctuation, a slash follow, and the pattern looks only
// ahead), and BPE merges stay within a piece, so the count of the whole is
// exactly the sum of the counts of the chunks. TestCountTokensExact checks
// this on real catalogs and on random text.
func countTokens(s string) int {
	total := 0
	for len(s) > 0 {
		cut := safeCut(s)
		chunk := s[:cut]
		s = s[cut:]
		if len(chunk) <= chunkKeyMax {
			total += chunkMemo.get(chunk, func() int { return tokens.Default().Count(chunk) })
		} else {
			total += countWhole(chunk)
		}
	}
	return total
}

// safeCut returns the length of the first chunk of s (see countTokens).
func safeCut(s string) int {
	off := 0
	for {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return len(s)
		}
		j := off + i + 1
		if j >= len(s) {
			return len(s)
		}
		switch s[j] {
		case '\n', '\r', '/':
			off = j
		default:
			return j
		}
	}
}

// countWhole returns tokens.Default().Count(s), memoised by digest; for
// texts that repeat whole (envelopes, tool definitions).
func countWhole(s string) int {
	sum := sha256.Sum256([]byte(s))
	return wholeMemo.get(string(sum[:]), func() int { return tokens.Default().Count(s) })
}
