package router

import "testing"

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
