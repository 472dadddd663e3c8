// Package analysis turns text into the terms the keyword and embedding
// indexes match on: lowercase words split on punctuation and camelCase,
// Chinese, Japanese and Korean as overlapping character bigrams, English
// stop words dropped, Snowball (Porter2) stems.
//
// Index and query text must go through the same functions, so both sides
// agree on what a term is.
package analysis

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Words splits text into lowercase words. A word is a run of letters and
// digits; everything else separates words, including - _ / . so that ids and
// paths such as "mcp-builder" or "docs/plans" yield their parts. camelCase and
// PascalCase words are split too ("TypeError" -> "type", "error";
// "HTTPServer" -> "http", "server"), and the joined form is kept as well
// ("typeerror") because names are often written both ways.
//
// Chinese, Japanese and Korean are written without spaces between words, so
// a run of Han, Hiragana, Katakana or Hangul letters gives its overlapping
// character bigrams ("转换成" -> "转换", "换成"), and a run of one character
// gives that character, as Lucene's CJKBigramFilter does. Other letters and
// digits end the run ("PDF文件" -> "pdf", "文件"). Full-width ASCII and
// half-width katakana are folded to their usual forms first (Lucene's
// CJKWidthFilter), so "ＰＤＦ" is "pdf" and "ﾃﾞｰﾀ" is "データ".
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
// and returns where it ended. A CJK run there goes to appendCJK; one right
// after the word ends it and is left for the next call.
func appendWord(dst []string, text string, i int) ([]string, int) {
	var buf [64]rune
	word := buf[:0]
	for i < len(text) {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
			r = foldWidth(r)
			if isCJK(r) && isWordRune(r) {
				if len(word) > 0 {
					return emitWord(dst, word), i
				}
				return appendCJK(dst, text, i)
			}
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

// decodeRune decodes the first rune of s, width-folded (foldWidth).
func decodeRune(s string) (rune, int) {
	if s[0] < utf8.RuneSelf {
		return rune(s[0]), 1
	}
	r, size := utf8.DecodeRuneInString(s)
	return foldWidth(r), size
}

// foldWidth maps full-width ASCII (U+FF01-FF5E) to ASCII and half-width
// katakana (U+FF65-FF9F) to full-width, as NFKC does; the half-width voiced
// marks become combining marks that appendCJK composes. Other runes, the
// rest of NFKC included, are left alone: they would change how text in
// other scripts analyses.
func foldWidth(r rune) rune {
	if r < 0xFF01 || r > 0xFF9F || 0xFF5E < r && r < 0xFF65 {
		return r // small enough to inline: most runes leave here
	}
	return foldWidthForm(r)
}

func foldWidthForm(r rune) rune {
	var b [utf8.UTFMax]byte
	d := norm.NFKC.Properties(b[:utf8.EncodeRune(b[:], r)]).Decomposition()
	r, _ = utf8.DecodeRune(d)
	return r
}

// cjkScripts are the scripts split into bigrams: those of Lucene's
// CJKBigramFilter. Thai, Lao, Khmer and Myanmar are written without spaces
// too but need a dictionary to segment; their runs stay one word.
var cjkScripts = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul}

// isCJK reports whether the word rune r belongs to a CJK run. The
// prolonged sound mark "ー" is in no script but is part of katakana words
// ("データ").
func isCJK(r rune) bool {
	return r >= 0x1100 && inCJKScript(r) // small enough to inline
}

func inCJKScript(r rune) bool { return r == 'ー' || unicode.IsOneOf(cjkScripts, r) }

// appendCJK appends the bigrams of the CJK run at text[i] (the character
// when the run has one) and returns where the run ended. Combining marks
// after a character belong to the run; the run is put in NFC, which
// composes kana voiced marks (decomposed "が", half-width "ｶﾞ") and
// decomposed Hangul, and the marks left over are dropped.
func appendCJK(dst []string, text string, i int) ([]string, int) {
	start, n, plain := i, 0, true
	for i < len(text) {
		raw, size := utf8.DecodeRuneInString(text[i:])
		r := foldWidth(raw)
		switch {
		case isCJK(r) && isWordRune(r):
			n++
			plain = plain && r == raw && !mayChangeInNFC(r)
		case n > 0 && unicode.Is(unicode.Mn, r):
			plain = false
		default:
			return appendBigrams(dst, text[start:i], n, plain), i
		}
		i += size
	}
	return appendBigrams(dst, text[start:i], n, plain), i
}

// mayChangeInNFC reports whether NFC may change the CJK letter r or join
// it to the letter before: Hangul jamo and the compatibility ideographs.
// Checking this per rune is cheaper than asking norm of every run.
func mayChangeInNFC(r rune) bool { return r < 0x1200 || r >= 0xF900 }

// appendBigrams appends the bigrams of run, n CJK characters. A plain run
// (nothing folded, no combining marks, nothing NFC changes) is sliced, not
// copied, as the fast path's words are.
func appendBigrams(dst []string, run string, n int, plain bool) []string {
	if plain {
		if n == 1 {
			return append(dst, run)
		}
		a := 0
		b := a + runeLen(run)
		for b < len(run) {
			c := b + runeLen(run[b:])
			dst = append(dst, run[a:c])
			a, b = b, c
		}
		return dst
	}
	rs := make([]rune, 0, n)
	for j := 0; j < len(run); {
		r, size := decodeRune(run[j:])
		rs = append(rs, r)
		j += size
	}
	rs = []rune(norm.NFC.String(string(rs)))
	kept := rs[:0]
	for _, r := range rs {
		if !unicode.Is(unicode.Mn, r) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 1 {
		return append(dst, string(kept))
	}
	for k := 0; k+1 < len(kept); k++ {
		dst = append(dst, string(kept[k:k+2]))
	}
	return dst
}

func runeLen(s string) int {
	_, size := utf8.DecodeRuneInString(s)
	return size
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

// nextIsLetter reports whether s starts with a letter that can continue a
// word after an apostrophe: not a CJK one, which starts a run of its own.
func nextIsLetter(s string) bool {
	r, _ := decodeRune(s)
	return unicode.IsLetter(r) && !isCJK(r)
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
		if t := term(w); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// term is w's index term: "" for a stop word, else its stem (never "": a
// word is its own stem at worst).
func term(w string) string {
	if IsStopWord(w) {
		return ""
	}
	return Stem(w)
}

// Memo is AppendTerms for one goroutine that analyses many texts (a
// library): it remembers each word's term, its stem or that it is a stop
// word, in a map of its own. Words repeat across a library's texts, and one
// lookup there replaces the stop list's lookup and the shared stem memo's
// hash, lock and lookup (a fifth of analysing a library). The zero value is
// ready; it holds at most maxMemoWords words, then asks as AppendTerms does.
type Memo struct{ terms map[string]string } // word -> its stem, "" for a stop word

const maxMemoWords = 1 << 17

// AppendTerms is AppendTerms.
func (m *Memo) AppendTerms(dst []string, text string) []string {
	if m.terms == nil {
		m.terms = make(map[string]string)
	}
	start := len(dst)
	dst = AppendWords(dst, text)
	out := dst[:start]
	for _, w := range dst[start:] {
		t, ok := m.terms[w]
		if !ok {
			t = term(w)
			if len(m.terms) < maxMemoWords {
				// Copies: w may be a slice of a whole text, which the
				// memo would keep alive, and so may its stem (w itself).
				key := strings.Clone(w)
				if t == w {
					t = key
				}
				m.terms[key] = t
			}
		}
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}
