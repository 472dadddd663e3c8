package tokens

// Memoised counting. BPE counting runs at about 45 MB/s, and the texts that
// get counted over and over (catalogs on every request, skill envelopes,
// every SKILL.md of a benchmark library at each size) are made of lines that
// repeat from one text to the next. So a text is cut into chunks whose counts
// add up exactly to the count of the whole, and each chunk's count is
// remembered.

import (
	"hash/maphash"
	"strings"
	"sync"
)

// memoMax bounds each counter's memo (about 55 bytes an entry, so at most
// ~56 MB); when full it is cleared rather than grown. The 407 SKILL.md files
// of the shared benchmark hold 76k distinct chunks, so benchmark libraries
// grown from them fit.
const memoMax = 1 << 20

// memoKey is a chunk's 128-bit hash: two maphash values under independent
// random seeds. A false hit needs a 128-bit collision (odds about 2^-88 with
// the memo full), so memoised counts are exact in practice, and the memo
// keeps no chunk text alive.
type memoKey [2]uint64

type memo struct {
	seeds [2]maphash.Seed
	max   int
	mu    sync.RWMutex
	m     map[memoKey]int
}

func newMemo(max int) *memo {
	return &memo{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, max: max, m: map[memoKey]int{}}
}

// CountMemo returns Count(s), memoised. For o200k_base and cl100k_base, s is
// counted in chunks (see chunkEnd) whose counts sum to the count of the
// whole, so a text made of lines counted before costs a hash per line;
// other encodings are memoised whole. Safe for concurrent use; memory is
// bounded.
func (c *Counter) CountMemo(s string) int {
	if !c.chunked {
		return c.countChunk(s)
	}
	return sumChunks(s, chunkEnd, c.countChunk)
}

// sumChunks cuts s where cut says and adds up count over the chunks.
func sumChunks(s string, cut, count func(string) int) int {
	n := 0
	for len(s) > 0 {
		end := cut(s)
		n += count(s[:end])
		s = s[end:]
	}
	return n
}

func (c *Counter) countChunk(s string) int {
	if s == "" {
		return 0
	}
	m := c.memo
	k := memoKey{maphash.String(m.seeds[0], s), maphash.String(m.seeds[1], s)}
	m.mu.RLock()
	n, ok := m.m[k]
	m.mu.RUnlock()
	if ok {
		return n
	}
	n = c.Count(s)
	m.mu.Lock()
	if len(m.m) >= m.max {
		clear(m.m)
	}
	m.m[k] = n
	m.mu.Unlock()
	return n
}

// chunkEnd returns the length of the first chunk of s: up to and including
// the first '\n' at which the pre-tokenizer always ends a piece, or all of s.
// Such a '\n' is followed by a line that does not start with '/' and has a
// visible ASCII character before any '\r' or '\n'.
//
// Why the count of s is then the sum of the chunks' counts: BPE merges stay
// within a piece, and the split patterns of o200k_base and cl100k_base have
// no look-behind, so matching restarts the same at a piece boundary. No
// piece runs across such a '\n':
//   - letter, number and contraction pieces hold no '\n' (even their
//     one-character prefix [^\r\n\p{L}\p{N}] excludes it);
//   - a punctuation piece ` ?[^\s\p{L}\p{N}]+[\r\n/]*` (cl100k_base: [\r\n]*)
//     continues past a '\n' only into '\r', '\n' or '/';
//   - a whitespace run holding a newline is matched by `\s*[\r\n]+` (it
//     precedes `\s+(?!\S)` and `\s+`), which ends at a newline of the run;
//     the visible character ends the run before any newline after this one.
//
// That holds for the pattern's backtracking semantics and for tiktoken-go's
// generated matcher alike (which ends `\s*[\r\n]+` at the first newline of a
// run, not the last). Other encodings' patterns let `\s+(?!\S)` run across a
// newline into indentation, so they are not chunked. TestCountMemoExact and
// FuzzCountMemo check chunked against whole counts.
func chunkEnd(s string) int {
	off := 0
	for {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return len(s)
		}
		j := off + i + 1
		if j == len(s) || s[j] != '/' && visibleFirst(s[j:]) {
			return j
		}
		off = j
	}
}

// visibleFirst reports whether s has a visible ASCII character before its
// first '\r' or '\n'.
func visibleFirst(s string) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == '\r' || b == '\n':
			return false
		case b > ' ' && b < 0x7f:
			return true
		}
	}
	return false
}
