package openai

import (
	"slices"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

func TestToolChoice(t *testing.T) {
	tests := []struct {
		raw            string
		none, required bool
		named          []string
	}{
		{``, false, false, nil},
		{`"auto"`, false, false, nil},
		{`"none"`, true, false, nil},
		{`"required"`, false, true, nil},
		{`{"type":"function","function":{"name":"bash"}}`, false, false, []string{"bash"}},
		{`{"type":"function","name":"bash"}`, false, false, []string{"bash"}},
		{`{"type":"custom","custom":{"name":"patch"}}`, false, false, []string{"patch"}},
		{`{"type":"custom","name":"patch"}`, false, false, []string{"patch"}},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}]}}`, false, true, []string{"a", "b"}},
		{`{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"a"}]}`, false, true, []string{"a"}},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`, false, false, nil},
		{`42`, false, false, nil},
	}
	for _, tt := range tests {
		got := ToolChoice([]byte(tt.raw))
		if got.None != tt.none || got.Required != tt.required || !slices.Equal(got.Named, tt.named) {
			t.Errorf("%s: %+v, want none %v required %v named %v", tt.raw, got, tt.none, tt.required, tt.named)
		}
	}
}

func TestContentText(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"hi"`, "hi"},
		{`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"input_text","text":"b"},{"type":"output_text","text":"c"}]`, "a\nb\nc"},
		{`[{"type":"text","text":"a"},{"type":"text","text":5}]`, "a"},
		{`null`, ""},
		{`5`, ""},
	}
	for _, tt := range tests {
		if got := ContentText([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorJSON(t *testing.T) {
	got := string(ErrorJSON(&wire.Error{Kind: wire.KindUpstream, Code: "upstream_timeout", Message: "upstream timed out"}))
	want := `{"error":{"message":"upstream timed out","type":"upstream_error","param":null,"code":"upstream_timeout"}}`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
