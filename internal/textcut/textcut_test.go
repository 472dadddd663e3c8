package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"abc", -1, ""},
		{"héllo", 2, "h"},  // é is two bytes, 1-2
		{"héllo", 3, "hé"}, // whole
		{"日本語", 2, ""},     // the first character needs three
		{"日本語", 4, "日"},
		{"日本語", 6, "日本"},
		{"a😀b", 4, "a"}, // four-byte character at 1-4
		{"a😀b", 5, "a😀"},
		{"\x80\x80\x80\x80\x80\x80", 5, "\x80\x80\x80\x80\x80"}, // invalid: steps back three, then cuts where it is
		{"\x80\x80\x80", 2, ""},
	}
	for _, c := range cases {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("héllo wörld 日本語 😀", 7)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 64
		got := Prefix(s, n)
		if !strings.HasPrefix(s, got) || len(got) > max(n, 0) {
			t.Fatalf("Prefix(%q, %d) = %q: not a prefix within n", s, n, got)
		}
		if utf8.ValidString(s) {
			if !utf8.ValidString(got) {
				t.Fatalf("Prefix(%q, %d) = %q splits a character", s, n, got)
			}
			if n >= 0 && len(s) > n && len(got) < n-(utf8.UTFMax-1) {
				t.Fatalf("Prefix(%q, %d) = %q cut more than a character", s, n, got)
			}
		}
	})
}
