package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
)

// Client-tool gating (exec.allowed_tools) and conversation naming
// (X-Skillrouter-Session) through the real router, sandbox provider and the
// proxy's server-side tool loop. No Node needed.

// gateProxy serves the library at root through the proxy with tier-3 tools
// from a sandbox provider configured by cfg; logs go to the returned buffer.
func gateProxy(t *testing.T, root string, cfg sandbox.Config, opts router.RewriteOptions) (*fakeai.Server, string, *syncbuf.Buffer) {
	t.Helper()
	ctx := context.Background()
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	tools, err := sandbox.New(cfg, log)
	if err != nil {
		t.Skipf("sandbox unavailable here: %v", err)
	}
	opts.Tools = tools
	reg := skills.NewRegistry([]string{root}, skills.Options{})
	r, err := router.New(ctx, reg.Snapshot(), router.Options{Strategy: router.StrategyBM25})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	up := fakeai.New()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.BaseURL())
	srv, err := proxy.New(proxy.Config{Upstream: u, Rewriter: proxy.NewRewriter(r, opts), Library: reg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return up, ts.URL + "/v1/chat/completions", logs
}

// postWith sends a chat request with extra headers and returns the response
// and its body.
func postWith(t *testing.T, url, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// writeSkills writes SKILL.md files (id -> frontmatter lines) under a temp root.
func writeSkills(t *testing.T, defs map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for id, fm := range defs {
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + id + "\n" + fm + "\n---\n# " + id + "\n\nUse the tools this skill allows.\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// clientCall is the tool call the client received, from a completion or a
// stream.
type clientCall struct {
	name, args, content, finish string
}

func clientAnswer(t *testing.T, resp *http.Response, body []byte) clientCall {
	t.Helper()
	var out clientCall
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var c struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct{ Name, Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("completion: %v: %s", err, body)
		}
		m := c.Choices[0].Message
		if m.Content != nil {
			out.content = *m.Content
		}
		if len(m.ToolCalls) != 1 {
			t.Fatalf("want one tool call for the client: %s", body)
		}
		out.name, out.args, out.finish = m.ToolCalls[0].Function.Name, m.ToolCalls[0].Function.Arguments, c.Choices[0].FinishReason
		return out
	}
	calls := 0
	for _, line := range strings.Split(string(body), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int                              `json:"index"`
						Function struct{ Name, Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil {
			t.Fatalf("bad chunk %q: %v", d, err)
		}
		for _, c := range ch.Choices {
			out.content += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				if tc.Index != 0 {
					t.Fatalf("client sees a second tool call: %s", body)
				}
				if tc.Function.Name != "" {
					calls++
					out.name = tc.Function.Name
				}
				out.args += tc.Function.Arguments
			}
			if c.FinishReason != nil {
				out.finish = *c.FinishReason
			}
		}
	}
	if calls != 1 {
		t.Fatalf("want one tool call for the client, got %d: %s", calls, body)
	}
	return out
}

const (
	clientBash    = `{"type":"function","function":{"name":"bash","description":"Run a shell command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}}`
	clientWeather = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`
)

// The model loads a skill whose allowed-tools enables a client tool the
// gate withheld: the next upstream round offers it again, the model calls
// it, and the client receives that call — streaming and not.
func TestGatedClientToolRestoredByLoadSkill(t *testing.T) {
	root := writeSkills(t, map[string]string{
		"git-helper": "description: Inspect and commit changes with git version control.\nallowed-tools: Bash(git:*)",
		"note-taker": "description: Keep tidy meeting notes.",
	})
	for _, stream := range []bool{false, true} {
		// Exec stays off: gating does not depend on it.
		up, url, logs := gateProxy(t, root, sandbox.Config{AllowedTools: []string{"bash"}, OutputRoot: t.TempDir()},
			router.RewriteOptions{CatalogMode: router.CatalogAll})
		up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"git-helper"}`}}}),
			fakeai.Reply(fakeai.Turn{Content: "Checking the repository.", ToolCalls: []fakeai.Call{{ID: "call_b", Name: "bash", Arguments: `{"cmd":"git status"}`}}}),
		)
		body := `{"model":"m","stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"messages":[{"role":"user","content":"what changed in my working tree?"}],"tools":[` + clientBash + `,` + clientWeather + `],"tool_choice":"auto"}`
		resp, out := postWith(t, url, body, map[string]string{"X-Skillrouter-Top-K": "0"})
		if resp.StatusCode != 200 {
			t.Fatalf("stream=%v: status %d: %s", stream, resp.StatusCode, out)
		}
		if got := resp.Header.Get(proxy.HeaderToolsWithheld); got != "bash" {
			t.Errorf("stream=%v: %s = %q, want bash", stream, proxy.HeaderToolsWithheld, got)
		}
		reqs := up.Requests()
		if len(reqs) != 2 {
			t.Fatalf("stream=%v: upstream got %d requests", stream, len(reqs))
		}
		if got := reqs[0].ToolNames(); !slices.Equal(got, []string{"get_weather", "load_skill"}) {
			t.Fatalf("stream=%v: first round tools %v: bash must be withheld", stream, got)
		}
		if got := reqs[1].ToolNames(); !slices.Equal(got, []string{"bash", "get_weather", "load_skill"}) {
			t.Fatalf("stream=%v: second round tools %v: bash must be back after load_skill", stream, got)
		}
		if !bytes.Contains(reqs[1].Body, []byte(clientBash)) || !bytes.Contains(reqs[1].Body, []byte(`"tool_choice":"auto"`)) {
			t.Fatalf("stream=%v: the client's bash definition and tool_choice must come back as sent: %s", stream, reqs[1].Body)
		}
		if res := lastTool(t, reqs[1]); !strings.Contains(res, `<skill_context id="git-helper">`) {
			t.Fatalf("stream=%v: load_skill answer %q", stream, res)
		}
		got := clientAnswer(t, resp, out)
		if got.name != "bash" || got.args != `{"cmd":"git status"}` || got.finish != "tool_calls" || got.content != "Checking the repository." {
			t.Fatalf("stream=%v: the client got %+v", stream, got)
		}
		if strings.Contains(string(out), "load_skill") {
			t.Fatalf("stream=%v: the proxy's own call leaked: %s", stream, out)
		}
		line := logs.String()
		if !strings.Contains(line, `"msg":"client tools gated by skills"`) || !strings.Contains(line, `"tools_withheld":"bash"`) ||
			!strings.Contains(line, `"tools_enabled":"bash=git-helper"`) || !strings.Contains(line, `"tools_withheld_at_end":""`) {
			t.Fatalf("stream=%v: gate log line missing or wrong:\n%s", stream, line)
		}
	}
}

// An auto-loaded skill that enables the tool keeps it in the first round;
// without gated tools nothing changes and no header is sent.
func TestGatedClientToolKeptByAutoLoad(t *testing.T) {
	root := writeSkills(t, map[string]string{
		"git-helper": "description: Inspect and commit changes with git version control.\nallowed-tools: Bash",
	})
	up, url, _ := gateProxy(t, root, sandbox.Config{AllowedTools: []string{"bash"}, OutputRoot: t.TempDir()}, router.RewriteOptions{})
	body := `{"model":"m","messages":[{"role":"user","content":"please #git-helper commit my changes"}],"tools":[` + clientBash + `]}`
	resp, out := postWith(t, url, body, nil)
	if resp.StatusCode != 200 || resp.Header.Get(proxy.HeaderToolsWithheld) != "" {
		t.Fatalf("status %d, withheld %q: %s", resp.StatusCode, resp.Header.Get(proxy.HeaderToolsWithheld), out)
	}
	if got := up.Requests()[0].ToolNames(); !slices.Equal(got, []string{"bash", "load_skill"}) {
		t.Fatalf("tools %v", got)
	}
}

// X-Skillrouter-Session (else "user") names the conversation: identical
// openings with different names run in different output directories, the
// same name reuses its directory, and the header never goes upstream.
func TestSessionHeaderKeysOutputDir(t *testing.T) {
	outRoot := t.TempDir()
	up, url, _ := gateProxy(t, "testdata/exec-skills", sandbox.Config{Enabled: true, OutputRoot: outRoot},
		router.RewriteOptions{CatalogMode: router.CatalogAll})
	outputDir := func(hdr map[string]string, user string) string {
		t.Helper()
		up.Reset()
		up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"greeter"}`}}}),
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_x", Name: "skill_execute",
				Arguments: `{"skill_id":"greeter","command":"scripts/greet.sh","args":["world"]}`}}}),
			fakeai.Reply(fakeai.Turn{Content: "Greeted."}),
		)
		u := ""
		if user != "" {
			u = `,"user":"` + user + `"`
		}
		h := map[string]string{"X-Skillrouter-Top-K": "0"}
		for k, v := range hdr {
			h[k] = v
		}
		resp, out := postWith(t, url, `{"model":"m"`+u+`,"messages":[{"role":"system","content":"You help."},{"role":"user","content":"say hi to the world"}]}`, h)
		if resp.StatusCode != 200 || !strings.Contains(string(out), "Greeted.") {
			t.Fatalf("status %d: %s", resp.StatusCode, out)
		}
		reqs := up.Requests()
		if len(reqs) != 3 {
			t.Fatalf("upstream got %d requests", len(reqs))
		}
		for _, r := range reqs {
			if r.Header.Get(proxy.HeaderSession) != "" {
				t.Fatal("X-Skillrouter-Session forwarded upstream")
			}
		}
		var res struct {
			OK        bool   `json:"ok"`
			OutputDir string `json:"output_dir"`
		}
		if err := json.Unmarshal([]byte(lastTool(t, reqs[2])), &res); err != nil || !res.OK || res.OutputDir == "" {
			t.Fatalf("execution result %v: %s", err, lastTool(t, reqs[2]))
		}
		if !strings.HasPrefix(res.OutputDir, outRoot) {
			t.Fatalf("output dir %s not under %s", res.OutputDir, outRoot)
		}
		return res.OutputDir
	}
	a := outputDir(map[string]string{proxy.HeaderSession: "chat-a"}, "")
	b := outputDir(map[string]string{proxy.HeaderSession: "chat-b"}, "")
	plain := outputDir(nil, "")
	if a == b || a == plain || b == plain {
		t.Fatalf("conversations with identical openings share a directory: a=%s b=%s none=%s", a, b, plain)
	}
	if again := outputDir(map[string]string{proxy.HeaderSession: "chat-a"}, ""); again != a {
		t.Fatalf("the same session got another directory: %s vs %s", again, a)
	}
	if plain2 := outputDir(nil, ""); plain2 != plain {
		t.Fatalf("without a name the opening alone must keep the directory: %s vs %s", plain2, plain)
	}
	u1, u2 := outputDir(nil, "user-1"), outputDir(nil, "user-2")
	if u1 == u2 || u1 == plain {
		t.Fatalf("the user field must name the conversation: %s %s %s", u1, u2, plain)
	}
	if hdrWins := outputDir(map[string]string{proxy.HeaderSession: "chat-a"}, "user-1"); hdrWins != a {
		t.Fatalf("the header must win over user: %s vs %s", hdrWins, a)
	}
}
