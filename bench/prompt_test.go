package bench

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
	"github.com/skillrouter/skillrouter/wire"
)

// TestAccountantCounts checks the wiring: one count per encoding, in the
// order given, each equal to counting the text whole with that encoding.
// Exactness of the memoised counts is tested in package tokens.
func TestAccountantCounts(t *testing.T) {
	encs := []tokens.Encoding{tokens.Cl100kBase, tokens.O200kBase}
	acc, err := NewAccountant(encs...)
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := fixtureLibrary(t)
	list := snap.Skills()
	texts := []string{"", "a\n  \nb", "x.\n//y", skills.RenderCatalog(list, skills.CatalogOptions{}), string(skills.LoadSkillTool(list))}
	for _, s := range list {
		texts = append(texts, skills.Envelope(s))
	}
	for _, s := range texts {
		got := acc.Count(s)
		for i, e := range encs {
			c, err := tokens.Get(e)
			if err != nil {
				t.Fatal(err)
			}
			if want := c.Count(s); got[i] != want {
				t.Errorf("%s: Count %d, whole text %d\n%q", e, got[i], want, s)
			}
		}
	}
	// The counts of all skills add up per skill.
	stuffed := acc.StuffAll(snap)
	for i, e := range encs {
		c, _ := tokens.Get(e)
		want := 0
		for _, s := range list {
			want += c.Count(s.Content())
		}
		if stuffed[i] != want {
			t.Errorf("%s: StuffAll %d, want %d", e, stuffed[i], want)
		}
	}
}

func TestAccountantRouter(t *testing.T) {
	acc, err := NewAccountant()
	if err != nil {
		t.Fatal(err)
	}
	p := &router.PromptParts{
		Catalog:          "<available_skills>\n</available_skills>",
		Envelopes:        []router.Injection{{ID: "a", Text: "one\n"}, {ID: "b", Text: "two"}},
		Tools:            []wire.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}},
		CatalogNewSystem: true,
	}
	c := tokens.Default()
	got := acc.Router(p)
	want := RouterTokens{Catalog: Counts{c.Count(p.Catalog)}, AutoLoaded: Counts{c.Count("one\n") + c.Count("two")},
		Tools: Counts{c.Count(string(p.Tools[0].FunctionJSON()))}, Overhead: 3 * router.MessageOverheadTokens}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Router = %+v, want %+v", got, want)
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
}
