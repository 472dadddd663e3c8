package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
)

// These tests need no Node: they drive the real router (and sandbox) through
// the proxy's server-side tool loop with plain HTTP.

func loopProxy(t *testing.T, root string, opts router.RewriteOptions) (*fakeai.Server, string) {
	t.Helper()
	ctx := context.Background()
	reg := skills.NewRegistry([]string{root}, skills.Options{})
	r, err := router.New(ctx, reg.Snapshot(), router.Options{Strategy: router.StrategyBM25})
	if err != nil {
		t.Fatal(err)
	}
	up := fakeai.New()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.BaseURL())
	srv, err := proxy.New(proxy.Config{Upstream: u, Rewriter: proxy.NewRewriter(r, opts), Library: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return up, ts.URL + "/v1/chat/completions"
}

// post sends a chat request; for a stream it returns the joined text deltas
// after every raw event, so callers can look for both.
func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := string(b)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var text strings.Builder
		for _, line := range strings.Split(out, "\n") {
			var ch struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(d), &ch) == nil && len(ch.Choices) > 0 {
				text.WriteString(ch.Choices[0].Delta.Content)
			}
		}
		out += "\n" + text.String()
	}
	return resp, out
}

// lastTool returns the content of the last tool message of an upstream request.
func lastTool(t *testing.T, r fakeai.Request) string {
	t.Helper()
	msgs := r.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["role"] == "tool" {
			return content(msgs[i])
		}
	}
	t.Fatalf("no tool message in %s", r.Body)
	return ""
}

func TestSearchSkillsThroughToolLoop(t *testing.T) {
	for _, stream := range []bool{false, true} {
		// A budget too small for the whole catalog: search_skills is offered.
		up, url := loopProxy(t, "testdata/skills", router.RewriteOptions{CatalogBudgetTokens: 60, NoTools: false})
		up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_s", Name: "search_skills", Arguments: `{"query":"summarise a csv file report"}`}}}),
			fakeai.Reply(fakeai.Turn{Content: "Found it."}),
		)
		body := `{"model":"m","stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"messages":[{"role":"user","content":"hello there"}]}`
		resp, out := post(t, url, body)
		if resp.StatusCode != 200 || !strings.Contains(out, "Found it.") || strings.Contains(out, "search_skills") {
			t.Fatalf("stream=%v: status %d: %s", stream, resp.StatusCode, out)
		}
		reqs := up.Requests()
		if len(reqs) != 2 {
			t.Fatalf("stream=%v: upstream got %d requests", stream, len(reqs))
		}
		if names := strings.Join(reqs[0].ToolNames(), ","); !strings.Contains(names, "search_skills") {
			t.Fatalf("search_skills not offered: %s", names)
		}
		if res := lastTool(t, reqs[1]); !strings.Contains(res, "csv-report") {
			t.Fatalf("stream=%v: search result %q", stream, res)
		}
	}
}

func TestSkillExecuteThroughToolLoop(t *testing.T) {
	tools, err := sandbox.New(sandbox.Config{Enabled: true, OutputRoot: t.TempDir()}, nil)
	if err != nil {
		t.Skipf("sandbox unavailable here: %v", err)
	}
	for _, stream := range []bool{false, true} {
		up, url := loopProxy(t, "testdata/exec-skills", router.RewriteOptions{CatalogMode: router.CatalogAll, Tools: tools})
		up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"greeter"}`}}}),
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_x", Name: "skill_execute",
				Arguments: `{"skill_id":"greeter","command":"scripts/greet.sh","args":["world"]}`}}}),
			fakeai.Reply(fakeai.Turn{Content: "The script says hello."}),
		)
		body := `{"model":"m","stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"messages":[{"role":"user","content":"what can you do?"}]}`
		resp, out := post(t, url, body)
		if resp.StatusCode != 200 || !strings.Contains(out, "The script says hello.") {
			t.Fatalf("stream=%v: status %d: %s", stream, resp.StatusCode, out)
		}
		reqs := up.Requests()
		if len(reqs) != 3 {
			t.Fatalf("stream=%v: upstream got %d requests", stream, len(reqs))
		}
		if names := strings.Join(reqs[1].ToolNames(), ","); !strings.Contains(names, "skill_execute") {
			t.Fatalf("skill_execute not offered after load_skill: %s", names)
		}
		res := lastTool(t, reqs[2])
		var r struct {
			ExitCode int    `json:"exit_code"`
			Stdout   string `json:"stdout"`
		}
		if json.Unmarshal([]byte(res), &r) != nil || !strings.Contains(res, "hello, world") {
			t.Fatalf("stream=%v: execution result %q", stream, res)
		}
		if !stream && resp.Header.Get("X-Skillrouter-Tool-Rounds") != "2" {
			t.Fatalf("rounds header %q", resp.Header.Get("X-Skillrouter-Tool-Rounds"))
		}
	}
}
