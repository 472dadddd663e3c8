package wire

import (
	"encoding/json"
	"testing"
)

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		name  string
		adds  []string
		want  string
		empty bool
	}{
		{"none", nil, "null", true},
		{"null and blank add nothing", []string{"null", " ", ""}, "null", true},
		{"one, keys sorted and compacted", []string{`{"b": 2, "a": {"y": 1, "x": 0}}`}, `{"a":{"x":0,"y":1},"b":2}`, false},
		{"two summed", []string{`{"prompt_tokens":5,"completion_tokens":2,"details":{"cached":1},"model":"m"}`, `{"prompt_tokens":7,"completion_tokens":3,"details":{"cached":4},"model":"n"}`},
			`{"completion_tokens":5,"details":{"cached":5},"model":"m","prompt_tokens":12}`, false},
		{"a malformed first one adds nothing", []string{`{"a":`, `{"a":1}`}, `{"a":1}`, false},
		{"a malformed one alone", []string{`[1]`}, "null", true},
		{"floats", []string{`{"cost":0.5}`, `{"cost":0.25}`}, `{"cost":0.75}`, false},
		// Anthropic's server-side compaction: the top level is the last
		// pass, every pass billed; the rounds' sum counts them all.
		{"a round of passes, then a plain one", []string{
			`{"input_tokens":900,"output_tokens":10,"server_tool_use":{"web_search_requests":1},"iterations":[{"type":"compaction","input_tokens":50000,"output_tokens":800},{"type":"message","input_tokens":900,"output_tokens":10}]}`,
			`{"input_tokens":1200,"output_tokens":20}`},
			`{"input_tokens":52100,"output_tokens":830,"server_tool_use":{"web_search_requests":1}}`, false},
		{"a plain round, then one of passes", []string{
			`{"input_tokens":1200,"output_tokens":20}`,
			`{"input_tokens":900,"output_tokens":10,"iterations":[{"type":"compaction","input_tokens":50000,"output_tokens":800,"cache_read_input_tokens":7},{"type":"message","input_tokens":900,"output_tokens":10}]}`},
			`{"cache_read_input_tokens":7,"input_tokens":52100,"output_tokens":830}`, false},
		{"one round of passes alone", []string{
			`{"input_tokens":900,"output_tokens":10,"iterations":[{"type":"compaction","input_tokens":50000,"output_tokens":800},{"type":"message","input_tokens":900,"output_tokens":10}]}`},
			`{"input_tokens":50900,"output_tokens":810}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var u Usage
			for _, a := range c.adds {
				u.Add(json.RawMessage(a))
			}
			if got := string(u.JSON()); got != c.want {
				t.Errorf("JSON() = %s, want %s", got, c.want)
			}
			if u.Empty() != c.empty {
				t.Errorf("Empty() = %v, want %v", u.Empty(), c.empty)
			}
		})
	}
	// What Add was given may be reused by its caller.
	var u Usage
	b := []byte(`{"a":1}`)
	u.Add(b)
	copy(b, `{"a":9}`)
	if got := string(u.JSON()); got != `{"a":1}` {
		t.Errorf("after the caller reused its buffer: %s", got)
	}
}

// Last is the last round's object as it came, Rounds all of them; null and
// absent ones are not rounds; JSON still adds them up.
func TestUsageLast(t *testing.T) {
	var u Usage
	if u.Last() != nil || u.Rounds() != nil {
		t.Fatal("an empty Usage has a last round")
	}
	u.Add(json.RawMessage(`{"prompt_tokens":5,"completion_tokens":1}`))
	u.Add(json.RawMessage(`null`))
	u.Add(json.RawMessage(`{"prompt_tokens":9,"completion_tokens":2}`))
	if string(u.Last()) != `{"prompt_tokens":9,"completion_tokens":2}` || len(u.Rounds()) != 2 {
		t.Errorf("last %s, %d rounds", u.Last(), len(u.Rounds()))
	}
	if string(u.JSON()) != `{"completion_tokens":3,"prompt_tokens":14}` {
		t.Errorf("sum %s", u.JSON())
	}
}
