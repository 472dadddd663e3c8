package router

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// TestLibraryHash: the hash is the same on one core as on several, and
// changes with any field of any skill (the first and last of each core's
// share included), with the order, and with a field's text moved to the
// next field.
func TestLibraryHash(t *testing.T) {
	const n = 4*libraryHashMinSkills + 3
	library := func() []*skills.Skill {
		list := make([]*skills.Skill, n)
		for i := range list {
			s := &skills.Skill{ID: fmt.Sprintf("s%04d", i), Name: fmt.Sprintf("n%d", i), Description: "d"}
			list[i] = s.SetText("", fmt.Sprintf("body %d", i))
		}
		return list
	}
	hash := func(procs int, list []*skills.Skill) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return libraryHash(list)
	}
	want := hash(1, library())
	for _, procs := range []int{2, 3, 5} {
		if got := hash(procs, library()); got != want {
			t.Fatalf("%d cores: %s, one core %s", procs, got, want)
		}
	}
	seen := map[string]string{want: "the library"}
	check := func(what string, list []*skills.Skill) {
		t.Helper()
		h := hash(3, list)
		if prev, dup := seen[h]; dup {
			t.Errorf("%s hashes as %s", what, prev)
		}
		seen[h] = what
	}
	for _, i := range []int{0, n/3 - 1, n / 3, n/2 + 1, n - 1} {
		list := library()
		list[i].ID += "x"
		check(fmt.Sprintf("skill %d's id changed", i), list)
		list = library()
		list[i].Description += "x"
		check(fmt.Sprintf("skill %d's description changed", i), list)
		list = library()
		list[i].SetText("", list[i].Body()+"x")
		check(fmt.Sprintf("skill %d's body changed", i), list)
	}
	list := library()
	list[5], list[6] = list[6], list[5]
	check("two skills swapped", list)
	list = library()
	list[7].Name, list[7].Description = list[7].Name+"d", ""
	check("a description's text moved into the name", list)
	check("one skill fewer", library()[:n-1])
}
