package wire

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHarnessContext(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"<system-reminder>\nEnd git commit messages with ...\n</system-reminder>\n", true},
		{"<environment_context>\n  <cwd>/x</cwd>\n</environment_context>", true},
		{"<user_instructions>be brief</user_instructions>", true},
		{"Fill in the PDF form.", false},
		{"<system-reminder>x</system-reminder> and my question", false},
		{"see <system-reminder>x</system-reminder>", false},
	} {
		if got := HarnessContext(tt.text); got != tt.want {
			t.Errorf("%q: %v, want %v", tt.text, got, tt.want)
		}
	}
}

// TestClipKeepsCharactersWhole: a value cut for a message or a log line is
// cut between characters, so the cut text stays valid UTF-8.
func TestClipKeepsCharactersWhole(t *testing.T) {
	for _, pad := range []int{0, 1, 2, 3} {
		s := strings.Repeat("a", pad) + strings.Repeat("é日😀", 100)
		got := Clip(s)
		if !utf8.ValidString(got) || !strings.HasSuffix(got, "...") || len(got) > 203 || len(got) < 197 {
			t.Errorf("pad %d: Clip gave %d bytes, valid %v", pad, len(got), utf8.ValidString(got))
		}
	}
	if got := Clip("short"); got != "short" {
		t.Errorf("Clip(short) = %q", got)
	}
}
