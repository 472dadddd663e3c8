package e2e

// A skill the model loads stays for the rest of the turn, with the real
// agents (docs/proxy.md, "A loaded skill stays for the rest of the turn";
// TestLoadedSkillStaysForTheTurn drives the same with hand-written bodies).
// Codex CLI and Claude Code keep the transcript themselves and never hold
// the proxy's hidden load_skill round: the model loads commit-message, then
// calls the agent's own shell tool; the agent runs it and sends its output
// in the turn's next request, which must hold the loaded body again, once,
// after that output, with the instructions / system prompt and the tools
// byte for byte as in the turn's earlier requests. A new user ask in the
// same session (codex exec resume --last, claude --continue) is a new turn:
// nothing carried.

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

const (
	carryAsk    = "What does hello.txt say?"
	carryFile   = "greetings from a file"
	carryAnswer = "The file says greetings."
	carryNext   = "Thanks. Anything else in there?"
	carryDone   = "Nothing else."
)

func TestCarriedSkillCodexCLI(t *testing.T) {
	e, logs, work := carrySetup(t)
	e.up.Script(
		fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "A commit message skill fits."},
			ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`}}}),
		fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "Read the file first."},
			ToolCalls: []fakeai.Call{{Name: "exec_command", Arguments: `{"cmd":"cat hello.txt"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: carryAnswer}),
		fakeai.Reply(fakeai.Turn{Content: carryDone}))
	home := t.TempDir()
	if got := execCodex(t, e.proxy.URL, home, work, carryAsk).Answer; got != carryAnswer {
		t.Fatalf("answer %q", got)
	}
	reqs := e.up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d upstream requests, want 3 (the hidden round's two, the step after the shell)", len(reqs))
	}
	checkCarried(t, reqs, "instructions", logs)
	// The step after the shell: the body follows the command's output item.
	items := reqs[2].InputItems()
	outAt, envAt := -1, -1
	for i, it := range items {
		if it["type"] == "function_call_output" && strings.Contains(stringOf(it["output"]), carryFile) {
			outAt = i
		}
		if it["type"] == "message" && strings.Contains(fakeai.Text(it["content"]), `<skill_context id="commit-message">`) {
			envAt = i
		}
	}
	if outAt < 0 || envAt <= outAt {
		t.Fatalf("the loaded body (item %d) must follow the shell's output (item %d) of %d items", envAt, outAt, len(items))
	}

	// A new user ask in the same session: a new turn, nothing carried.
	if got := execCodex(t, e.proxy.URL, home, work, "resume", "--last", carryNext).Answer; got != carryDone {
		t.Fatalf("resumed answer %q", got)
	}
	checkNewTurn(t, e.up.Requests(), 3)
}

func TestCarriedSkillClaudeCode(t *testing.T) {
	e, logs, work := carrySetup(t)
	e.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`}}}),
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "Bash", Arguments: `{"command":"cat hello.txt","description":"Show hello.txt"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: carryAnswer}),
		fakeai.Reply(fakeai.Turn{Content: carryDone}))
	home := t.TempDir()
	if got := execClaude(t, e.proxy.URL, home, work, "-p", carryAsk).Answer; got != carryAnswer {
		t.Fatalf("answer %q", got)
	}
	reqs := messagesOnly(e.up.Requests())
	if len(reqs) != 3 {
		t.Fatalf("%d message requests, want 3 (the hidden round's two, the step after Bash)", len(reqs))
	}
	checkCarried(t, reqs, "system", logs)
	// The step after Bash: the body follows the message with its tool_result.
	msgs := reqs[2].Messages()
	outAt, envAt := -1, -1
	for i, m := range msgs {
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			if bm["type"] == "tool_result" && strings.Contains(fakeai.Text(bm["content"])+stringOf(bm["content"]), carryFile) {
				outAt = i
			}
			if bm["type"] == "text" && strings.Contains(stringOf(bm["text"]), `<skill_context id="commit-message">`) {
				envAt = i
			}
		}
	}
	if outAt < 0 || envAt <= outAt {
		t.Fatalf("the loaded body (message %d) must follow Bash's tool_result (message %d) of %d messages", envAt, outAt, len(msgs))
	}

	// A new user ask in the same session: a new turn, nothing carried.
	if got := execClaude(t, e.proxy.URL, home, work, "--continue", "-p", carryNext).Answer; got != carryDone {
		t.Fatalf("continued answer %q", got)
	}
	checkNewTurn(t, messagesOnly(e.up.Requests()), 3)
}

// carrySetup is setup with the access log kept, and a working folder with
// hello.txt.
func carrySetup(t *testing.T) (*env, *syncbuf.Buffer, string) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	e := setup(t, func(cfg *proxy.Config) { cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte(carryFile+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return e, logs, work
}

// checkCarried checks a turn's three model requests: commit-message not
// auto-loaded in the first, loaded by the hidden round in the second, and
// in the third (the client's next step) once, the same body the round
// loaded; the prompt field sys ("instructions", "system") and the tools
// byte for byte the same in all three; the access log names the load and
// the carry.
func checkCarried(t *testing.T, reqs []fakeai.Request, sys string, logs *syncbuf.Buffer) {
	t.Helper()
	if hasEnvelope(reqs[0].Body, "commit-message") {
		t.Fatal("commit-message was auto-loaded; the scenario needs the model to load it")
	}
	loaded := envelopeOf(reqs[1].Body, "commit-message")
	if loaded == "" {
		t.Fatalf("the hidden round did not load commit-message: %s", reqs[1].Body)
	}
	if n := strings.Count(string(reqs[2].Body), `<skill_context id=\"commit-message\">`); n != 1 {
		t.Fatalf("the step after the client's tool holds the loaded body %d times, want once: %s", n, reqs[2].Body)
	}
	if got := envelopeOf(reqs[2].Body, "commit-message"); got != loaded {
		t.Errorf("the carried body differs from the loaded one:\ncarried %.300s\nloaded  %.300s", got, loaded)
	}
	for _, field := range []string{sys, "tools"} {
		first := gjson.GetBytes(reqs[0].Body, field).Raw
		if first == "" {
			t.Fatalf("the first request has no %s", field)
		}
		for i := 1; i < len(reqs); i++ {
			if got := gjson.GetBytes(reqs[i].Body, field).Raw; got != first {
				t.Errorf("request %d: %s differs from the turn's first request's", i+1, field)
			}
		}
	}
	if !strings.Contains(logs.String(), `"loaded":"commit-message"`) || !strings.Contains(logs.String(), `"carried":"commit-message"`) {
		t.Errorf("the access log does not say what was loaded and carried:\n%s", logs.String())
	}
}

// checkNewTurn: the requests from the n-th on (a new user ask) carry nothing.
func checkNewTurn(t *testing.T, reqs []fakeai.Request, n int) {
	t.Helper()
	if len(reqs) <= n {
		t.Fatalf("%d model requests, want more than %d", len(reqs), n)
	}
	for _, r := range reqs[n:] {
		if hasEnvelope(r.Body, "commit-message") {
			t.Fatalf("a new turn got the earlier turn's skill: %s", r.Body)
		}
		if !bytes.Contains(r.Body, []byte(carryNext)) {
			t.Fatalf("a request of the new turn without its ask: %s", r.Body)
		}
	}
}

// envelopeOf returns the JSON text of skill's envelope in body, up to its
// closing tag ("" if there is none).
func envelopeOf(body []byte, skill string) string {
	s := string(body)
	i := strings.Index(s, `<skill_context id=\"`+skill+`\">`)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], "</skill_context>")
	if j < 0 {
		return ""
	}
	return s[i : i+j]
}

func messagesOnly(reqs []fakeai.Request) []fakeai.Request {
	var out []fakeai.Request
	for _, r := range reqs {
		if r.Path == "/v1/messages" {
			out = append(out, r)
		}
	}
	return out
}
