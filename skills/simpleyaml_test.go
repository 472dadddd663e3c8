package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"gopkg.in/yaml.v3"
)

// simpleYAMLSeeds are frontmatters in the subset, next to it and outside.
var simpleYAMLSeeds = []string{
	"name: pdf\ndescription: Extract text from PDFs. Use when the user mentions PDFs.\n",
	"name: \"c-level-advisor\"\ndescription: \"10 C-level advisory skills: CEO, CTO. For founders.\"\nlicense: MIT\nmetadata:\n  version: 2.0.0\n  author: Alireza Rezvani\n  updated: 2026-03-05\n  skills_count: 28\n  ok: true\n  none: ~\n",
	"name: x\ndescription: 'single: quoted \\ kept'\n",
	"name: x\ndescription: d\nrequires:\n  mcp: [rube]\n",
	"name: x\ndescription: d # a comment\n",
	"name: x\ndescription: d\n  continued on a second line\n",
	"name: x\ndescription: >\n  folded\n",
	"name: x\ndescription: a: b\n",
	"name: x\ndescription:d\n",
	"name: x\n\ndescription: d  \n",
	"name: x\ndescription:   spaced\n",
	"name: x\nmetadata:\nlicense: MIT\n",
	"name: x\nmetadata:\n  a: 1\n   b: 2\n",
	"name: x\nmetadata:\n  a:\n    b: 1\n",
	"name: x\nmetadata:\n    a: 1\n    b: \"two\"\n\n    c: 'three'\nlicense: MIT\n",
	"name: x\ndescription: \"esc \\\" aped\"\n",
	"name: x\ndescription: \"unterminated\n",
	"name: x\ndescription: \"a\" b\n",
	"name: x\ndescription: Ünïcödé — 日本語 «quotes»\n",
	"name: x\ndescription: emoji 😀\n",
	"name: x\ndescription: nel\u0085here\n",
	"name: x\ndescription: ls\u2028here\n",
	"name: x\ndescription: bom\ufeffhere\n",
	"name: x\ndescription: tab\there\n",
	"name: x\ndescription: <<\n",
	"name: x\ndescription: ...\n",
	"name: x\ndescription: -1\n",
	"name: x\ndescription: .inf\n",
	"name: x\ndescription: C# and F#, a:b, x]y}z\n",
	"true: yes\nnull: null\n~: 1\n",
	"name: x\nname: y\n",
	"name: x",
	"name: x\ndescription: d\nmetadata:",
	"name: x\ndescription: d\nmetadata:\n",
	"\n\nname: x\n",
	"name : x\n",
	"- name: x\n",
	"name: &a x\ndescription: *a\n",
	"name: !!str x\n",
	"name: x\r\ndescription: d\r\n",
	"",
	"---\n",
	"{name: x}\n",
}

// FuzzSimpleYAML: whatever parseSimpleYAML accepts, yaml.v3 parses to the
// same node tree, lines, columns, tags and styles included.
func FuzzSimpleYAML(f *testing.F) {
	for _, s := range simpleYAMLSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, fm string) { checkSimpleYAML(t, fm) })
}

// checkSimpleYAML reports whether parseSimpleYAML accepted fm, and an
// error when yaml.v3 refuses what it accepted or reads it otherwise.
func checkSimpleYAML(t *testing.T, fm string) bool {
	t.Helper()
	got, ok := parseSimpleYAML(fm)
	if !ok {
		return false
	}
	var doc yaml.Node
	switch err := yaml.Unmarshal([]byte(fm), &doc); {
	case err != nil:
		t.Errorf("accepted %q, which yaml.v3 refuses: %v", fm, err)
	case len(doc.Content) != 1:
		t.Errorf("accepted %q, which yaml.v3 reads as %d documents", fm, len(doc.Content))
	case !reflect.DeepEqual(got, doc.Content[0]):
		t.Errorf("%q:\nsimple:  %s\nyaml.v3: %s", fm, dumpNode(got), dumpNode(doc.Content[0]))
	}
	return true
}

func dumpNode(n *yaml.Node) string {
	var b strings.Builder
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		c := *n
		c.Content = nil
		fmt.Fprintf(&b, "\n%s%+v (content %v)", strings.Repeat("  ", depth), c, n.Content != nil)
		for _, k := range n.Content {
			walk(k, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

// TestSimpleYAMLAccepts: the shapes most skills' frontmatter has are read
// without yaml.v3 (a fast path that declined them all would pass the fuzz
// target and save nothing), and the seeds outside the subset are declined.
func TestSimpleYAMLAccepts(t *testing.T) {
	for _, tt := range []struct {
		fm   string
		want bool
	}{
		{simpleYAMLSeeds[0], true},
		{simpleYAMLSeeds[1], true},
		{simpleYAMLSeeds[2], true},
		{"name: x\nmetadata:\n    a: 1\n    b: \"two\"\n\n    c: 'three'\nlicense: MIT\n", true},
		{"name: x\ndescription: Ünïcödé — 日本語 «quotes»\n", true},
		{"name: x\ndescription: C# and F#, a:b, x]y}z\n", true},
		{"name: x", true},
		{"name: x\ndescription: d\nrequires:\n  mcp: [rube]\n", false},
		{"name: x\ndescription: d # a comment\n", false},
		{"name: x\ndescription: d\n  continued on a second line\n", false},
		{"name: x\ndescription: >\n  folded\n", false},
		{"name: x\ndescription: \"esc \\\" aped\"\n", false},
		{"name: x\ndescription: emoji 😀\n", true},
		{"name: x\ndescription: d\nmetadata:\n", false},
		{"name: x\ndescription:d\n", false},
	} {
		if _, ok := parseSimpleYAML(tt.fm); ok != tt.want {
			t.Errorf("%q: accepted %v, want %v", tt.fm, ok, tt.want)
		}
	}
}

// TestSimpleYAMLSameAsYAMLv3: each seed, and the frontmatter of every
// skill under testdata, gives the tree yaml.v3 gives, or is declined.
func TestSimpleYAMLSameAsYAMLv3(t *testing.T) {
	fms := append([]string(nil), simpleYAMLSeeds...)
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(p) != "SKILL.md" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if first, rest, _ := strings.Cut(string(b), "\n"); strings.TrimSpace(first) == "---" {
			if fm, _, _, ok := splitFrontmatter(rest); ok {
				fms = append(fms, fm)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for _, fm := range fms {
		if checkSimpleYAML(t, fm) {
			accepted++
		}
	}
	t.Logf("%d of %d frontmatters read without yaml.v3", accepted, len(fms))
}

// TestParsedFieldsDoNotHoldTheText: a skill's fields and frontmatter values
// are copies, not slices of its SKILL.md, which Snapshot.Pack compresses
// once the library is indexed: a field that sliced it would keep the whole
// text alive beside the packed copy, whichever parser read the frontmatter.
func TestParsedFieldsDoNotHoldTheText(t *testing.T) {
	for _, text := range []string{
		"---\nname: pdf\ndescription: Extract text\nlicense: MIT\ntype: contextual\ntags: a, b\nmetadata:\n  author: someone\n  team: docs\nextra: value\n---\nbody\n",
		"---\nname: pdf # yaml.v3 reads this one\ndescription: >\n  Extract text\nmetadata:\n  author: someone\n---\nbody\n",
	} {
		s := parse("/x/pdf/SKILL.md", text, "pdf", 0)
		content := s.Content()
		lo := uintptr(unsafe.Pointer(unsafe.StringData(content)))
		hi := lo + uintptr(len(content))
		inside := func(what, v string) {
			if v == "" {
				return
			}
			if p := uintptr(unsafe.Pointer(unsafe.StringData(v))); p >= lo && p < hi {
				t.Errorf("%s %q is a slice of the skill's text", what, v)
			}
		}
		inside("name", s.Name)
		inside("description", s.Description)
		inside("license", s.License)
		inside("type", string(s.Type))
		for _, tag := range s.Tags {
			inside("tag", tag)
		}
		for k, v := range s.Metadata {
			inside("metadata key", k)
			if str, ok := v.(string); ok {
				inside("metadata value", str)
			}
		}
		for k, v := range s.Extra {
			inside("extra key", k)
			if str, ok := v.(string); ok {
				inside("extra value", str)
			}
		}
	}
}
