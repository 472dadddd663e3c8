package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// Review resp15: Codex CLI through the proxy. The model loads a skill in a
// hidden round, then (following it) calls Codex's shell tool in the same
// request; Codex runs the command and sends its next request, stateless
// (store: false, the whole transcript again). That transcript holds only
// what Codex was shown: the hidden round's load_skill call and its output
// (the skill's body) are not in it, and Codex's requests continue no
// stored state, so the presence memory (proxy/presence.go, which is keyed
// by previous_response_id / conversation) has nothing to go on. The skill
// the model is in the middle of following is gone from the very next step
// of its task: no envelope in the request, not active for allowed-tools
// gating or tier-3 tools, and the model must load it again (one more hidden
// round on every step of an agent loop) or go on without its instructions.
// docs/sandbox.md and docs/proxy.md call a skill "active" when it was
// "loaded earlier in the conversation", which is what the client's
// conversation cannot show here.
func TestReviewResp15CodexLoadedSkillSurvivesClientToolStep(t *testing.T) {
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
	if !hasEnvelope(reqs[2].Body, "commit-message") {
		t.Errorf("Codex's next request (same task, after the shell step) no longer carries commit-message, which the model loaded one step earlier: the skill it is following is gone")
	}
}
