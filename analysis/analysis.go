// Package analysis turns text into the terms the keyword and embedding
// indexes match on: lowercase words split on punctuation and camelCase,
// English stop words dropped, Snowball (Porter2) stems.
//
// Index and query text must go through the same functions, so both sides
// agree on what a term is.
package analysis

import (
	"unicode"
	"unicode/utf8"
)

// Words splits text into lowercase words. A word is a run of letters and
// digits; everything else separates words, including - _ / . so that ids and
// paths such as "mcp-builder" or "docs/plans" yield their parts. camelCase and
// PascalCase words are split too ("TypeError" -> "type", "error";
// "HTTPServer" -> "http", "server"), and the joined form is kept as well
// ("typeerror") because names are often written both ways.
// Stop words are kept; see Terms.
func Words(text string) []string {
	return AppendWords(nil, text)
}

// AppendWords is Words appending to dst, to reuse a buffer.
//
// Most words are plain lowercase ASCII ended by ASCII punctuation or
// space: those are found by a byte scan and appended as slices of text,
// without a copy (decoding runes and two allocations per word were a third
// of analysing a library, done three times over at start-up, and of a
// routed request's query analysis). Other words take the general path.
// Callers that keep words beyond the life of text copy them.
func AppendWords(dst []string, text string) []string {
	for i := 0; i < len(text); {
		c := text[i]
		if isLowerAlnum(c) {
			j := i + 1
			for j < len(text) && isLowerAlnum(text[j]) {
				j++
			}
			if j == len(text) || text[j] < utf8.RuneSelf && !isASCIIWordByte(text[j]) && text[j] != '\'' {
				dst = append(dst, text[i:j])
				i = j
				continue
			}
		} else if c < utf8.RuneSelf && !isASCIIWordByte(c) {
			i++ // a separator
			continue
		}
		dst, i = appendWord(dst, text, i)
	}
	return dst
}

// appendWord reads the word that starts at text[i] (or the separator
// there) the general way, rune by rune, appends what emitWord makes of it,
// and returns where it ended.
func appendWord(dst []string, text string, i int) ([]string, int) {
	var buf [64]rune
	word := buf[:0]
	for i < len(text) {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		switch {
		case isWordRune(r):
			word = append(word, r)
		case isApostrophe(r) && len(word) > 0 && i+size < len(text) && nextIsLetter(text[i+size:]):
			// "don't", "user's": keep the word whole; "'s" is dropped below.
			word = append(word, '\'')
		default:
			if len(word) > 0 {
				return emitWord(dst, word), i + size
			}
			return dst, i + size // a separator
		}
		i += size
	}
	if len(word) > 0 {
		dst = emitWord(dst, word)
	}
	return dst, i
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isASCIIWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

func isApostrophe(r rune) bool { return r == '\'' || r == '’' }

func nextIsLetter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r)
}

// emitWord appends the lowercase word, its camelCase parts and, when it had
// parts, the joined form.
func emitWord(dst []string, word []rune) []string {
	// Possessive and contraction endings: "user's" -> "user", "don't" -> "dont".
	if n := len(word); n > 2 && word[n-2] == '\'' && (word[n-1] == 's' || word[n-1] == 'S') {
		word = word[:n-2]
	}
	clean := word[:0:0]
	hasApos := false
	for _, r := range word {
		if r == '\'' {
			hasApos = true
			break
		}
	}
	if hasApos {
		clean = make([]rune, 0, len(word))
		for _, r := range word {
			if r != '\'' {
				clean = append(clean, r)
			}
		}
		word = clean
	}
	start := 0
	parts := 0
	for i := 1; i < len(word); i++ {
		if camelBoundary(word, i) {
			dst = append(dst, lower(word[start:i]))
			start = i
			parts++
		}
	}
	if parts == 0 {
		return append(dst, lower(word))
	}
	dst = append(dst, lower(word[start:]))
	return append(dst, lower(word))
}

// camelBoundary reports whether a new camelCase part starts at word[i]:
// "fooBar" before B, "HTTPServer" before S. Letter/digit changes are not
// boundaries ("p5js", "gpt4", "iso14971" stay whole).
func camelBoundary(word []rune, i int) bool {
	prev, cur := word[i-1], word[i]
	if unicode.IsLower(prev) && unicode.IsUpper(cur) {
		return true
	}
	if unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(word) && unicode.IsLower(word[i+1]) {
		// "HTTPServer": boundary before "S" — unless the lowercase run is a
		// plural or short suffix of an acronym ("APIs", "URLs").
		rest := 0
		for j := i + 1; j < len(word) && unicode.IsLower(word[j]); j++ {
			rest++
		}
		return rest > 1
	}
	return false
}

func lower(rs []rune) string {
	ascii := true
	for _, r := range rs {
		if r >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		b := make([]byte, len(rs))
		for i, r := range rs {
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			b[i] = byte(r)
		}
		return string(b)
	}
	out := make([]rune, len(rs))
	for i, r := range rs {
		out[i] = unicode.ToLower(r)
	}
	return string(out)
}

// Terms returns the index terms of text: Words without stop words, stemmed.
func Terms(text string) []string {
	return AppendTerms(nil, text)
}

// AppendTerms is Terms appending to dst.
func AppendTerms(dst []string, text string) []string {
	start := len(dst)
	dst = AppendWords(dst, text)
	out := dst[:start]
	for _, w := range dst[start:] {
		if IsStopWord(w) {
			continue
		}
		out = append(out, Stem(w))
	}
	return out
}
