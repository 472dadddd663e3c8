package e2e

// Helpers of the review resp15 tests.

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/internal/codexhome"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// ctxExceeded answers as the Responses API does when the input is over the
// context window.
func ctxExceeded(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(400)
	w.Write([]byte(`{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`))
}

// codexRaw runs codex exec as runCodex does, but returns its output and
// error instead of failing the test.
func codexRaw(t *testing.T, baseURL, prompt string) (string, string, error) {
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	work := filepath.Join(home, "work")
	for _, d := range []string{codexHome, work} {
		os.MkdirAll(d, 0o755)
	}
	if err := codexhome.Write(codexHome, baseURL+"/v1", ""); err != nil {
		t.Fatal(err)
	}
	cmd, cancel := command(t, agentTimeout, nodeBin(t, ".bin", "codex"), "exec", "--skip-git-repo-check", "--ephemeral", "--color", "never", prompt)
	defer cancel()
	cmd.Dir = work
	cmd.Env = append(cleanEnv(), "HOME="+home, "CODEX_HOME="+codexHome, codexhome.KeyEnv+"=sk-e2e-codex")
	cmd.Stdin = strings.NewReader("")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	return o.String(), e.String(), err
}

// Review resp15: see proxy TestReviewResp15LaterRoundUpstreamErrorEndsWithResponseFailed.
// The same upstream refusal reaches Codex directly as "ran out of room in
// the model's context window"; after a hidden round, through the proxy, as
// a dropped connection, which Codex retries (stream_max_retries, default 5).
func TestReviewResp15CodexSeesUpstreamErrorOfHiddenRound(t *testing.T) {
	e := setup(t)
	e.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`}}}),
		ctxExceeded)
	_, direct, _ := func() (string, string, error) {
		f := fakeai.New()
		defer f.Close()
		f.Script(ctxExceeded)
		return codexRaw(t, f.URL, "What does hello.txt say?")
	}()
	if !strings.Contains(direct, "context window") {
		t.Fatalf("directly, Codex did not report the context window: %s", direct)
	}
	_, via, err := codexRaw(t, e.proxy.URL, "What does hello.txt say?")
	if err == nil {
		t.Fatalf("codex succeeded through the proxy")
	}
	if len(e.up.Requests()) != 2 {
		t.Fatalf("%d upstream requests, want the hidden round's two", len(e.up.Requests()))
	}
	if !strings.Contains(via, "context window") {
		t.Errorf("through the proxy Codex reports something else than the context window:\n%s", lastLines(via, 3))
	}
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
