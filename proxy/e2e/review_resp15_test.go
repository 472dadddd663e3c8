package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// Review resp15 (coverage, passes): Codex CLI through the proxy, a hidden
// load_skill round, then in the same request a call of Codex's shell tool
// (exec_command), which Codex runs and answers in its next, stateless
// request. That next request carrying the skill's envelope again is
// asserted by TestCarriedSkillCodexCLI.
func TestReviewResp15CodexShellAfterHiddenRound(t *testing.T) {
	e := setup(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte("greetings from a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.up.Script(
		fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "A commit message skill fits."},
			ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`}}}),
		fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "Read the file first."},
			ToolCalls: []fakeai.Call{{Name: "exec_command", Arguments: `{"cmd":"cat hello.txt"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "The file says greetings."}))
	run := runCodexIn(t, e.proxy.URL, work, "What does hello.txt say?")
	if run.Answer != "The file says greetings." {
		t.Fatalf("answer %q\nstderr: %s", run.Answer, run.Stderr)
	}
	reqs := e.up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	if hasEnvelope(reqs[0].Body, "commit-message") {
		t.Fatalf("commit-message was auto-loaded; the scenario needs the model to load it")
	}
	if !hasEnvelope(reqs[1].Body, "commit-message") {
		t.Fatalf("the hidden round did not load commit-message")
	}
	// Codex's next step: the shell output came back.
	var out bool
	for _, o := range itemsOf(reqs[2], "function_call_output") {
		out = out || strings.Contains(stringOf(o["output"]), "greetings from a file")
	}
	if !out {
		t.Fatalf("the shell output did not reach the model")
	}
	for _, c := range itemsOf(reqs[2], "function_call") {
		if c["name"] == "load_skill" {
			t.Errorf("Codex's transcript holds the proxy's load_skill call: %v", c)
		}
	}
}
