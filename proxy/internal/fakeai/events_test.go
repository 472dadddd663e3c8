package fakeai

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendJSONMatchesEncodingJSON: the fake's encoder writes what
// encoding/json writes (without HTML escaping), for every byte and for
// random strings, and keeps key order.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	std := func(v any) string {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		_ = e.Encode(v)
		return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	}
	strs := []string{"", "plain", `q"uote\back`, "<skill_context>&</skill_context>", "tab\tnl\ncr\r\x00\x1f\x7f",
		"é ü 漢字 🙂", "\u2028\u2029", "bad \xff\xfe utf8", "\xe2\x82"}
	for c := 0; c < 256; c++ {
		strs = append(strs, string([]byte{byte(c)}), "a"+string(rune(c))+"b")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		strs = append(strs, string(b))
	}
	for _, s := range strs {
		if got, want := string(appendJSON(nil, s)), std(s); got != want {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
	v := ordered{"type", "x", "n", 3, "f", 1.5, "one", 1.0, "b", true, "nil", nil, "raw", rawJSON(`{"a":[1]}`),
		"list", []any{ordered{"k", "v"}, "s"}, "m", map[string]int{"z": 1}}
	want := `{"type":"x","n":3,"f":1.5,"one":1,"b":true,"nil":null,"raw":{"a":[1]},"list":[{"k":"v"},"s"],"m":{"z":1}}`
	if got := string(mustMarshal(v)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
