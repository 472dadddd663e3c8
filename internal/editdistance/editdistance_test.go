package editdistance

import "testing"

func TestOf(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3},
		{"flaw", "lawn", 2}, {"héllo", "hello", 1}, {"same", "same", 0}, {"pfd", "pdf", 1}, {"ca", "abc", 3},
	}
	for _, tt := range tests {
		if got := Of(tt.a, tt.b); got != tt.want {
			t.Errorf("Of(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
