package openai

import (
	"slices"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

func TestToolChoice(t *testing.T) {
	tests := []struct {
		raw                       string
		none, required, restricts bool
		named                     []string
		unnamed                   int
	}{
		{``, false, false, false, nil, 0},
		{`"auto"`, false, false, false, nil, 0},
		{`"none"`, true, false, false, nil, 0},
		{`"required"`, false, true, false, nil, 0},
		{`{"type":"function","function":{"name":"bash"}}`, false, false, true, []string{"bash"}, 0},
		{`{"type":"function","name":"bash"}`, false, false, true, []string{"bash"}, 0},
		{`{"type":"custom","custom":{"name":"patch"}}`, false, false, true, []string{"patch"}, 0},
		{`{"type":"custom","name":"patch"}`, false, false, true, []string{"patch"}, 0},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}]}}`, false, true, true, []string{"a", "b"}, 0},
		{`{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"a"}]}`, false, true, true, []string{"a"}, 0},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`, false, false, true, nil, 0},
		// Built-in tools are forced or allowed by type, with no name.
		{`{"type":"web_search"}`, false, false, true, nil, 1},
		{`{"type":"mcp","server_label":"wiki"}`, false, false, true, nil, 1},
		{`{"type":"mcp","server_label":"wiki","name":"ask"}`, false, false, true, nil, 1},
		{`{"type":"mcp","server_label":"wiki","name":"load_skill"}`, false, false, true, nil, 1}, // a hosted tool, not the proxy's
		{`{"type":"allowed_tools","mode":"required","tools":[{"type":"web_search"},{"type":"function","name":"load_skill"}]}`, false, true, true, []string{"load_skill"}, 1},
		{`42`, false, false, false, nil, 0},
	}
	for _, tt := range tests {
		got := ToolChoice([]byte(tt.raw))
		if got.None != tt.none || got.Required != tt.required || got.Restricts != tt.restricts || !slices.Equal(got.Named, tt.named) || got.Unnamed != tt.unnamed {
			t.Errorf("%s: %+v, want none %v required %v restricts %v named %v unnamed %d", tt.raw, got, tt.none, tt.required, tt.restricts, tt.named, tt.unnamed)
		}
	}
}

func TestRelaxChoice(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"tool_choice":"required","x":1}`, `{"tool_choice":"auto","x":1}`},
		{`{"tool_choice":{"type":"function","function":{"name":"load_skill"}}}`, `{"tool_choice":"auto"}`},
		{`{"tool_choice":{"type":"function","name":"load_skill"}}`, `{"tool_choice":"auto"}`},
		{`{"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"load_skill"}}]}}}`,
			`{"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"load_skill"}}]}}}`},
		{`{"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"load_skill"}]}}`,
			`{"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"load_skill"}]}}`},
		{`{"x":1}`, `{"x":1}`},
	}
	for _, tt := range tests {
		got, err := RelaxChoice([]byte(tt.body))
		if err != nil || string(got) != tt.want {
			t.Errorf("RelaxChoice(%s) = %s, %v; want %s", tt.body, got, err, tt.want)
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
