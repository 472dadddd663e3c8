package bench

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

func realSkills(n int) []*skills.Skill {
	out := make([]*skills.Skill, n)
	for i := range out {
		name := fmt.Sprintf("skill-%02d", i)
		out[i] = (&skills.Skill{
			ID: "src/" + name, Name: name,
			Description: "Use this tool to analyze data files and create simple reports.",
		}).SetText("---\nname: "+name+"\n---\nbody\n", "# Skill\n\nUse the CLI to run checks on Files. USE it when users need help.\n")
	}
	return out
}

func TestReword(t *testing.T) {
	swaps := map[string]string{"use": "apply", "files": "documents", "user": "customer"}
	got := reword("Use the files; USE them. username and user, Files.", swaps)
	want := "Apply the documents; APPLY them. username and customer, Documents."
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if reword("same", nil) != "same" {
		t.Fatal("no swaps changed text")
	}
}

func TestVariant(t *testing.T) {
	base := realSkills(1)[0]
	v1 := Variant(base, 1, 42)
	v1again := Variant(base, 1, 42)
	v2 := Variant(base, 2, 42)
	other := Variant(base, 1, 43)
	if v1 != v1again {
		t.Fatal("variant not deterministic")
	}
	if v1.ID != "synthetic/00001-skill-00" || v2.ID != "synthetic/00002-skill-00" {
		t.Fatalf("ids %q %q", v1.ID, v2.ID)
	}
	if v1.Content == v2.Content || v1.Content == other.Content {
		t.Fatal("variants are exact duplicates")
	}
	if !strings.Contains(v1.Content, "name: 00001-skill-00\n") || !strings.Contains(v1.Content, "Adapted for ") {
		t.Fatalf("content:\n%s", v1.Content)
	}
	// A skill with a name that breaks the rules still yields a valid name.
	odd := (&skills.Skill{ID: "x/Claude_Tool", Name: "Claude_Tool", Description: "d"}).SetText("", "b")
	if v := Variant(odd, 3, 1); v.ID != "synthetic/00003-tool" {
		t.Fatalf("odd id %q", v.ID)
	}
}

func TestScaleOrderAndLibrary(t *testing.T) {
	real := realSkills(6)
	ordered := ScaleOrder(real, []string{"src/skill-04", "missing", "src/skill-04", "src/skill-02"}, 9)
	if ordered[0].ID != "src/skill-04" || ordered[1].ID != "src/skill-02" || len(ordered) != 6 {
		t.Fatalf("expected skills not first: %v", skillIDs(ordered))
	}
	again := ScaleOrder(real, []string{"src/skill-04", "src/skill-02"}, 9)
	if fmt.Sprint(skillIDs(ordered)) != fmt.Sprint(skillIDs(again)) {
		t.Fatal("order not deterministic")
	}
	// The input order does not matter, only the seed.
	rev := make([]*skills.Skill, len(real))
	for i, s := range real {
		rev[len(real)-1-i] = s
	}
	if fmt.Sprint(skillIDs(ScaleOrder(rev, []string{"src/skill-04", "src/skill-02"}, 9))) != fmt.Sprint(skillIDs(ordered)) {
		t.Fatal("order depends on input order")
	}

	small := ScaleLibrary(ordered, 3, 9)
	if len(small) != 3 || small[0].ID != "src/skill-04" || small[0].Content != real[4].Content() {
		t.Fatalf("small library: %v", small)
	}
	big := ScaleLibrary(ordered, 20, 9)
	if len(big) != 20 {
		t.Fatalf("size %d", len(big))
	}
	seen := map[string]bool{}
	for i, f := range big {
		if seen[f.ID] {
			t.Fatalf("duplicate id %s", f.ID)
		}
		seen[f.ID] = true
		if err := validID(f.ID); err != nil {
			t.Fatal(err)
		}
		if synth := strings.HasPrefix(f.ID, "synthetic/"); synth != (i >= 6) {
			t.Fatalf("file %d (%s): real skills must come first", i, f.ID)
		}
	}
	// Variant 7 derives from ordered[0] again (round robin).
	if !strings.HasSuffix(big[12].ID, "-"+ordered[0].Name) {
		t.Fatalf("variant 7 = %s, want a variant of %s", big[12].ID, ordered[0].ID)
	}
	if ScaleLibrary(nil, 5, 1) != nil || ScaleLibrary(ordered, 0, 1) != nil {
		t.Fatal("empty inputs")
	}
}

func skillIDs(ss []*skills.Skill) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// Temporary library folders have fixed-width names, so the folder line of
// an auto-loaded envelope costs the same tokens on every run.
func TestWriteTempFixedWidth(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		dir, err := WriteTemp(nil)
		if err != nil {
			t.Fatal(err)
		}
		seen[len(dir)] = true
		os.RemoveAll(dir)
	}
	if len(seen) != 1 {
		t.Errorf("temporary folder names of %d different lengths", len(seen))
	}
}
