package tokens

// The pre-tokenizers of o200k_base and cl100k_base, written out by hand.
// tiktoken-go runs their split patterns through regexp2, which turns the text
// into runes and allocates a match per piece: most of why its Count manages
// ~10 MB/s. These functions return the same pieces, the same way tiktoken-go
// finds them, including where its generated matcher departs from the
// pattern's textbook backtracking (`\s*[\r\n]+` ends at the first newline of
// a whitespace run, see whitespace). TestSplitMatchesCodec and
// FuzzCountFast hold them to tiktoken-go's counts.
//
// Both take valid UTF-8 (Counter.Count replaces invalid bytes first, as the
// codec's conversion to runes does) and return the byte length of the first
// piece of a non-empty s, or 0 where no piece starts (the codec then skips a
// rune; only DEL, see classify).

import (
	"unicode"
	"unicode/utf8"
)

// Rune classes of the two patterns, as bits.
const (
	clsL      = 1 << iota // \p{L}
	clsN                  // \p{N}
	clsS                  // \s: unicode.IsSpace, as regexp2 defines it
	clsUpper              // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	clsLower              // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	clsPrefix             // [^\r\n\p{L}\p{N}]: the optional first rune of a letter piece
	clsPunct              // [^\s\p{L}\p{N}]
)

// asciiClass holds the classes of the 128 ASCII runes.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		t[r] = classify(r)
	}
	return t
}()

func classify(r rune) uint8 {
	var c uint8
	if unicode.IsLetter(r) {
		c |= clsL
	}
	if unicode.IsNumber(r) {
		c |= clsN
	}
	if unicode.IsSpace(r) {
		c |= clsS
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= clsUpper
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= clsLower
	}
	// regexp2's generated ASCII bitmaps leave out U+007F from both negated
	// classes that should hold it, so no alternative matches DEL and the
	// codec skips it: it adds no token. Counting it would be more correct
	// and would change counts that golden files and reports hold.
	if c&(clsL|clsN) == 0 && r != '\r' && r != '\n' && r != 0x7f {
		c |= clsPrefix
	}
	if c&(clsL|clsN|clsS) == 0 && r != 0x7f {
		c |= clsPunct
	}
	return c
}

// runeAt returns the rune at the start of s, its length and its classes; a
// zero length at the end of s.
func runeAt(s string) (rune, int, uint8) {
	if len(s) == 0 {
		return 0, 0, 0
	}
	if b := s[0]; b < utf8.RuneSelf {
		return rune(b), 1, asciiClass[b]
	}
	r, n := utf8.DecodeRuneInString(s)
	return r, n, classify(r)
}

// run returns the length of the longest prefix of s whose runes all have one
// of the classes in want.
func run(s string, want uint8) int {
	i := 0
	for i < len(s) {
		_, n, c := runeAt(s[i:])
		if c&want == 0 {
			break
		}
		i += n
	}
	return i
}

// pieceO200k is the first piece of s under o200k_base's pattern:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// The alternation is atomic: the first alternative that matches wins.
func pieceO200k(s string) int {
	_, n0, c0 := runeAt(s)
	// The letter alternatives try the one-rune prefix first, then none.
	starts := [2]int{0, 0}
	tries := starts[:1]
	if c0&clsPrefix != 0 {
		starts[0] = n0
		tries = starts[:2]
	}
	for _, p := range tries {
		if end, ok := lowerLetters(s, p); ok {
			return end + contraction(s[end:])
		}
	}
	for _, p := range tries {
		if u := run(s[p:], clsUpper); u > 0 {
			end := p + u
			end += run(s[end:], clsLower)
			return end + contraction(s[end:])
		}
	}
	if c0&clsN != 0 {
		return digits(s)
	}
	if end := punct(s); end > 0 {
		return end + runOf(s[end:], "\r\n/")
	}
	return whitespace(s)
}

// lowerLetters matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// at s[p:] with backtracking: the upper run takes all it can, then gives
// runes back one at a time until a lower rune can start the lower run.
func lowerLetters(s string, p int) (int, bool) {
	u := p + run(s[p:], clsUpper)
	if _, _, c := runeAt(s[u:]); c&clsLower != 0 {
		return u + run(s[u:], clsLower), true
	}
	// Every rune in s[p:u] is upper; the last of them that is also lower
	// starts a lower run of one rune (the rune after it is not lower).
	for k := u; k > p; {
		_, n := utf8.DecodeLastRuneInString(s[p:k])
		k -= n
		if _, _, c := runeAt(s[k:]); c&clsLower != 0 {
			return k + n, true
		}
	}
	return 0, false
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at the start of s and
// returns its length or 0. Case-insensitive 's' includes U+017F (ſ), as in
// regexp2's case folding.
func contraction(s string) int {
	if len(s) < 2 || s[0] != '\'' {
		return 0
	}
	r, n := utf8.DecodeRuneInString(s[1:])
	switch r {
	case 's', 'S', 't', 'T', 'm', 'M', 'd', 'D', 'ſ':
		return 1 + n
	case 'r', 'R', 'v', 'V':
		if len(s) > 2 && s[2]|0x20 == 'e' {
			return 3
		}
	case 'l', 'L':
		if len(s) > 2 && s[2]|0x20 == 'l' {
			return 3
		}
	}
	return 0
}

// digits matches \p{N}{1,3} at a number.
func digits(s string) int {
	end := 0
	for range 3 {
		_, n, c := runeAt(s[end:])
		if c&clsN == 0 {
			break
		}
		end += n
	}
	return end
}

// punct matches ` ?[^\s\p{L}\p{N}]+` (the space is atomic: once taken it is
// not given back) and returns its length or 0.
func punct(s string) int {
	p := 0
	if s[0] == ' ' {
		p = 1
	}
	if n := run(s[p:], clsPunct); n > 0 {
		return p + n
	}
	return 0
}

// runOf returns the length of the prefix of s made of bytes in set.
func runOf(s, set string) int {
	i := 0
	for i < len(s) && indexByte(set, s[i]) {
		i++
	}
	return i
}

func indexByte(set string, b byte) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == b {
			return true
		}
	}
	return false
}

// whitespace matches the three whitespace alternatives shared by both
// patterns at a whitespace rune:
//   - `\s*[\r\n]+`: tiktoken-go's generated matcher backtracks the `\s*` to
//     the first '\r' or '\n' of the run, not the last, then takes the
//     newlines that follow it;
//   - `\s+(?!\S)`: the run, less its last rune when a visible rune follows;
//   - `\s+`: the run.
func whitespace(s string) int {
	// The scan stops at the first newline: measuring the whole run first
	// made a long run of lines holding only whitespace quadratic.
	e := 0
	for e < len(s) {
		if s[e] == '\r' || s[e] == '\n' {
			return e + runOf(s[e:], "\r\n")
		}
		_, n, c := runeAt(s[e:])
		if c&clsS == 0 {
			break
		}
		e += n
	}
	if e == len(s) {
		return e
	}
	if _, n := utf8.DecodeLastRuneInString(s[:e]); e-n > 0 {
		return e - n
	}
	return e
}

// pieceCl100k is the first piece of s under cl100k_base's pattern:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func pieceCl100k(s string) int {
	if n := contraction(s); n > 0 {
		return n
	}
	_, n0, c0 := runeAt(s)
	if c0&clsL != 0 {
		return run(s, clsL)
	}
	if c0&clsPrefix != 0 {
		if l := run(s[n0:], clsL); l > 0 {
			return n0 + l
		}
	}
	if c0&clsN != 0 {
		return digits(s)
	}
	if end := punct(s); end > 0 {
		return end + runOf(s[end:], "\r\n")
	}
	return whitespace(s)
}
