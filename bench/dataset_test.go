package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSkillName(t *testing.T) {
	tests := map[string]string{
		"PDF&URLTool":             "pdf-urltool",
		"claude-api":              "api",
		"my_anthropic_helper":     "my-helper",
		"--A__b--":                "a-b",
		"":                        "skill",
		"claude":                  "skill",
		"Ünïcode Tool 2":          "n-code-tool-2",
		strings.Repeat("ab-", 30): strings.TrimRight(strings.Repeat("ab-", 22)[:64], "-"),
	}
	for in, want := range tests {
		if got := SkillName(in); got != want {
			t.Errorf("SkillName(%q) = %q, want %q", in, got, want)
		}
		got := SkillName(in)
		if len(got) == 0 || len(got) > 64 || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") || strings.Contains(got, "--") {
			t.Errorf("SkillName(%q) = %q is not a valid name", in, got)
		}
	}
}

func TestValidID(t *testing.T) {
	for _, ok := range []string{"a", "a/b", "PDF&URLTool", "synthetic/00001-x", "K-Dense-AI-claude-scientific-skills/rdkit"} {
		if err := validID(ok); err != nil {
			t.Errorf("validID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/abs", "../up", "a/../b", "a//b", "a/", ".hidden", "a/.git", `a\b`, "a\x00b", "."} {
		if err := validID(bad); err == nil {
			t.Errorf("validID(%q) accepted", bad)
		}
	}
}

func TestSkillMarkdown(t *testing.T) {
	got := SkillMarkdown("x", `a "quoted": desc`, "Body")
	want := "---\nname: x\ndescription: \"a \\\"quoted\\\": desc\"\n---\n\nBody\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWriteLibrary(t *testing.T) {
	root := t.TempDir()
	files := []SkillFile{{ID: "a/b", Content: "A"}, {ID: "PDF&URLTool", Content: "B"}}
	if err := WriteLibrary(root, files); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "PDF&URLTool", "SKILL.md"))
	if err != nil || string(b) != "B" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if err := WriteLibrary(root, []SkillFile{{ID: "x"}, {ID: "x"}}); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate id: %v", err)
	}
	if err := WriteLibrary(root, []SkillFile{{ID: "../escape"}}); err == nil {
		t.Error("escaping id written")
	}
}

func TestLoadTools(t *testing.T) {
	tools, err := LoadTools(filepath.Join("testdata", "metatool", "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tl := range tools {
		ids = append(ids, tl.ID)
	}
	if want := []string{"WeatherNow", "PDF&URLTool", "claude_helper", "stock-quotes"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	bad := []struct{ name, in, want string }{
		{"broken", `{"id": "a", "description": "x"}` + "\n" + `{"id":`, "t.jsonl:2: invalid JSON"},
		{"no id", `{"description": "x"}`, `t.jsonl:1: missing "id"`},
		{"no description", `{"id": "a"}`, "t.jsonl:1: tool \"a\" has no description"},
		{"repeat", `{"id": "a", "description": "x"}` + "\n\n" + `{"id": "a", "description": "y"}`, "t.jsonl:3: tool \"a\" repeats line 1"},
		{"escaping id", `{"id": "../a", "description": "x"}`, "t.jsonl:1: skill id"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(p, []byte(c.in), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadTools(p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestToolSkill(t *testing.T) {
	f := ToolSkill(Tool{ID: "PDF&URLTool", Description: "Summarise: a PDF."})
	if f.ID != "PDF&URLTool" {
		t.Fatalf("id %q", f.ID)
	}
	want := "---\nname: pdf-urltool\ndescription: \"Summarise: a PDF.\"\n---\n\nSummarise: a PDF.\n"
	if f.Content != want {
		t.Fatalf("content %q, want %q", f.Content, want)
	}
}

func queriesN(n int, split string) []Query {
	out := make([]Query, n)
	for i := range out {
		out[i] = Query{ID: string(rune('a' + i)), Text: "q", Expected: []string{}, Split: split}
	}
	return out
}

func ids(qs []Query) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.ID
	}
	return out
}

func TestSelect(t *testing.T) {
	all := append(queriesN(20, "single"), Query{ID: "m", Text: "q", Expected: []string{"x"}, Split: "multi"})
	got, err := Select(all, Selection{Split: "multi"})
	if err != nil || !reflect.DeepEqual(ids(got), []string{"m"}) {
		t.Fatalf("split: %v %v", ids(got), err)
	}
	if _, err := Select(all, Selection{Split: "other"}); err == nil {
		t.Error("unknown split value selected nothing without error")
	}
	got, _ = Select(all, Selection{Limit: 3})
	if !reflect.DeepEqual(ids(got), []string{"a", "b", "c"}) {
		t.Errorf("limit: %v", ids(got))
	}
	s1, _ := Select(all, Selection{Split: "single", Sample: 5, Seed: 7})
	s2, _ := Select(all, Selection{Split: "single", Sample: 5, Seed: 7})
	s3, _ := Select(all, Selection{Split: "single", Sample: 5, Seed: 8})
	if len(s1) != 5 || !reflect.DeepEqual(ids(s1), ids(s2)) {
		t.Errorf("sample not reproducible: %v vs %v", ids(s1), ids(s2))
	}
	if reflect.DeepEqual(ids(s1), ids(s3)) {
		t.Errorf("seeds 7 and 8 drew the same sample %v", ids(s1))
	}
	for i := 1; i < len(s1); i++ {
		if s1[i-1].ID >= s1[i].ID {
			t.Errorf("sample not in file order: %v", ids(s1))
		}
	}
	// The sample is pinned: a change of generator or algorithm changes every
	// documented MetaTool figure, so it must be deliberate.
	if want := []string{"a", "f", "n", "q", "s"}; !reflect.DeepEqual(ids(s1), want) {
		t.Errorf("seed 7 sample = %v, want %v", ids(s1), want)
	}
	// Sample then limit.
	sl, _ := Select(all, Selection{Split: "single", Sample: 5, Seed: 7, Limit: 2})
	if !reflect.DeepEqual(ids(sl), ids(s1)[:2]) {
		t.Errorf("sample+limit = %v", ids(sl))
	}
	// A sample as large as the set is the set.
	whole, _ := Select(all, Selection{Sample: 100, Seed: 1})
	if len(whole) != len(all) {
		t.Errorf("oversized sample: %d", len(whole))
	}
	if _, err := Select(all, Selection{Sample: -1}); err == nil {
		t.Error("negative sample accepted")
	}
}

func TestLoadMetaTool(t *testing.T) {
	dir := filepath.Join("testdata", "metatool")
	m, err := LoadMetaTool(dir, Selection{Split: "single"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools) != 4 || len(m.Queries) != 5 {
		t.Fatalf("tools %d queries %d", len(m.Tools), len(m.Queries))
	}
	if len(m.SkillFiles()) != 4 {
		t.Fatal("skill files")
	}
	m, err = LoadMetaTool(dir, Selection{Split: "multi"})
	if err != nil || len(m.Queries) != 1 || len(m.Queries[0].Expected) != 2 {
		t.Fatalf("multi: %v %v", m, err)
	}
	if _, err := LoadMetaTool(dir, Selection{Split: "both"}); err == nil {
		t.Error("bad split accepted")
	}
	// A query naming an unknown tool makes the data set inconsistent.
	bad := t.TempDir()
	copyFile(t, filepath.Join(dir, "tools.jsonl"), filepath.Join(bad, "tools.jsonl"))
	if err := os.WriteFile(filepath.Join(bad, "queries.jsonl"), []byte(`{"query":"x","expected":["Nope"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMetaTool(bad, Selection{}); err == nil || !strings.Contains(err.Error(), `unknown tool "Nope"`) {
		t.Errorf("unknown tool: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseTools(f *testing.F) {
	f.Add(`{"id": "A", "description": "x"}` + "\n\n" + `{"id": "B&C", "description": "y", "extra": 1}`)
	f.Add(`{"id": "../x", "description": "x"}`)
	f.Add(`{"id": "a", "description": ""}`)
	f.Fuzz(func(t *testing.T, in string) {
		tools, err := ParseTools(strings.NewReader(in), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, tl := range tools {
			if tl.Description == "" || seen[tl.ID] || validID(tl.ID) != nil {
				t.Fatalf("accepted a bad tool %#v", tl)
			}
			seen[tl.ID] = true
			// Every accepted tool renders to a SKILL.md with a valid name.
			if name := SkillName(tl.ID); name == "" || len(name) > 64 {
				t.Fatalf("name %q", name)
			}
		}
	})
}
