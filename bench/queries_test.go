package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseQueries(t *testing.T) {
	in := "\ufeff" + `{"query": "make a chart", "expected": ["viz/plot"], "kind": "implicit", "extra": {"x": 1}}

   
{"id": "q2", "query": "hello there", "expected": []}
{"query": "two", "expected": ["a", "b", "a"], "split": "multi", "id": 7}
`
	got, err := ParseQueries(strings.NewReader(in), "q.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{ID: "line-1", Text: "make a chart", Expected: []string{"viz/plot"}},
		{ID: "q2", Text: "hello there", Expected: []string{}},
		// A non-string id is ignored like any extra key; duplicates in expected are dropped.
		{ID: "line-5", Text: "two", Expected: []string{"a", "b"}, Split: "multi"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

func TestParseQueriesErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"broken JSON names the line", `{"query":"a","expected":[]}` + "\n\n" + `{"query": "b", "expected": [}`, "f.jsonl:3: invalid JSON"},
		{"not an object", `["a"]`, "f.jsonl:1: not a JSON object"},
		{"missing query", `{"expected": ["a"]}`, `f.jsonl:1: missing "query"`},
		{"empty query", `{"query": "  ", "expected": ["a"]}`, `f.jsonl:1: empty "query"`},
		{"missing expected", `{"query": "a"}`, `f.jsonl:1: missing "expected"`},
		{"null expected", `{"query": "a", "expected": null}`, `f.jsonl:1: missing "expected"`},
		{"expected not a list", `{"query": "a", "expected": "x"}`, `f.jsonl:1: "expected" must be an array`},
		{"expected with a number", `{"query": "a", "expected": [1]}`, `f.jsonl:1: "expected" must be an array`},
		{"empty id", `{"query": "a", "expected": [""]}`, `f.jsonl:1: "expected" holds an empty id`},
		{"two values", `{"query": "a", "expected": []} {"query": "b", "expected": []}`, "f.jsonl:1: more than one JSON value"},
		{"query not a string", `{"query": 3, "expected": []}`, "f.jsonl:1: invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQueries(strings.NewReader(tt.in), "f.jsonl")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want containing %q", err, tt.want)
			}
		})
	}
}

func TestParseQueriesLongLine(t *testing.T) {
	in := `{"query":"ok","expected":[]}` + "\n" + `{"query":"` + strings.Repeat("x", maxQueryLine) + `","expected":[]}`
	_, err := ParseQueries(strings.NewReader(in), "big.jsonl")
	if err == nil || !strings.Contains(err.Error(), "big.jsonl:2: line longer") {
		t.Fatalf("err = %v", err)
	}
}

// TestReadJSONLines: line numbers count blank lines, a BOM is dropped from
// the first line only, and errors name the file and line, wrapped.
func TestReadJSONLines(t *testing.T) {
	in := "\ufeff{\"a\":1}\n\n  \t\n  {\"b\":2}  \r\n\ufeff{}\n"
	type rec struct {
		line int
		text string
	}
	var got []rec
	err := readJSONLines(strings.NewReader(in), "x.jsonl", func(line int, b []byte) error {
		got = append(got, rec{line, string(b)})
		return nil
	})
	want := []rec{{1, `{"a":1}`}, {4, `{"b":2}`}, {5, "\ufeff{}"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	errStop := errors.New("stop")
	calls := 0
	err = readJSONLines(strings.NewReader("a\n\nb\nc"), "x.jsonl", func(int, []byte) error {
		if calls++; calls == 2 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) || err.Error() != "x.jsonl:3: stop" || calls != 2 {
		t.Fatalf("err = %v after %d calls", err, calls)
	}
	long := "{}\n" + strings.Repeat("x", maxQueryLine+1)
	err = readJSONLines(strings.NewReader(long), "x.jsonl", func(int, []byte) error { return nil })
	if err == nil || err.Error() != fmt.Sprintf("x.jsonl:2: line longer than %d bytes", maxQueryLine) {
		t.Fatalf("long line: %v", err)
	}
	// Both readers use it: tools.jsonl gets the same BOM and length handling.
	tools, err := ParseTools(strings.NewReader("\ufeff"+`{"id": "a", "description": "x"}`), "t.jsonl")
	if err != nil || len(tools) != 1 {
		t.Fatalf("tools with BOM: %v, %v", tools, err)
	}
	longTool := `{"id": "a", "description": "x"}` + "\n" + strings.Repeat("x", maxQueryLine+1)
	if _, err := ParseTools(strings.NewReader(longTool), "t.jsonl"); err == nil || !strings.Contains(err.Error(), "t.jsonl:2: line longer") {
		t.Fatalf("tools long line: %v", err)
	}
}

func TestLoadQueries(t *testing.T) {
	p := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(p, []byte(`{"query":"x","expected":["a"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	qs, err := LoadQueries(p)
	if err != nil || len(qs) != 1 || qs[0].Expected[0] != "a" {
		t.Fatalf("got %v, %v", qs, err)
	}
	if _, err := LoadQueries(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Fatal("missing file: no error")
	}
}

func FuzzParseQueries(f *testing.F) {
	f.Add(`{"query": "a", "expected": ["x"]}` + "\n")
	f.Add(`{"query": "a", "expected": []}` + "\n\n" + `{"query":"b","expected":["y","y"],"id":"q"}`)
	f.Add(`{"query": "a"`)
	f.Add("\ufeff{}")
	f.Fuzz(func(t *testing.T, in string) {
		qs, err := ParseQueries(strings.NewReader(in), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, q := range qs {
			if strings.TrimSpace(q.Text) == "" || q.Expected == nil || q.ID == "" {
				t.Fatalf("accepted an incomplete query: %#v", q)
			}
		}
	})
}
