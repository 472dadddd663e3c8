package tokens

import "testing"

func TestCount(t *testing.T) {
	tests := []struct {
		enc  Encoding
		text string
		want int
	}{
		{O200kBase, "", 0},
		{O200kBase, "hello world", 2},
		{Cl100kBase, "hello world", 2},
		{Cl100kBase, "<skill>", 3},
	}
	for _, tt := range tests {
		c, err := Get(tt.enc)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Count(tt.text); got != tt.want {
			t.Errorf("%s Count(%q) = %d, want %d", tt.enc, tt.text, got, tt.want)
		}
	}
}

func TestUnknownEncoding(t *testing.T) {
	if _, err := Get("nope"); err == nil {
		t.Fatal("want error for unknown encoding")
	}
}

func TestDefaultShared(t *testing.T) {
	if Default() != Default() {
		t.Fatal("Default should return one shared counter")
	}
}
