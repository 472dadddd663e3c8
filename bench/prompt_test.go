package bench

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
)

// wholeCounts counts s in one piece with every encoding.
func wholeCounts(t *testing.T, s string) [2]int {
	t.Helper()
	var out [2]int
	for i, e := range []tokens.Encoding{tokens.O200kBase, tokens.Cl100kBase} {
		c, err := tokens.Get(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = c.Count(s)
	}
	return out
}

func checkExact(t *testing.T, acc *Accountant, name, s string) {
	t.Helper()
	got := acc.Count(s)
	want := wholeCounts(t, s)
	if got[0] != want[0] || got[1] != want[1] {
		t.Errorf("%s: line-wise count %v, whole count %v\n%q", name, got, want, s)
	}
}

// The line-wise, memoised count must equal counting the whole text, for
// both encodings, on the texts the benchmark counts and on adversarial text
// (blank lines of spaces, CRLF, lines starting with '/', unicode spaces).
func TestAccountantExact(t *testing.T) {
	acc, err := NewAccountant(tokens.O200kBase, tokens.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"", "a", "\n", "\n\n", "a\n", "a\nb", "a \n b", "a\n  \nb", "a.\n/b", "x\r\ny", "x\n\r\ny",
		"  <skill>\n    <id>a</id>\n  </skill>\n", "tab\n\tline", "nbsp\n\u00a0x", "end.\n\n\n  \n\t\nnext",
		"code:\n```go\nfunc main() {}\n```\n", "émoji 🎉\n日本語\nmixed",
	} {
		checkExact(t, acc, "literal", s)
	}

	// Random texts from pieces that stress the pre-tokenizers.
	pieces := []string{"\n", "\n\n", "\r\n", " ", "  ", "\t", "/", "//", ".", "...", "<id>", "</skill>", "word", "Word",
		"'s", "123", "4567", "é", "日本", "\u00a0", "\u2003", "-", "*", "# ", "```", "x/y", "  - item", "\n/path"}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		checkExact(t, acc, "random "+string(rune('a'+n%26)), b.String())
	}

	// Real renderings: a catalog, envelopes and the load_skill tool of the fixture library.
	snap, _ := fixtureLibrary(t)
	list := snap.Skills()
	checkExact(t, acc, "catalog", skills.RenderCatalog(list, skills.CatalogOptions{}))
	checkExact(t, acc, "tool", string(skills.LoadSkillTool(list)))
	for _, s := range list {
		checkExact(t, acc, "envelope "+s.ID, skills.Envelope(s))
	}
	// Counting again (all memo hits) gives the same.
	checkExact(t, acc, "catalog again", skills.RenderCatalog(list, skills.CatalogOptions{}))
}

// Every real SKILL.md and the real catalog, when the shared data is present.
func TestAccountantExactShared(t *testing.T) {
	if testing.Short() {
		t.Skip("counts 11 MB twice")
	}
	dir := filepath.Join(sharedBench(t), "skills")
	snap := skills.Load(t.Context(), []string{dir}, skills.Options{})
	acc, err := NewAccountant(tokens.O200kBase, tokens.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	list := snap.Skills()
	if len(list) < 400 {
		t.Fatalf("%d skills", len(list))
	}
	checkExact(t, acc, "catalog", skills.RenderCatalog(list, skills.CatalogOptions{}))
	var all strings.Builder
	for _, s := range list {
		all.WriteString(s.Content)
		all.WriteString("\n")
	}
	checkExact(t, acc, "all SKILL.md", all.String())
	// Synthetic variants are what the scale benchmark counts.
	ordered := ScaleOrder(list, nil, 1)
	for _, f := range ScaleLibrary(ordered, len(list)+20, 1)[len(list):] {
		checkExact(t, acc, f.ID, f.Content)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

func TestAccountantBasics(t *testing.T) {
	if _, err := NewAccountant(tokens.O200kBase, tokens.O200kBase); err == nil {
		t.Error("repeated encoding accepted")
	}
	if _, err := NewAccountant("p99_base"); err == nil {
		t.Error("unknown encoding accepted")
	}
	acc, err := NewAccountant()
	if err != nil || len(acc.Encodings()) != 1 || acc.Encodings()[0] != tokens.O200kBase {
		t.Fatalf("default accountant %v %v", acc, err)
	}
	if got := acc.Count(""); len(got) != 1 || got[0] != 0 {
		t.Errorf("empty text: %v", got)
	}
	rt := RouterTokens{Catalog: Counts{10}, AutoLoaded: Counts{5}, Tools: Counts{3}, Overhead: 8}
	if got := rt.Total(); got[0] != 26 {
		t.Errorf("total %v", got)
	}
	if safeCut("a\n  \nb") != len("a\n  \n") || safeCut("a\nb") != 2 || safeCut("abc") != 3 || safeCut("a\n/b") != 4 {
		t.Error("safeCut")
	}
}

// FuzzAccountantExact searches for a text whose line-wise count differs
// from its whole count.
func FuzzAccountantExact(f *testing.F) {
	f.Add("a\n  \nb")
	f.Add("  <skill>\n    <id>a</id>\n  </skill>\n")
	f.Add("x.\n/y\r\n\tz \u00a0\n")
	acc, err := NewAccountant(tokens.O200kBase, tokens.Cl100kBase)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkExact(t, acc, "fuzz", s)
	})
}
