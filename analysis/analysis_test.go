package analysis

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/unicode/norm"
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
		{"a--b__c", []string{"a", "b", "c"}},
		// CJK: overlapping bigrams within a run of Han, kana or Hangul.
		{"日本語 text", []string{"日本", "本語", "text"}},
		{"把这个PDF文件转换成Word文档", []string{"把这", "这个", "pdf", "文件", "件转", "转换", "换成", "word", "文档"}},
		{"東京都は、日本の首都であり", []string{"東京", "京都", "都は", "日本", "本の", "の首", "首都", "都で", "であ", "あり"}},
		{"データベースのクエリ", []string{"デー", "ータ", "タベ", "ベー", "ース", "スの", "のク", "クエ", "エリ"}},
		{"데이터베이스 쿼리를 최적화", []string{"데이", "이터", "터베", "베이", "이스", "쿼리", "리를", "최적", "적화"}},
		{"convert 文件 now", []string{"convert", "文件", "now"}},
		{"use中文please", []string{"use", "中文", "please"}},
		{"用parseJSON解析", []string{"用", "parse", "json", "parsejson", "解析"}},
		{"a 中 b", []string{"a", "中", "b"}},
		{"第3章", []string{"第", "3", "章"}},
		{"日本's", []string{"日本", "s"}},
		{"it's日本", []string{"it", "日本"}},
		{"café日本", []string{"café", "日本"}},
		// Width forms folded (cjk_width): full-width ASCII, half-width
		// katakana with its voiced marks; a decomposed kana composed.
		{"ＰＤＦ文件", []string{"pdf", "文件"}},
		{"２０２４年ＡＢＣ", []string{"2024", "年", "abc"}},
		{"ﾃﾞｰﾀﾍﾞｰｽ", []string{"デー", "ータ", "タベ", "ベー", "ース"}},
		{"ｶﾞ", []string{"ガ"}},
		{"か\u3099き", []string{"がき"}},
		{"日\u0301本", []string{"日本"}},
		{"\u1112\u1161\u11ab\u1100\u116e\u11a8", []string{"한국"}}, // decomposed Hangul
		{"\uf900", []string{"\u8c48"}},                           // compatibility ideograph: its NFC form
		// Scripts without spaces that need a dictionary: one word per run.
		{"สวัสดีครับ", []string{"สวัสดีครับ"}},
	}
	for _, tt := range tests {
		if got := Words(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestMayChangeInNFC: every CJK letter mayChangeInNFC passes is its own
// NFC form and never composes with the rune before it, so a run of them is
// in NFC.
func TestMayChangeInNFC(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !isCJK(r) || !isWordRune(r) || mayChangeInNFC(r) {
			continue
		}
		if s := string(r); norm.NFC.String(s) != s || !norm.NFC.PropertiesString(s).BoundaryBefore() {
			t.Errorf("U+%04X: NFC may change it; mayChangeInNFC says not", r)
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
		// Stop words and stems are English only: CJK bigrams pass as they are.
		{"converting 文档的 documents", []string{"convert", "文档", "档的", "document"}},
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
		// A memo gives the same terms, on first sight and from memory.
		var m Memo
		for range 2 {
			if got := m.AppendTerms(nil, s); !slices.Equal(got, want) {
				t.Fatalf("Memo.AppendTerms(%q) = %q, want %q", s, got, want)
			}
		}
	})
}

// TestMemo: a memo gives AppendTerms' terms for texts that share words,
// appending to what dst holds, whether it remembers a word, has not seen it
// or is full; what it keeps is copied, never a slice of a text.
func TestMemo(t *testing.T) {
	texts := []string{
		"Deploying the services and reviewing the deployments",
		"the deployments were reviewed; a review of services",
		"PDF forms, pdfs and HTTPServer logs in 日本語 text",
		"xy ab a an deploy deploys deployed",
	}
	var m Memo
	dst := []string{"kept"}
	for round := range 3 {
		if round == 2 {
			// Full: words it has not seen are still analysed.
			for i := len(m.terms); i < maxMemoWords; i++ {
				m.terms[fmt.Sprint("filler", i)] = "filler"
			}
		}
		for _, text := range append(texts, fmt.Sprintf("unseen words %d: zeppelin%d marmalades", round, round)) {
			text = strings.Clone(text)
			got := m.AppendTerms(slices.Clone(dst), text)
			if want := AppendTerms(slices.Clone(dst), text); !slices.Equal(got, want) {
				t.Fatalf("round %d: %q gives %q, want %q", round, text, got, want)
			}
			base := uintptr(unsafe.Pointer(unsafe.StringData(text)))
			inText := func(s string) bool {
				p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
				return s != "" && p >= base && p < base+uintptr(len(text))
			}
			for w, term := range m.terms {
				if inText(w) || inText(term) {
					t.Fatalf("round %d: the memo keeps %q -> %q, a slice of the text", round, w, term)
				}
			}
		}
		if n := len(m.terms); round == 2 && n != maxMemoWords {
			t.Fatalf("a full memo grew to %d words", n)
		}
	}
}

// appendWordsReference is AppendWords without its plain-ASCII fast path:
// every word, CJK run and separator through appendWord.
func appendWordsReference(dst []string, text string) []string {
	for i := 0; i < len(text); {
		dst, i = appendWord(dst, text, i)
	}
	return dst
}

// FuzzWordsFastPath: the fast path gives the words every word through
// emitWord gives.
func FuzzWordsFastPath(f *testing.F) {
	for _, s := range []string{"", "plain words only", "HTTPServer fooBar", "user's don't", "a/b.c-d_e 42x", "日本語 café", "\xff\xfe ab", "x’y", "end", "A",
		"pdf文件", "it's日本", "ab'ｃ", "x\u3099y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Words(s), appendWordsReference(nil, s); !slices.Equal(got, want) {
			t.Fatalf("Words(%q) = %q, want %q", s, got, want)
		}
	})
}

// cjkRuns are the maximal runs of CJK letters, found independently of
// AppendWords' scanner.
var cjkRuns = regexp.MustCompile(`[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}ー]+`)

// FuzzWordsCJK: on NFC text without width forms or combining marks (which
// are folded or composed first), the CJK words are exactly the bigrams of each
// run of CJK letters (the letter itself for a run of one), in order, and
// the other words are what the text gives with its CJK letters replaced by
// spaces.
func FuzzWordsCJK(f *testing.F) {
	for _, s := range []string{"把这个PDF文件转换成Word文档", "東京都は、日本の首都であり", "데이터베이스 쿼리", "a中b", "〇一二", "日本's", "x'日", "ーabー", "ab12日本cd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || !norm.NFC.IsNormalString(s) || strings.ContainsFunc(s, func(r rune) bool { return r >= 0xFF01 || unicode.Is(unicode.Mn, r) }) {
			t.Skip()
		}
		isCJKLetter := func(r rune) bool { return unicode.IsLetter(r) && isCJK(r) }
		var wantCJK []string
		for _, run := range cjkRuns.FindAllString(s, -1) {
			// The regexp's classes hold non-letters too (radicals, 〇):
			// those separate runs as any non-letter does.
			for _, run := range strings.FieldsFunc(run, func(r rune) bool { return !isCJKLetter(r) }) {
				rs := []rune(run)
				if len(rs) == 1 {
					wantCJK = append(wantCJK, run)
				}
				for k := 0; k+1 < len(rs); k++ {
					wantCJK = append(wantCJK, string(rs[k:k+2]))
				}
			}
		}
		var gotCJK, gotOther []string
		for _, w := range Words(s) {
			if strings.ContainsFunc(w, isCJKLetter) {
				if n := utf8.RuneCountInString(w); n > 2 || strings.ContainsFunc(w, func(r rune) bool { return !isCJKLetter(r) }) {
					t.Fatalf("Words(%q): %q mixes CJK with other runes or is longer than a bigram", s, w)
				}
				gotCJK = append(gotCJK, w)
			} else {
				gotOther = append(gotOther, w)
			}
		}
		if !slices.Equal(gotCJK, wantCJK) {
			t.Fatalf("Words(%q) CJK words %q, want %q", s, gotCJK, wantCJK)
		}
		spaced := strings.Map(func(r rune) rune {
			if isCJKLetter(r) {
				return ' '
			}
			return r
		}, s)
		if want := Words(spaced); !slices.Equal(gotOther, want) {
			t.Fatalf("Words(%q) other words %q, want those of %q: %q", s, gotOther, spaced, want)
		}
	})
}
