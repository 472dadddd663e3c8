package jsonspan

import (
	"github.com/skillrouter/skillrouter/wire"

	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestObjectMembers(t *testing.T) {
	tests := []struct {
		in   string
		keys []string
		vals []string
	}{
		{`{}`, nil, nil},
		{` { } `, nil, nil},
		{`{"a":1}`, []string{"a"}, []string{"1"}},
		{`{ "a" : [1, {"x":"}"}] , "b\"q":"s\\\"" ,"c":null}`, []string{"a", `b"q`, "c"}, []string{`[1, {"x":"}"}]`, `"s\\\""`, "null"}},
		{`{"\u0061":-1.5e3,"a":true}`, []string{"a", "a"}, []string{"-1.5e3", "true"}},
	}
	for _, tt := range tests {
		ms, err := Members([]byte(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if len(ms) != len(tt.keys) {
			t.Fatalf("%s: %d members, want %d", tt.in, len(ms), len(tt.keys))
		}
		for i, m := range ms {
			if m.Key != tt.keys[i] || tt.in[m.Value.Start:m.Value.End] != tt.vals[i] {
				t.Errorf("%s: member %d = %q:%q, want %q:%q", tt.in, i, m.Key, tt.in[m.Value.Start:m.Value.End], tt.keys[i], tt.vals[i])
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":`, `"x"`} {
		if _, err := Members([]byte(bad)); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func TestArrayElements(t *testing.T) {
	in := ` [ 1 , "a,]" , {"b":[2]} , null ] `
	es, err := Elements([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1", `"a,]"`, `{"b":[2]}`, "null"}
	if len(es) != len(want) {
		t.Fatalf("%d elements, want %d", len(es), len(want))
	}
	for i, e := range es {
		if in[e.Start:e.End] != want[i] {
			t.Errorf("element %d = %q, want %q", i, in[e.Start:e.End], want[i])
		}
	}
}

func TestEdits(t *testing.T) {
	tests := []struct {
		name string
		edit func([]byte) ([]byte, error)
		in   string
		want string
	}{
		{"set existing keeps order", func(b []byte) ([]byte, error) { return Set(b, "b", []byte(`[9]`)) },
			`{"a":1, "b": 2 ,"c":3}`, `{"a":1, "b": [9] ,"c":3}`},
		{"set last duplicate", func(b []byte) ([]byte, error) { return Set(b, "a", []byte(`0`)) },
			`{"a":1,"a":2}`, `{"a":1,"a":0}`},
		{"set missing appends", func(b []byte) ([]byte, error) { return Set(b, "t", []byte(`[]`)) },
			"{\n  \"a\": 1\n}", "{\n  \"a\": 1,\"t\":[]\n}"},
		{"set in empty", func(b []byte) ([]byte, error) { return Set(b, "t", []byte(`1`)) },
			`{ }`, `{"t":1 }`},
		{"set edit added after an edit of the last value", func(b []byte) ([]byte, error) {
			ms, err := Members(b)
			if err != nil {
				return nil, err
			}
			return Apply(b, Edit{At: ms[len(ms)-1].Value, With: []byte(`9`)}, SetEdit(b, ms, "t", []byte(`[]`))), nil
		}, `{"a":1 }`, `{"a":9,"t":[] }`},
		{"remove middle", func(b []byte) ([]byte, error) { return Remove(b, "b") },
			`{"a":1, "b":2, "c":3}`, `{"a":1, "c":3}`},
		{"remove last", func(b []byte) ([]byte, error) { return Remove(b, "c") },
			`{"a":1, "b":2, "c":3}`, `{"a":1, "b":2}`},
		{"remove only", func(b []byte) ([]byte, error) { return Remove(b, "a") },
			`{ "a":1 }`, `{  }`},
		{"remove all duplicates", func(b []byte) ([]byte, error) { return Remove(b, "a") },
			`{"a":1,"b":2,"a":3}`, `{"b":2}`},
		{"remove escaped key", func(b []byte) ([]byte, error) { return Remove(b, `k"`) },
			`{"x":0,"k\"":1,"y":2}`, `{"x":0,"y":2}`},
		{"append", func(b []byte) ([]byte, error) { return Append(b, []byte(`3`), []byte(`4`)) },
			`[1, 2 ]`, `[1, 2,3,4 ]`},
		{"append empty", func(b []byte) ([]byte, error) { return Append(b, []byte(`3`)) },
			`[ ]`, `[3 ]`},
		{"append to string keeps escapes", func(b []byte) ([]byte, error) { return AppendQuoted(b, `\n`, wire.Quote("<x> \"y\"\n")) },
			`"a\ud800\u00e9"`, `"a\ud800\u00e9\n<x> \"y\"\n"`},
		{"remove adjacent members at the end", removals("t", "c", "p"),
			`{"a":1, "t":[2] ,"c":"x", "p":true }`, `{"a":1 }`},
		{"remove adjacent members in the middle", removals("t", "c"),
			`{"a":1,"c":"x","t":[2],"b":3}`, `{"a":1,"b":3}`},
		{"remove members apart", removals("t", "c"),
			`{"t":1,"a":2,"c":3}`, `{"a":2}`},
		{"remove every member", removals("t", "c"),
			`{"t":1,"c":3}`, `{}`},
		{"appender adds after the last member", appended("t", "u"),
			`{"a":1 }`, `{"a":1,"t":0,"u":1 }`},
		{"appender in an empty object", appended("t", "u"),
			` { } `, ` {"t":0,"u":1 } `},
		{"appender with nothing added", appended(),
			`{"a":1}`, `{"a":1}`},
		{"remove path", func(b []byte) ([]byte, error) { return RemovePath(b, "f", "p", "enum") },
			`{"f":{"p":{"type":"string","enum":["a"]}},"g":1}`, `{"f":{"p":{"type":"string"}},"g":1}`},
		{"remove missing path", func(b []byte) ([]byte, error) { return RemovePath(b, "f", "nope", "enum") },
			`{"f":{"p":1}}`, `{"f":{"p":1}}`},
	}
	for _, tt := range tests {
		got, err := tt.edit([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: result is not valid JSON: %s", tt.name, got)
		}
	}
}

// appended adds keys, valued 0, 1, ..., with an Appender.
func appended(keys ...string) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		ms, err := Members(b)
		if err != nil {
			return nil, err
		}
		a := NewAppender(b, ms)
		for i, k := range keys {
			a.Add(k, []byte(strconv.Itoa(i)))
		}
		e, ok := a.Edit()
		if ok != (len(keys) > 0) {
			return nil, fmt.Errorf("Edit's ok is %v with %d keys added", ok, len(keys))
		}
		if !ok {
			return b, nil
		}
		return Apply(b, e), nil
	}
}

// removals edits with Removals.
func removals(keys ...string) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		ms, err := Members(b)
		if err != nil {
			return nil, err
		}
		return Apply(b, Removals(ms, keys...)...), nil
	}
}

func TestQuoteNoHTMLEscape(t *testing.T) {
	if got := string(wire.Quote(`<skill_context id="a&b">`)); got != `"<skill_context id=\"a&b\">"` {
		t.Fatalf("got %s", got)
	}
}

func TestValueEndNeverPanics(t *testing.T) {
	for _, in := range []string{"", "{", "[", `"`, `"\`, "{\"a", "[1,", "tru", "-"} {
		b := []byte(in)
		for i := 0; i <= len(b); i++ {
			_, _ = valueEnd(b, i)
		}
		_, _ = Members(b)
		_, _ = Elements(b)
	}
	if _, err := valueEnd([]byte(strings.Repeat("[", 10)), 0); err == nil {
		t.Fatal("unterminated array: want error")
	}
}

// FuzzUnquote checks that Unquote decodes every input as encoding/json
// does: its fast path for plain literals must never differ.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"user"`, `"caf\u00e9"`, `"a\"b"`, `"tab	in"`, `"\xff"`, `""`, `"`, `null`, `5`, `"a"b"`, `"日本語"`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := Unquote(b)
		var want string
		werr := json.Unmarshal(b, &want)
		if (gerr == nil) != (werr == nil) || got != want {
			t.Fatalf("Unquote(%q) = %q, %v; encoding/json: %q, %v", b, got, gerr, want, werr)
		}
	})
}

func TestUnambiguousAndStringField(t *testing.T) {
	for _, c := range []struct {
		obj, key string
		unamb    bool
		val      string
		ok       bool
	}{
		{`{"id":"a","x":1}`, "id", true, "a", true},
		{`{"x":1}`, "id", true, "", true},
		{`{"id":null}`, "id", true, "", true},
		{`{"id":5}`, "id", true, "", false},
		{`{"id":"caf\u00e9"}`, "id", true, "café", true},
		{`{"ID":"a"}`, "id", false, "", true},
		{`{"id":"a","id":"b"}`, "id", false, "b", true},
		{`{"ſtatus":"x"}`, "status", false, "", true}, // encoding/json folds ſ to s
	} {
		ms, err := Members([]byte(c.obj))
		if err != nil {
			t.Fatal(err)
		}
		if got := Unambiguous(ms, c.key); got != c.unamb {
			t.Errorf("Unambiguous(%s, %q) = %v", c.obj, c.key, got)
		}
		if v, ok := StringField([]byte(c.obj), ms, c.key); v != c.val || ok != c.ok {
			t.Errorf("StringField(%s, %q) = %q, %v; want %q, %v", c.obj, c.key, v, ok, c.val, c.ok)
		}
	}
}

func TestPlainObject(t *testing.T) {
	for _, c := range []struct {
		raw string
		ok  bool
	}{
		{`{"id":"x","usage":{"a":1},"Other":2}`, true},
		{`{"id":"x","id":"y"}`, false}, // repeated
		{`{"ID":"x"}`, false},          // matched only by case
		{`{"id":"x",}`, false},         // not valid JSON
		{`["id"]`, false},              // not an object
		{`{"id":"x"} {}`, false},       // two values
	} {
		ms, ok := PlainObject([]byte(c.raw), "id", "usage")
		if ok != c.ok || ok && len(ms) != 3 {
			t.Errorf("PlainObject(%s) = %d members, %v; want %v", c.raw, len(ms), ok, c.ok)
		}
	}
}

// StringAt reads exact keys, the last repeat winning, where encoding/json
// would take "Function" or "NAME" for the field.
func TestStringAt(t *testing.T) {
	tests := []struct {
		in     string
		path   []string
		want   string
		wantOK bool
	}{
		{`{"function":{"name":"bash"}}`, []string{"function", "name"}, "bash", true},
		{`{"function":{"name":"bash"},"Function":{"name":"y"}}`, []string{"function", "name"}, "bash", true},
		{`{"Function":{"name":"y"}}`, []string{"function", "name"}, "", true},
		{`{"function":{"NAME":"y"}}`, []string{"function", "name"}, "", true},
		{`{"function":{"name":"a"},"function":{"name":"b"}}`, []string{"function", "name"}, "b", true},
		{`{"function":null}`, []string{"function", "name"}, "", true},
		{`{"function":{"name":null}}`, []string{"function", "name"}, "", true},
		{`null`, []string{"type"}, "", true},
		{` {"type" : "a\u0062"} `, []string{"type"}, "ab", true},
		{`{"function":"bash"}`, []string{"function", "name"}, "", false},
		{`{"function":{"name":5}}`, []string{"function", "name"}, "", false},
		{`[{"name":"x"}]`, []string{"name"}, "", false},
		{`{"name":"x"}`, nil, "", false},
	}
	for _, tt := range tests {
		got, ok := StringAt([]byte(tt.in), tt.path...)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("StringAt(%s, %q) = %q, %v; want %q, %v", tt.in, tt.path, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestResult(t *testing.T) {
	b := []byte(`{"max_tokens":10,"Max_tokens":7,"max_tokens":100}`)
	ms, err := Members(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := Result(b, ms, "max_tokens").Int(); got != 100 {
		t.Errorf("max_tokens = %d, want the last repeat's 100", got)
	}
	if Result(b, ms, "n").Exists() {
		t.Error("an absent key must not exist")
	}
	nested := []byte(`{"budget_tokens":1,"Budget_tokens":5,"budget_tokens":2}`)
	nms, err := Members(nested)
	if err != nil {
		t.Fatal(err)
	}
	if got := Result(nested, nms, "budget_tokens").Int(); got != 2 {
		t.Errorf("budget_tokens = %d, want the last repeat's 2", got)
	}
	if Result(nested, nms, "x").Exists() || Raw(nested, nms, "x") != nil {
		t.Error("an absent key must not exist")
	}
	if got := string(Raw(nested, nms, "Budget_tokens")); got != "5" {
		t.Errorf("Raw(Budget_tokens) = %q, want 5", got)
	}
}

// A key twice is refused, at the top level only, in a small body and in one
// of thousands of members (the map).
func TestBodyRepeatedMember(t *testing.T) {
	var many strings.Builder
	many.WriteString("{")
	for i := range 5000 {
		fmt.Fprintf(&many, "\"k%d\":1,", i)
	}
	for _, tt := range []struct {
		body, param string
	}{
		{`{"a":1,"b":{"x":1,"x":2}}`, ""},
		{`{"a":1,"b":2,"a":3}`, "a"},
		{`{"messages":1,"Messages":2}`, "Messages"}, // Go upstreams match names without case
		{many.String() + `"k4999":2}`, "k4999"},
		{many.String() + `"z":2}`, ""},
	} {
		_, err := Body([]byte(tt.body), "x")
		if tt.param == "" {
			if err != nil {
				t.Errorf("%.40s: %v", tt.body, err)
			}
			continue
		}
		if err == nil || err.Code != "duplicate_parameter" || err.Param != tt.param {
			t.Errorf("%.40s: %v, want duplicate_parameter %s", tt.body, err, tt.param)
		}
	}
}
