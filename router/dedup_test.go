package router

import (
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// A load_skill result counts under every name MCP hosts give the tool; one
// of another tool does not; one whose call is not in the request (stored
// Responses state) does, as before.
func TestLoadedBy(t *testing.T) {
	tests := []struct {
		m    Message
		want bool
	}{
		{Message{Role: "user"}, true},
		{Message{Role: "developer"}, true},
		{Message{Role: "assistant"}, false},
		{Message{Role: "tool", Tool: "load_skill"}, true},
		{Message{Role: "tool", Tool: "mcp__skillrouter__load_skill"}, true}, // Claude Code
		{Message{Role: "tool", Tool: "skillrouter_load_skill"}, true},       // opencode
		{Message{Role: "tool", Tool: "mcp--skillrouter--load_skill"}, true}, // Roo Code
		{Message{Role: "tool", Tool: "mcp_skillrouter_load_skill"}, true},   // VS Code
		{Message{Role: "tool", Tool: "load_skill_mcp_skillrouter"}, true},   // LibreChat
		{Message{Role: "tool", Tool: "skillrouter.load_skill"}, true},
		{Message{Role: "tool", Tool: ""}, true}, // the call is upstream's, in stored state
		{Message{Role: "tool", Tool: "WebFetch"}, false},
		{Message{Role: "tool", Tool: "preload_skills"}, false},
		{Message{Role: "tool", Tool: "load_skill2"}, false},
		{Message{Role: "tool", Tool: "load_skill_docs"}, false},
		{Message{Role: "tool", Tool: "preview_load_skill_output"}, false},
	}
	for _, tt := range tests {
		if got := loadedBy(tt.m); got != tt.want {
			t.Errorf("loadedBy(%+v) = %v, want %v", tt.m, got, tt.want)
		}
	}
}

// Envelopes count at the top level only: one quoted inside another (a
// skill documenting envelopes shows one in its body) is not a skill the
// model loaded; envelopes one after another all count.
func TestEnvelopesInTopLevelOnly(t *testing.T) {
	outer := `<skill_context id="envelope-doc"><instructions>An envelope looks like
<skill_context id="sql-tuning">
  <instructions>...</instructions>
</skill_context>
and ends there.</instructions></skill_context>`
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"nested example", outer, []string{"envelope-doc"}},
		{"two in a row", outer + "\n" + `<skill_context id="b"><instructions>x</instructions></skill_context>`, []string{"envelope-doc", "b"}},
		{"one", `<skill_context id="a&amp;b"><instructions>x</instructions></skill_context>`, []string{"a&b"}},
		// A body that opens an envelope it never closes (an example cut
		// short) is written guarded, so the next envelope still counts.
		{"rendered body with a tag", skills.Envelope((&skills.Skill{ID: "doc", Name: "doc"}).SetText("", `Begin with <skill_context id="x"> and go on.`)) +
			"\n" + `<skill_context id="b"><instructions>x</instructions></skill_context>`, []string{"doc", "b"}},
	}
	for _, tt := range tests {
		got := envelopesIn([]Message{{Role: "tool", Tool: "load_skill", Text: tt.text}})
		if len(got) != len(tt.want) || len(got) > 0 && (got[0] != tt.want[0] || got[len(got)-1] != tt.want[len(tt.want)-1]) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
