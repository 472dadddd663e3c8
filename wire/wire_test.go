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

func TestToolChoiceServedOnly(t *testing.T) {
	proxy := ToolSet{Server: []ToolSpec{{Name: "load_skill"}, {Name: "search_skills"}}}
	gated := ToolSet{Withheld: []int{0}, Server: proxy.Server}
	tests := []struct {
		name    string
		tc      ToolChoice
		ts      ToolSet
		clients int
		want    bool
	}{
		{"auto", ToolChoice{}, proxy, 0, false},
		{"forced load_skill", ToolChoice{Restricts: true, Required: true, Named: []string{"load_skill"}}, proxy, 2, true},
		{"allowed proxy tools only", ToolChoice{Restricts: true, Named: []string{"load_skill", "search_skills"}}, proxy, 2, true},
		{"allowed with a client tool", ToolChoice{Restricts: true, Named: []string{"load_skill", "bash"}}, proxy, 2, false},
		{"allowed with a built-in tool", ToolChoice{Restricts: true, Named: []string{"load_skill"}, Unnamed: 1}, proxy, 2, false},
		{"forced client tool", ToolChoice{Restricts: true, Named: []string{"bash"}}, proxy, 1, false},
		{"allowed none", ToolChoice{Restricts: true}, proxy, 1, false},
		{"required, no client tools", ToolChoice{Required: true}, proxy, 0, true},
		{"required, every client tool withheld", ToolChoice{Required: true}, gated, 1, true},
		{"required with client tools", ToolChoice{Required: true}, proxy, 1, false},
		{"required, no proxy tools", ToolChoice{Required: true}, ToolSet{}, 0, false},
	}
	for _, tt := range tests {
		if got := tt.tc.ServedOnly(tt.ts, tt.clients); got != tt.want {
			t.Errorf("%s: ServedOnly = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Compacting: an agent CLI's compaction prompt opening a user turn after
// the last assistant turn (Claude Code's text block beside its tool
// results, Codex CLI's user message); not the same words in a tool result
// (a file read), an opening quoted alone, or an earlier compaction.
func TestCompacting(t *testing.T) {
	claude := "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash...\n\nYour task is to create a detailed summary of the conversation so far"
	claudeOld := "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests... IMPORTANT: Do NOT use any tools."
	codex := "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM"
	for _, tc := range []struct {
		name  string
		turns []Turn
		want  bool
	}{
		{"claude code", []Turn{{Role: "user", Text: "fix it"}, {Role: "assistant", Text: "ok"}, {Role: "tool", Text: "files"}, {Role: "user", Text: claude}}, true},
		{"claude code before 2.1", []Turn{{Role: "user", Text: "fix it"}, {Role: "assistant"}, {Role: "user", Text: claudeOld}}, true},
		{"codex", []Turn{{Role: "user", Text: "fix it"}, {Role: "assistant"}, {Role: "tool", Text: "out"}, {Role: "user", Text: codex}}, true},
		{"an ask", []Turn{{Role: "user", Text: "fix it"}, {Role: "assistant"}, {Role: "user", Text: "now test it"}}, false},
		{"a file holding the prompt", []Turn{{Role: "user", Text: "read wire.go"}, {Role: "assistant"}, {Role: "tool", Text: claude}}, false},
		{"an opening quoted alone", []Turn{{Role: "user", Text: "You are performing a CONTEXT CHECKPOINT COMPACTION. Is that a good prompt?"}}, false},
		{"an earlier compaction", []Turn{{Role: "user", Text: codex}, {Role: "assistant", Text: "summary"}, {Role: "user", Text: "go on"}}, false},
	} {
		if got := (&Request{Turns: tc.turns}).Compacting(); got != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}
