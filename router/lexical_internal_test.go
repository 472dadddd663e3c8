package router

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/index"
	"github.com/skillrouter/skillrouter/skills"
)

// TestAnalyseLexical checks the one-pass analysis against its definitions:
// each signature equals signatureOf's, each DocStats index.Analyze's, for
// bodies cut at every kind of place around the signature's end.
func TestAnalyseLexical(t *testing.T) {
	long := strings.Repeat("Deploy the chart with Helm, then roll back. ", 200) // ~9,000 bytes
	var list []*skills.Skill
	add := func(name, body string) {
		list = append(list, (&skills.Skill{ID: fmt.Sprintf("s%d", len(list)), Name: name, Description: "Review pull requests for risky changes."}).SetText("", body))
	}
	add("empty-body", "")
	add("short_body", "Run `go test ./...` and read the failures.")
	add("long", long)
	add("no-blanks", strings.Repeat("x", 5000))
	for shift := -3; shift <= 3; shift++ {
		pad := strings.Repeat("a", dupBodyChars+shift-10)
		add("word-at-end", pad+" camelCaseWords don't stop")
		add("apostrophe-at-end", pad+" rock' n roll")
		add("tab-newline", pad+"\tlast\r\nwords "+long)
		add("multibyte-at-end", pad+" Überprüfung naïve café "+long)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "shared", "bench", "skills")); err == nil {
		list = append(list, benchLibrary(t).Skills()...) // the 407 real skills
	}
	stats := make([]*index.DocStats, len(list))
	sigs := make([]termSignature, len(list))
	analyseLexical(list, stats, sigs)
	for i, s := range list {
		if want := signatureOf(s); !slices.Equal(sigs[i], want) {
			t.Errorf("%s (%s): signature of %d hashes, want %d", s.ID, s.Name, len(sigs[i]), len(want))
		}
		want := index.Analyze(index.Doc{ID: s.ID, Fields: [index.NumFields]string{displayName(s), s.Description, s.Body()}}, index.BM25Params{})
		if got, w := dump(stats[i]), dump(want); got != w {
			t.Errorf("%s (%s): stats differ:\n got %.300s\nwant %.300s", s.ID, s.Name, got, w)
		}
	}
	// Kept entries stay as they are.
	keep := termSignature{1, 2, 3}
	stats2 := []*index.DocStats{nil}
	sigs2 := []termSignature{keep}
	analyseLexical(list[2:3], stats2, sigs2)
	if !slices.Equal(sigs2[0], keep) || stats2[0] == nil {
		t.Errorf("a known signature was replaced, or the missing stats not made")
	}
}

func dump(d *index.DocStats) string {
	var b strings.Builder
	fmt.Fprint(&b, d.Len, d.NumTerms())
	d.Each(func(term []byte, tf [index.NumFields]uint32) { fmt.Fprintf(&b, " %s%v", term, tf) })
	return b.String()
}

// The lexical file reads back whatever the alignment of the buffer it was
// read into (its signatures and postings are slices of that buffer, moved
// back into alignment when they have to be), and every truncation of it is
// an error, not a panic.
func TestReadLexicalInPlace(t *testing.T) {
	bm, sigs, file := lexicalFixture(t)
	docs := make([]struct{}, bm.Len())
	terms := index.QueryTerms(nil, "extract the query pages", 1)
	want := make([]float64, bm.Len())
	bm.ScoreWeighted(terms, hybridFieldWeights, want)
	for off := range 8 {
		buf := make([]byte, file.Len()+8)
		data := buf[off : off+file.Len()]
		copy(data, file.Bytes())
		bm2, sigs2, err := readLexical(data, len(docs))
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		if !slices.EqualFunc(sigs2, sigs, slices.Equal) {
			t.Fatalf("offset %d: signatures %v, want %v", off, sigs2, sigs)
		}
		got := make([]float64, bm2.Len())
		bm2.ScoreWeighted(terms, hybridFieldWeights, got)
		if !slices.Equal(got, want) {
			t.Fatalf("offset %d: scores %v, want %v", off, got, want)
		}
	}
	for n := range file.Len() {
		if _, _, err := readLexical(bytes.Clone(file.Bytes()[:n]), len(docs)); err == nil {
			t.Fatalf("%d of %d bytes read without error", n, file.Len())
		}
	}
	if _, _, err := readLexical(bytes.Clone(file.Bytes()), len(docs)+1); err == nil {
		t.Fatal("a file of 3 skills read for 4")
	}
}

// lexicalFixture is a lexical file of three skills, with the index and
// signatures it holds.
func lexicalFixture(t testing.TB) (*index.BM25, []termSignature, *bytes.Buffer) {
	t.Helper()
	docs := []index.Doc{
		{ID: "a", Fields: [index.NumFields]string{"pdf", "extract text from a pdf", "read the pages and their tables"}},
		{ID: "b", Fields: [index.NumFields]string{"sql", "slow query plans", "explain analyze the query and its indexes"}},
		{ID: "c", Fields: [index.NumFields]string{"notes", "release notes", "commits since the last tag"}},
	}
	bm := index.NewBM25(docs, index.BM25Params{})
	sigs := []termSignature{hashTerms([]string{"pdf", "page"}), hashTerms([]string{"sql", "query", "index"}), hashTerms([]string{"note"})}
	var file bytes.Buffer
	if err := writeLexical(&file, bm, sigs); err != nil {
		t.Fatal(err)
	}
	return bm, sigs, &file
}

// FuzzReadLexical: any bytes either fail to decode or decode into an index
// and signatures that can be used without panicking.
func FuzzReadLexical(f *testing.F) {
	_, _, file := lexicalFixture(f)
	f.Add(file.Bytes(), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		bm, sigs, err := readLexical(bytes.Clone(data), int(n)) // it takes its input over
		if err != nil {
			return
		}
		s := make([]float64, bm.Len())
		bm.ScoreWeighted(index.QueryTerms(nil, "pdf query notes", 1), hybridFieldWeights, s)
		for i := range sigs {
			overlap(sigs[i], sigs[len(sigs)-1-i])
		}
	})
}
