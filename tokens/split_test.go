package tokens

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/tiktoken-go/tokenizer"
)

// references are tiktoken-go's codecs, the reference for the fast path.
var references sync.Map // Encoding → tokenizer.Codec

// slowCount is tiktoken-go's own count.
func slowCount(t testing.TB, c *Counter, s string) int {
	t.Helper()
	codec, ok := references.Load(c.enc)
	if !ok {
		fresh, err := tokenizer.Get(tokenizer.Encoding(c.enc))
		if err != nil {
			t.Fatal(err)
		}
		codec, _ = references.LoadOrStore(c.enc, fresh)
	}
	n, err := codec.(tokenizer.Codec).Count(s)
	if err != nil {
		t.Fatalf("codec: %v", err)
	}
	return n
}

// patterns are the encodings' split patterns as tiktoken-go compiles them
// (regexp2 runs its generated matcher for these exact strings).
var patterns = map[Encoding]string{
	O200kBase:  `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	Cl100kBase: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

var compiled sync.Map // Encoding → *regexp2.Regexp

// referencePieces splits s as the codec does: its pattern's matches over
// the text's runes.
func referencePieces(t testing.TB, enc Encoding, s string) []string {
	t.Helper()
	re, ok := compiled.Load(enc)
	if !ok {
		re, _ = compiled.LoadOrStore(enc, regexp2.MustCompile(patterns[enc], regexp2.None))
	}
	var out []string
	m, err := re.(*regexp2.Regexp).FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.(*regexp2.Regexp).FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatalf("regexp2: %v", err)
	}
	return out
}

// fastPieces splits s as the fast path does.
func fastPieces(c *Counter, s string) []string {
	s = runeSafe(s)
	var out []string
	for len(s) > 0 {
		end := c.fast.piece(s)
		if end == 0 {
			_, end = utf8.DecodeRuneInString(s)
		} else {
			out = append(out, s[:end])
		}
		s = s[end:]
	}
	return out
}

// checkFast fails unless the fast path splits s into the codec's pieces and
// counts as many tokens.
func checkFast(t testing.TB, c *Counter, s string) {
	t.Helper()
	if got, want := fastPieces(c, s), referencePieces(t, c.enc, s); !slices.Equal(got, want) {
		t.Fatalf("%s: pieces differ\nfast  %q\ncodec %q", c.enc, got, want)
	}
	if got, want := c.fast.count(s), slowCount(t, c, s); got != want {
		t.Fatalf("%s: fast count %d, codec %d\n%q", c.enc, got, want, s)
	}
}

func TestSplitMatchesCodec(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, enc := range chunked {
		c := counter(t, enc)
		for _, s := range adversarial {
			checkFast(t, c, s)
		}
		for range 3000 {
			checkFast(t, c, randomText(rng, 40))
		}
	}
}

// TestSplitMatchesCodecShared counts every real skill's envelope (its whole
// SKILL.md) and the real catalogs both ways. Under -short or the race
// detector it takes every 20th envelope.
func TestSplitMatchesCodecShared(t *testing.T) {
	every := 1
	if testing.Short() || raceEnabled {
		every = 20
	}
	for _, dir := range []string{"skills", "skills-extra"} {
		list := sharedSkills(t, dir)
		for _, enc := range chunked {
			c := counter(t, enc)
			for _, s := range renderings(list, every) {
				checkFast(t, c, s)
			}
		}
	}
}

// TestSplitCodecQuirks pins where tiktoken-go departs from the patterns'
// textbook semantics, which the fast path must copy: DEL adds no token, and
// `\s*[\r\n]+` stops at the first newline of a whitespace run.
func TestSplitCodecQuirks(t *testing.T) {
	c := counter(t, O200kBase)
	for _, tt := range []struct {
		s    string
		want int
	}{
		{"\x7f", 0},
		{"a\x7f\x7fb", 2},
		{" \n \n x", 3}, // " \n", " \n", " x"
	} {
		if got := c.Count(tt.s); got != tt.want {
			t.Errorf("Count(%q) = %d, want %d", tt.s, got, tt.want)
		}
		checkFast(t, c, tt.s)
	}
}

// FuzzCountFast searches for a text the fast path counts differently from
// tiktoken-go.
func FuzzCountFast(f *testing.F) {
	for _, s := range adversarial {
		f.Add(s)
	}
	f.Add("don't we'LL they'RE it'ſ ǅungla Ǆ\u0301x 12345 \x7f a\u0300\u0301b")
	f.Fuzz(func(t *testing.T, s string) {
		for _, enc := range chunked {
			checkFast(t, counter(t, enc), s)
		}
	})
}

// BenchmarkCountFast compares the fast path with the codec on the whole
// SKILL.md of every 20th real skill (skipped without the shared data).
func BenchmarkCountFast(b *testing.B) {
	list := sharedSkills(b, "skills")
	var text strings.Builder
	for i := 0; i < len(list); i += 20 {
		text.WriteString(skills.Envelope(list[i]))
	}
	c := counter(b, O200kBase)
	for _, bc := range []struct {
		name  string
		count func(string) int
	}{
		{"codec", func(s string) int { return slowCount(b, c, s) }},
		{"fast", c.fast.count},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(text.Len()))
			b.ReportAllocs()
			for b.Loop() {
				bc.count(text.String())
			}
		})
	}
}

// TestSplitRunes puts runes in contexts that exercise every class the
// patterns test (prefix, upper and lower letters, marks, numbers,
// contractions, whitespace before a visible rune) and compares counts. It
// takes every rune below U+0300 and a sample of the rest;
// SKILLROUTER_ALL_RUNES=1 takes all 1,112,064 (about three minutes, done
// when split.go was written and whenever Go's Unicode tables change).
func TestSplitRunes(t *testing.T) {
	step := rune(97)
	if testing.Short() || raceEnabled {
		step = 997
	}
	if os.Getenv("SKILLROUTER_ALL_RUNES") != "" {
		step = 1
	}
	contexts := []string{"%s", "a%s", "%sa", " %s", "%s x", "'%s", "A%sb", "%s%s%s1", "\n%s", "%s\n", "a'%s",
		"%s's", "ǅ%sǅ", " %s ", "  %s", "%s  y", "1%s2", ".%s."}
	for _, enc := range chunked {
		c := counter(t, enc)
		for r := rune(0); r <= utf8.MaxRune; r++ {
			if r >= 0x300 && r%step != 0 || !utf8.ValidRune(r) {
				continue
			}
			for _, f := range contexts {
				checkFast(t, c, strings.ReplaceAll(f, "%s", string(r)))
			}
		}
	}
}

// BenchmarkWhitespaceLines: lines holding only whitespace, one long run for
// the memo. Measuring the whole run before each newline made it quadratic
// (2 s for 30 KB of NBSP lines).
func BenchmarkWhitespaceLines(b *testing.B) {
	c := counter(b, O200kBase)
	text := strings.Repeat("\u00a0\n", 10000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		c.fast.count(text)
	}
}

// TestVocabulary: the table holds every token of the codec's vocabulary
// under its id, partial UTF-8 included, and nothing else.
func TestVocabulary(t *testing.T) {
	for _, tt := range []struct {
		enc    Encoding
		tokens int
	}{{O200kBase, 199998}, {Cl100kBase, 100256}} {
		c := counter(t, tt.enc)
		n, partial := 0, 0
		for id := range len(c.fast.offs) - 1 {
			tok := c.fast.arena[c.fast.offs[id]:c.fast.offs[id+1]]
			if tok == "" {
				continue
			}
			n++
			if !utf8.ValidString(tok) {
				partial++
			}
			if got := c.fast.rank(tok); got != uint32(id) {
				t.Fatalf("%s: rank(%q) = %d, want %d", tt.enc, tok, got, id)
			}
		}
		if n != tt.tokens || partial == 0 {
			t.Fatalf("%s: %d tokens (%d partial characters), want %d", tt.enc, n, partial, tt.tokens)
		}
		for _, s := range []string{"not a token at all, surely", "\x00\x01\x02\x03\x04"} {
			if c.fast.rank(s) != noRank {
				t.Errorf("%s: %q has a rank", tt.enc, s)
			}
		}
	}
}
