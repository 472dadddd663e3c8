package tokens

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// chunked are the encodings CountMemo counts chunk by chunk.
var chunked = []Encoding{O200kBase, Cl100kBase}

func counter(t testing.TB, enc Encoding) *Counter {
	t.Helper()
	c, err := Get(enc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkExact fails unless CountMemo (counting the chunks it has not seen,
// then all from the memo) equals counting s whole.
func checkExact(t testing.TB, c *Counter, name, s string) {
	t.Helper()
	want := c.Count(s)
	for range 2 {
		if got := c.CountMemo(s); got != want {
			t.Fatalf("%s %s: CountMemo %d, Count %d\n%q", c.enc, name, got, want, s)
		}
	}
}

// adversarial texts: blank lines with and without spaces, CRLF and bare CR,
// lines starting with '/' after punctuation, unicode spaces and letters.
var adversarial = []string{
	"", "a", "\n", "\n\n", "a\n", "a\nb", "a \n b", "a\n  \nb", "a\n \rb", "a\n\r\nb", "a.\n/b", "x>\n/\n/y",
	"x\r\ny", "x\n\r\ny", "tool \n   to", "tab\n\tline", "nbsp\n\u00a0x", "é\n  ü\n", "end.\n\n\n  \n\t\nnext",
	"  <skill>\n    <id>a</id>\n  </skill>\n", "code:\n```go\nfunc main() {}\n```\n", "émoji 🎉\n日本語\nmixed",
	"a\n  \n\nb", "x.\n//y", "x.\r\n/y", "path:\n/usr/bin\n//c", "x;\n\n/y", "\u2028\n\u3000x\n", "q\n's\n'll", "\xff\n\xfe/\n",
}

// randomText joins pieces that stress the pre-tokenizers.
func randomText(rng *rand.Rand, max int) string {
	pieces := []string{"\n", "\n", "\n\n", "\r\n", "\r", " ", "  ", "\t", "/", "//", ".", "...", "<id>", "</skill>",
		"word", "Word", "'s", "123", "4567", "é", "日本", "\u00a0", "\u2003", "\u0085", "-", "*", "# ", "```", "x/y",
		"  - item", "\n/path", ";\n", "🎉"}
	var b strings.Builder
	for range rng.IntN(max) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// fixtureSkills are in-memory skills whose texts hold the same hazards.
func fixtureSkills() []*skills.Skill {
	bodies := []string{
		"# PDF tools\n\nExtract text:\n\n```bash\npdftotext in.pdf -\n```\n\n  \n/see also\n",
		"Line one.\r\nLine two.\r\n\r\n  - item\r\n/root\r\n",
		"Überblick\n\u00a0\n日本語のテキスト。\n\t\tindent\n",
	}
	var out []*skills.Skill
	for i, body := range bodies {
		id := fmt.Sprintf("team/skill-%d", i)
		out = append(out, (&skills.Skill{ID: id, Name: fmt.Sprintf("skill-%d", i), Path: id + "/SKILL.md",
			Description: fmt.Sprintf("Does thing %d.\n/ Use when the user asks about <x> & y; not for z.", i)}).SetText("", body))
	}
	return out
}

// renderings returns catalogs in every format and option mix, the
// load_skill tool and the envelope of every envelopeEvery-th skill of list
// (0: none).
func renderings(list []*skills.Skill, envelopeEvery int) map[string]string {
	out := map[string]string{"tool": string(skills.LoadSkillTool(list))}
	for _, f := range skills.Formats {
		out["catalog "+string(f)] = skills.RenderCatalog(list, skills.CatalogOptions{Format: f})
		out["catalog "+string(f)+" short"] = skills.RenderCatalog(list, skills.CatalogOptions{Format: f, MaxDescription: 40,
			Priority: []string{list[0].ID}, Footer: "3 more skills: search with search_skills."})
	}
	for i := 0; envelopeEvery > 0 && i < len(list); i += envelopeEvery {
		out["envelope "+list[i].ID] = skills.Envelope(list[i])
	}
	return out
}

// TestCountMemoExact checks chunked, memoised counting against counting the
// whole text, on adversarial, random and rendered texts.
func TestCountMemoExact(t *testing.T) {
	for _, enc := range chunked {
		c := counter(t, enc)
		for _, s := range adversarial {
			checkExact(t, c, "literal", s)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 2000 {
			checkExact(t, c, "random", randomText(rng, 60))
		}
		for name, s := range renderings(fixtureSkills(), 1) {
			checkExact(t, c, name, s)
		}
	}
}

// sharedSkills loads a directory of ../shared/bench, or skips.
func sharedSkills(t testing.TB, name string) []*skills.Skill {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "bench", name)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared bench data not found at %s", dir)
	}
	list := skills.Load(context.Background(), []string{dir}, skills.Options{}).Skills()
	if len(list) < 400 {
		t.Fatalf("%s: %d skills loaded", dir, len(list))
	}
	return list
}

// TestCountMemoExactShared checks the real catalogs and every real skill's
// envelope (its whole SKILL.md: 11 MB). Under -short or the race detector
// (which slows counting tenfold) it takes every 20th envelope.
func TestCountMemoExactShared(t *testing.T) {
	list := sharedSkills(t, "skills")
	extra := sharedSkills(t, "skills-extra")
	every := 1
	if testing.Short() || raceEnabled {
		every = 20
	}
	for _, enc := range chunked {
		c := counter(t, enc)
		for name, s := range renderings(list, every) {
			checkExact(t, c, name, s)
		}
		for name, s := range renderings(extra, 0) {
			checkExact(t, c, "extra "+name, s)
		}
	}
}

// TestChunkEnd pins where texts are cut, and where they must not be.
func TestChunkEnd(t *testing.T) {
	tests := []struct{ in, first string }{
		{"", ""},
		{"abc", "abc"},
		{"a\n", "a\n"},
		{"a\nb", "a\n"},
		{"a\n  b\nc", "a\n"},
		{"a\n\nb", "a\n\n"},       // "\n\n" is one piece
		{"a\r\nb", "a\r\n"},       // '\r' then '\n' is one piece
		{"a\n\r\nb", "a\n\r\n"},   // so is "\n\r\n"
		{"a.\n/b\nc", "a.\n/b\n"}, // o200k_base punctuation takes a '/' after newlines
		{"a\n  \nb", "a\n  \n"},   // a line of spaces: whitespace pieces can span it
		{"a\n \rb\nc", "a\n \rb\n"},
		{"a\n日本\nb", "a\n日本\n"}, // no visible ASCII: not cut there (conservative)
		{"a\n\t<x>\n", "a\n"},
	}
	for _, tt := range tests {
		if got := tt.in[:chunkEnd(tt.in)]; got != tt.first {
			t.Errorf("chunkEnd(%q): first chunk %q, want %q", tt.in, got, tt.first)
		}
	}
}

// TestCutRulesThatFail shows the texts above can catch a wrong cut rule: each
// looser rule miscounts one of them, and chunkEnd does not cut there.
func TestCutRulesThatFail(t *testing.T) {
	everyNewline := func(s string) int {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			return i + 1
		}
		return len(s)
	}
	slashAllowed := func(s string) int { // the rule without the '/' exception
		for off := 0; ; {
			i := strings.IndexByte(s[off:], '\n')
			if i < 0 {
				return len(s)
			}
			j := off + i + 1
			if j == len(s) || visibleFirst(s[j:]) {
				return j
			}
			off = j
		}
	}
	tests := []struct {
		enc  Encoding
		text string
		cut  func(string) int
	}{
		{O200kBase, "a\n\nb", everyNewline},
		{Cl100kBase, "a\n\nb", everyNewline},
		{O200kBase, "x\n\r\ny", everyNewline},
		{O200kBase, "x.\n//y", slashAllowed},
		{O200kBase, "x.\r\n/y", slashAllowed},
	}
	for _, tt := range tests {
		c := counter(t, tt.enc)
		if sumChunks(tt.text, tt.cut, c.Count) == c.Count(tt.text) {
			t.Errorf("%s %q: the loose rule happens to count right; pick a text it gets wrong", tt.enc, tt.text)
		}
		checkExact(t, c, "counterexample", tt.text)
	}
}

// TestCountMemoOtherEncodings: r50k/p50k split patterns let whitespace run
// across the cut points, so CountMemo must count those texts whole.
func TestCountMemoOtherEncodings(t *testing.T) {
	for _, enc := range []Encoding{"r50k_base", "p50k_base"} {
		c := counter(t, enc)
		if c.chunked {
			t.Fatalf("%s counted in chunks", enc)
		}
		const text = "a\n  \n\nb"
		if sumChunks(text, chunkEnd, c.Count) == c.Count(text) {
			t.Errorf("%s: chunking %q happens to be exact; the test no longer shows why %s is not chunked", enc, text, enc)
		}
		checkExact(t, c, "literal", text)
		for _, s := range adversarial {
			checkExact(t, c, "literal", s)
		}
	}
}

// TestCountMemoBounded: the memo is cleared when full and counts stay right.
func TestCountMemoBounded(t *testing.T) {
	base := counter(t, O200kBase)
	c := &Counter{enc: base.enc, fast: base.fast, chunked: true, memo: newMemo(8)}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		s := randomText(rng, 30)
		checkExact(t, c, "random", s)
		if n := len(c.memo.m); n > 8 {
			t.Fatalf("memo holds %d entries, bound 8", n)
		}
	}
}

// TestCountMemoRemembers: lines shared by texts are counted once.
func TestCountMemoRemembers(t *testing.T) {
	base := counter(t, O200kBase)
	c := &Counter{enc: base.enc, fast: base.fast, chunked: true, memo: newMemo(memoMax)}
	checkExact(t, c, "three lines", "alpha\nbeta\ngamma")
	if n := len(c.memo.m); n != 3 {
		t.Fatalf("memo holds %d chunks, want 3", n)
	}
	checkExact(t, c, "two known lines", "beta\ngamma")
	if n := len(c.memo.m); n != 3 {
		t.Fatalf("known lines were counted again: memo holds %d chunks", n)
	}
}

// TestCountMemoConcurrent counts the same texts from several goroutines
// (run with -race).
func TestCountMemoConcurrent(t *testing.T) {
	base := counter(t, O200kBase)
	c := &Counter{enc: base.enc, fast: base.fast, chunked: true, memo: newMemo(16)}
	texts := renderings(fixtureSkills(), 1)
	want := map[string]int{}
	for name, s := range texts {
		want[name] = c.Count(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(texts))
	for range 8 {
		wg.Go(func() {
			for name, s := range texts {
				if got := c.CountMemo(s); got != want[name] {
					errs <- fmt.Sprintf("%s: %d, want %d", name, got, want[name])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestDefaultIsO200k(t *testing.T) {
	if c := counter(t, O200kBase); Default() != c || !c.chunked {
		t.Fatal("Default should be the shared, chunked o200k_base counter")
	}
}

// FuzzCountMemo searches for a text whose chunked count differs from its
// whole count.
func FuzzCountMemo(f *testing.F) {
	for _, s := range adversarial {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, enc := range chunked {
			checkExact(t, counter(t, enc), "fuzz", s)
		}
	})
}

// BenchmarkCountMemo counts a 400-skill catalog whose lines are all in the
// memo: the per-request cost of counting a catalog.
func BenchmarkCountMemo(b *testing.B) {
	c := counter(b, O200kBase)
	rng := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("extract convert pdf files charts data when user asks about images tables build deploy test review code")
	var list []*skills.Skill
	for i := range 400 {
		var d strings.Builder
		for range 25 {
			d.WriteString(words[rng.IntN(len(words))] + " ")
		}
		list = append(list, &skills.Skill{ID: fmt.Sprintf("team/skill-%d", i), Description: d.String()})
	}
	text := skills.RenderCatalog(list, skills.CatalogOptions{})
	if c.CountMemo(text) != c.Count(text) {
		b.Fatal("inexact")
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		c.CountMemo(text)
	}
}

func BenchmarkCount(b *testing.B) {
	c := counter(b, O200kBase)
	text := renderings(fixtureSkills(), 0)["catalog "+string(skills.Formats[0])]
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		c.Count(text)
	}
}
