// Package textcut cuts text to a length in bytes without splitting a
// character.
package textcut

import "unicode/utf8"

// Prefix returns s cut to at most n bytes, before the character that would
// be split. In invalid UTF-8 it steps back at most three bytes (what a valid
// character can need) and then cuts where it is, so junk input costs no
// more than text does.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := max(n, 0); i >= 0 && i >= n-(utf8.UTFMax-1); i-- {
		if i == 0 || utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}
