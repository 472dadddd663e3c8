package wire

import "testing"

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
