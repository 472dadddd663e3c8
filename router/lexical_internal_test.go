package router

import (
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
