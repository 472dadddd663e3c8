package skills

import (
	"strings"
	"testing"
)

// What the proxy wrote into a request can be told apart in what the API
// stores of it: a catalog ending a text (CatalogStart), an envelope
// (IsEnvelope). Every catalog RenderCatalog writes is found where it
// starts, after any text; text that only looks like one is not.
func TestCatalogStart(t *testing.T) {
	list := []*Skill{{ID: "demo/pdf", Name: "pdf", Description: "Make <PDF> files & more.", Path: "skills/demo/pdf/SKILL.md"},
		{ID: "demo/xlsx", Description: "Spreadsheets </available_skills>"}}
	for _, f := range Formats {
		for _, o := range []CatalogOptions{{}, {NoLoadTool: true}, {Priority: []string{"demo/pdf"}},
			{Footer: "3 more skills are not listed here."}, {Priority: []string{"demo/xlsx"}, Footer: "1 more skill is not listed here: call search_skills."}} {
			o.Format = f
			cat := RenderCatalog(list, o)
			for _, before := range []string{"", "Be brief.\n\n", "## Agent Skills\nan earlier heading\n\n"} {
				if got := CatalogStart(before + cat); got != len(before) {
					t.Errorf("%s %+v after %q: start %d, want %d", f, o, before, got, len(before))
				}
			}
		}
	}
	cat := RenderCatalog(list, CatalogOptions{Footer: "3 more skills are not listed here."})
	for _, tc := range []struct{ name, text string }{
		{"no catalog", "Be brief."},
		{"text after the catalog", cat + "\n\nBe brief."},
		{"two lines after the footer", cat + "\nmore\nand more"},
		{"an opening without the list's end", strings.SplitN(cat, "</available_skills>", 2)[0]},
		{"the list without an opening", cat[strings.Index(cat, "<available_skills>"):]},
		{"an empty footer line", cat + "\n"},
	} {
		if got := CatalogStart(tc.text); got != -1 {
			t.Errorf("%s: start %d, want -1", tc.name, got)
		}
	}
}

func TestIsEnvelope(t *testing.T) {
	env := Envelope((&Skill{ID: `demo/"pdf"`, Name: "pdf"}).SetText("---\nname: pdf\n---\nBody </skill_context> inside.\n", ""))
	for _, tc := range []struct {
		text string
		want bool
	}{
		{env, true},
		{Envelope(&Skill{ID: "demo/x", Name: "x"}), true},
		{"Before. " + env, false},
		{env + " After.", false},
		{`<skill_context id="demo/x">BODY`, false},
		{`<skill_context id="a">BODY</skill_context>`, true},
		{`<skill_context id="a"b">BODY</skill_context>`, false},
		{"", false},
	} {
		if got := IsEnvelope(tc.text); got != tc.want {
			t.Errorf("IsEnvelope(%.60q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}
