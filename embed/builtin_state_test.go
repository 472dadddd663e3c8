package embed

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestBuiltinStateRoundTrip: a restored embedder is the fitted one: same
// model (fingerprint) and the same vectors bit for bit, for texts in and
// out of its vocabulary.
func TestBuiltinStateRoundTrip(t *testing.T) {
	corpus := []string{
		"sql query tuning: explain analyze, indexes, slow postgres queries",
		"regex builder: write and test regular expressions for dates and emails",
		"dockerfile hardening: non-root users, minimal base images, pinned digests",
		"git commit messages in the conventional commits style",
	}
	for _, o := range []BuiltinOptions{{}, {Dimensions: 256, CharMin: 2, CharMax: 4, Unigram: 1, Bigram: 0, CharGram: 0.7}} {
		fit := NewBuiltinWith(o).Fit(corpus)
		data, err := fit.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := RestoreBuiltin(data)
		if err != nil {
			t.Fatal(err)
		}
		if got.Model() != fit.Model() || got.Dimensions() != fit.Dimensions() {
			t.Fatalf("restored model %s (%d), want %s (%d)", got.Model(), got.Dimensions(), fit.Model(), fit.Dimensions())
		}
		texts := append(slices.Clone(corpus), "my postgres query is slow", "zzyzx unknown wordz", "")
		a, _ := fit.Embed(context.Background(), texts)
		b, _ := got.Embed(context.Background(), texts)
		for i := range a {
			if !slices.Equal(a[i], b[i]) {
				t.Errorf("options %+v: vector of %q differs after restore", o, texts[i])
			}
		}
		again, _ := got.MarshalBinary()
		if !slices.Equal(again, data) {
			t.Errorf("options %+v: state does not survive a second round trip unchanged", o)
		}
	}
}

func TestBuiltinStateErrors(t *testing.T) {
	if _, err := NewBuiltin(Config{}).MarshalBinary(); err == nil {
		t.Error("an unfitted embedder was saved")
	}
	good, err := NewBuiltin(Config{}).Fit([]string{"alpha beta", "gamma delta"}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	flipped := slices.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":     {nil, "not a builtin embedder state"},
		"foreign":   {[]byte("PK\x03\x04 something else"), "not a builtin embedder state"},
		"damaged":   {flipped, "checksum"},
		"truncated": {good[:len(good)-9], "checksum"},
	}
	for name, c := range cases {
		if _, err := RestoreBuiltin(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", name, err, c.want)
		}
	}
}
