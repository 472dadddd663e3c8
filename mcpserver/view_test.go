package mcpserver

import (
	"net/url"
	"strings"
	"testing"
)

func TestSkillBase(t *testing.T) {
	for id, want := range map[string]string{
		"anthropics/pdf":        "skill://anthropics/pdf",
		"a b/c%d":               "skill://a%20b/c%25d",
		"user@host:1/x":         "skill://user%40host%3A1/x",
		"K-Dense/é/x~y":         "skill://K-Dense/%C3%A9/x~y",
		"q?/frag#/semi;colon=1": "skill://q%3F/frag%23/semi;colon=1",
	} {
		if got := skillBase(id); got != want {
			t.Errorf("skillBase(%q) = %q, want %q", id, got, want)
		}
	}
}

// FuzzEscapeSegment: an escaped segment holds only URI path characters and
// unescapes to the original.
func FuzzEscapeSegment(f *testing.F) {
	for _, s := range []string{"pdf-forms", "a b", "%", "é", "a/b", "x@y:z", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := escapeSegment(s)
		for i := 0; i < len(e); i++ {
			c := e[i]
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=%", c) >= 0
			if !ok {
				t.Fatalf("escapeSegment(%q) = %q holds %q", s, e, c)
			}
		}
		back, err := url.PathUnescape(e)
		if err != nil || back != s {
			t.Fatalf("escapeSegment(%q) = %q unescapes to %q (%v)", s, e, back, err)
		}
	})
}
