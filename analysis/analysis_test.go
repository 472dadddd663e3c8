package analysis

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"mcp-builder", []string{"mcp", "builder"}},
		{"snake_case/path.to/file.md", []string{"snake", "case", "path", "to", "file", "md"}},
		{"TypeError in parseJSON", []string{"type", "error", "typeerror", "in", "parse", "json", "parsejson"}},
		{"HTTPServer", []string{"http", "server", "httpserver"}},
		{"REST APIs and URLs", []string{"rest", "apis", "and", "urls"}},
		{"gpt4 p5js ISO14971", []string{"gpt4", "p5js", "iso14971"}},
		{"don't stop the user's flow", []string{"dont", "stop", "the", "user", "flow"}},
		{"it’s fine", []string{"it", "fine"}},
		{"'quoted' words", []string{"quoted", "words"}},
		{"Ünïcode naïve café", []string{"ünïcode", "naïve", "café"}},
		{"日本語 text", []string{"日本語", "text"}},
		{"a--b__c", []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		if got := Words(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"hi, how are you?", nil},
		{"What's the capital of Australia?", []string{"capit", "australia"}},
		{"Running the tests", []string{"run", "test"}},
		{"debugging failing tests", []string{"debug", "fail", "test"}},
		{"please create an onboarding tour", []string{"creat", "onboard", "tour"}},
		{"Generated 3D models in 2024", []string{"generat", "3d", "model", "2024"}},
	}
	for _, tt := range tests {
		if got := Terms(tt.in); !(len(got) == 0 && len(tt.want) == 0) && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStemAgreesAcrossForms(t *testing.T) {
	groups := [][]string{
		{"review", "reviews", "reviewing", "reviewed"},
		{"debug", "debugging", "debugged"},
		{"connect", "connection", "connections", "connected"},
	}
	for _, g := range groups {
		want := Stem(g[0])
		for _, w := range g[1:] {
			if got := Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, want %q (as %q)", w, got, want, g[0])
			}
		}
	}
	// Not stemmed: short words, numbers, mixed tokens, non-ASCII.
	for _, w := range []string{"go", "2024", "p5js", "café"} {
		if got := Stem(w); got != w {
			t.Errorf("Stem(%q) = %q, want it unchanged", w, got)
		}
	}
}

func TestAppendReusesBuffer(t *testing.T) {
	buf := make([]string, 0, 16)
	buf = AppendTerms(buf, "first message")
	n := len(buf)
	buf = AppendTerms(buf, "second one")
	if got := buf[:n]; !reflect.DeepEqual(got, Terms("first message")) {
		t.Errorf("AppendTerms overwrote earlier terms: %q", got)
	}
	if got := buf[n:]; !reflect.DeepEqual(got, Terms("second one")) {
		t.Errorf("AppendTerms appended %q", got)
	}
}

func FuzzWords(f *testing.F) {
	for _, s := range []string{"", "HTTPServer", "user's don't", "a/b.c-d_e", "日本語", "\xff\xfe", "''''", "A'B", "x’"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range Words(s) {
			if w == "" {
				t.Fatalf("Words(%q) has an empty word", s)
			}
			if !utf8.ValidString(w) && utf8.ValidString(s) {
				t.Fatalf("Words(%q) produced invalid UTF-8 %q", s, w)
			}
			if strings.ContainsFunc(w, unicode.IsSpace) {
				t.Fatalf("Words(%q) produced %q with a space", s, w)
			}
			if strings.ToLower(w) != w && utf8.ValidString(w) {
				// ToLower of some runes differs from unicode.ToLower per rune
				// only for special cases; all ASCII must be lowercase.
				for _, r := range w {
					if r < utf8.RuneSelf && unicode.IsUpper(r) {
						t.Fatalf("Words(%q) produced %q with uppercase", s, w)
					}
				}
			}
		}
		// Terms are the stems of the words that are not stop words, in
		// order. A stem may coincide with a stop word ("nors" stems to
		// "nor"); what must never happen is a stop word getting through.
		var want []string
		for _, w := range Words(s) {
			if !IsStopWord(w) {
				want = append(want, Stem(w))
			}
		}
		if got := Terms(s); !slices.Equal(got, want) {
			t.Fatalf("Terms(%q) = %q, want the stems of the non-stop words %q", s, got, want)
		}
	})
}

// appendWordsReference is AppendWords before its plain-ASCII fast path:
// every word through emitWord.
func appendWordsReference(dst []string, text string) []string {
	var buf [64]rune
	word := buf[:0]
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		i += size
		switch {
		case isWordRune(r):
			word = append(word, r)
		case isApostrophe(r) && len(word) > 0 && i < len(text) && nextIsLetter(text[i:]):
			word = append(word, '\'')
		default:
			if len(word) > 0 {
				dst = emitWord(dst, word)
				word = word[:0]
			}
		}
	}
	if len(word) > 0 {
		dst = emitWord(dst, word)
	}
	return dst
}

// FuzzWordsFastPath: the fast path gives the words every word through
// emitWord gives.
func FuzzWordsFastPath(f *testing.F) {
	for _, s := range []string{"", "plain words only", "HTTPServer fooBar", "user's don't", "a/b.c-d_e 42x", "日本語 café", "\xff\xfe ab", "x’y", "end", "A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Words(s), appendWordsReference(nil, s); !slices.Equal(got, want) {
			t.Fatalf("Words(%q) = %q, want %q", s, got, want)
		}
	})
}
