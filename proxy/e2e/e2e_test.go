// Package e2e drives the proxy with the official OpenAI Node SDK (openai@6,
// pinned in testdata/node/package-lock.json) against the fake upstream: the
// SDK is the real client, the fake records what the proxy sent upstream.
// Node scripts assert what the client got; this file asserts the upstream side.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/npmcache"
	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

const nodeDir = "testdata/node"

// requireNode skips without node/npm and makes the pinned packages of
// testdata/node available: installed once per machine into the npm cache
// outside the work tree (internal/npmcache), testdata/node/node_modules a
// symlink to it. The first install takes about a minute.
func requireNode(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed: skipping the end-to-end tests with real Node clients", bin)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := npmcache.Ensure(ctx, nodeDir); err != nil {
		t.Fatal(err)
	}
}

type env struct {
	up    *fakeai.Server
	proxy *httptest.Server
}

// setup starts the proxy, configured by mods, in front of a fake upstream.
func setup(t *testing.T, mods ...func(*proxy.Config)) *env {
	t.Helper()
	requireNode(t)
	ctx := context.Background()
	reg := skills.NewRegistry([]string{"testdata/skills"}, skills.Options{})
	b := embed.NewBuiltin(embed.Config{})
	r, err := router.New(ctx, reg.Snapshot(), router.Options{
		Embedder: b,
		Fit:      func(corpus []string) router.Embedder { return b.Fit(corpus) },
	})
	if err != nil {
		t.Fatal(err)
	}
	up := fakeai.New()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.BaseURL())
	cfg := proxy.Config{
		Upstream: u,
		Rewriter: proxy.NewRewriter(r, router.RewriteOptions{CatalogMode: router.CatalogAll}),
		Library:  reg,
		Logger:   slog.New(slog.DiscardHandler),
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &env{up: up, proxy: ts}
}

// run executes a scenario script and decodes the JSON line it reports.
func (e *env) run(t *testing.T, script string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = nodeDir
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+e.proxy.URL+"/v1", "OPENAI_API_KEY=sk-e2e-client")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, stdout.String(), stderr.String())
	}
	t.Logf("node %s reported: %s", script, strings.TrimSpace(stdout.String()))
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("node %s printed %q: %v", script, stdout.String(), err)
	}
}

func content(m map[string]any) string {
	switch c := m["content"].(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				s, _ := pm["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// checkRewritten asserts the upstream got tier 1 (catalog in the system
// message), tier 2 (envelope of wantSkill after the client's messages) and
// the load_skill tool besides the client's tools.
func checkRewritten(t *testing.T, req fakeai.Request, clientMsgs int, wantSkill string, clientTools ...string) {
	t.Helper()
	msgs := req.Messages()
	if len(msgs) == 0 || msgs[0]["role"] != "system" {
		t.Fatalf("no system message upstream: %s", req.Body)
	}
	sys := content(msgs[0])
	for _, s := range []string{"<available_skills>", "<id>pdf-forms</id>", "<id>csv-report</id>", "<id>commit-message</id>"} {
		if !strings.Contains(sys, s) {
			t.Errorf("catalog misses %q in the system message: %.600s", s, sys)
		}
	}
	if wantSkill != "" {
		last := msgs[len(msgs)-1]
		if len(msgs) <= clientMsgs || !strings.Contains(content(last), `<skill_context id="`+wantSkill+`">`) || last["role"] != "user" {
			t.Errorf("envelope of %s not appended after the client's %d messages: %v", wantSkill, clientMsgs, msgs[len(msgs)-1])
		}
	}
	names := strings.Join(req.ToolNames(), ",")
	want := strings.Join(append(clientTools, "load_skill"), ",")
	if !strings.HasPrefix(names, want) {
		t.Errorf("tools upstream %q, want %q first", names, want)
	}
}

func TestSDKNonStreaming(t *testing.T) {
	e := setup(t)
	e.up.Script(fakeai.Reply(fakeai.Turn{Content: "Sure, here are the filled fields."}))
	var got struct {
		Content string            `json:"content"`
		Headers map[string]string `json:"headers"`
	}
	e.run(t, "non-streaming.mjs", &got)
	if got.Headers["x-skillrouter-selected"] != "pdf-forms" || got.Headers["x-skillrouter-strategy"] != "hybrid" {
		t.Errorf("decision headers %v", got.Headers)
	}
	reqs := e.up.Requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream got %d requests", len(reqs))
	}
	checkRewritten(t, reqs[0], 2, "pdf-forms")
	if sys := content(reqs[0].Messages()[0]); !strings.HasPrefix(sys, "You are a helpful assistant.") {
		t.Errorf("catalog must be appended to the client's system message: %.200s", sys)
	}
	if a := reqs[0].Header.Get("Authorization"); a != "Bearer sk-e2e-client" {
		t.Errorf("client key not forwarded: %q", a)
	}
}

func TestSDKStreaming(t *testing.T) {
	e := setup(t)
	for i := 0; i < 2; i++ {
		e.up.Script(fakeai.Reply(fakeai.Turn{Content: "Here is the report you asked for.", ContentChunks: 7}))
	}
	var got struct {
		Content string            `json:"content"`
		Chunks  int               `json:"chunks"`
		Headers map[string]string `json:"headers"`
	}
	e.run(t, "streaming.mjs", &got)
	if got.Chunks < 9 { // role + 7 content + finish (+ usage)
		t.Errorf("client saw %d chunks: the stream was merged", got.Chunks)
	}
	if got.Headers["x-skillrouter-selected"] != "csv-report" {
		t.Errorf("decision headers %v", got.Headers)
	}
	reqs := e.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests", len(reqs))
	}
	checkRewritten(t, reqs[0], 1, "csv-report")
	if reqs[0].JSON()["stream"] != true {
		t.Error("stream flag lost")
	}
}

// A capped stream without stream_options.include_usage: the proxy asks the
// upstream for usage to take the load_skill round's output from the cap,
// and the real client sees no usage, as it asked.
func TestSDKCappedStreamWithoutUsage(t *testing.T) {
	e := setup(t)
	load := fakeai.Turn{Content: "Let me load the skill. ", ToolCalls: []fakeai.Call{{ID: "call_ls_1", Name: "load_skill", Arguments: `{"skill_id":"csv-report"}`}},
		ArgChunks: 5, Usage: &fakeai.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55}}
	done := fakeai.Turn{Content: "Loaded the csv-report skill; here is your report.", Usage: &fakeai.Usage{PromptTokens: 80, CompletionTokens: 9, TotalTokens: 89}}
	e.up.Script(fakeai.Reply(load), fakeai.Reply(done), fakeai.Reply(load), fakeai.Reply(done))
	var got struct {
		Chunks       int             `json:"chunks"`
		UsageChunks  int             `json:"usageChunks"`
		EmptyChoices int             `json:"emptyChoices"`
		HelperUsage  json.RawMessage `json:"helperUsage"`
	}
	e.run(t, "capped-stream.mjs", &got)
	if got.Chunks == 0 || got.UsageChunks != 0 || got.EmptyChoices != 0 || string(got.HelperUsage) != "null" {
		t.Errorf("the client, which did not ask for usage, saw some: %+v", got)
	}
	reqs := e.up.Requests()
	if len(reqs) != 4 {
		t.Fatalf("upstream got %d requests, want 4 (two per client request)", len(reqs))
	}
	for i, r := range reqs {
		if so := r.JSON()["stream_options"]; !reflect.DeepEqual(so, map[string]any{"include_usage": true}) {
			t.Errorf("request %d: stream_options %v, want the proxy's ask for usage", i, so)
		}
	}
	for i, key := range map[int]string{1: "max_tokens", 3: "max_completion_tokens"} {
		if got := reqs[i].JSON()[key]; got != float64(95) {
			t.Errorf("follow-up %d: %s %v, want 95 (100 less the 5 the load_skill round used)", i, key, got)
		}
	}
}

func TestSDKClientTools(t *testing.T) {
	e := setup(t)
	call := fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_weather_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}, ArgChunks: 4}
	final := fakeai.Turn{Content: "It is sunny in Oslo."}
	e.up.Script(fakeai.Reply(call), fakeai.Reply(final), fakeai.Reply(call), fakeai.Reply(final))
	var got map[string]struct {
		CallID string `json:"callId"`
	}
	e.run(t, "client-tools.mjs", &got)
	if got["plain"].CallID != "call_weather_1" || got["stream"].CallID != "call_weather_1" {
		t.Errorf("client got %v", got)
	}
	reqs := e.up.Requests()
	if len(reqs) != 4 {
		t.Fatalf("upstream got %d requests, want 4 (no server-side round)", len(reqs))
	}
	for i, r := range reqs {
		checkRewritten(t, r, 1, "", "get_weather")
		if i%2 == 1 { // the client's follow-up carries its tool result
			msgs := r.Messages()
			var tool map[string]any
			for _, m := range msgs {
				if m["role"] == "tool" {
					tool = m
				}
			}
			if tool == nil || tool["tool_call_id"] != "call_weather_1" || !strings.Contains(content(tool), "sunny") {
				t.Errorf("request %d: client's tool result not forwarded: %s", i, r.Body)
			}
		}
	}
}

func TestSDKModelCallsLoadSkill(t *testing.T) {
	e := setup(t)
	load := fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_ls_1", Name: "load_skill", Arguments: `{"skill_id":"csv-report"}`}},
		ArgChunks: 5, Usage: &fakeai.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55}}
	done := fakeai.Turn{Content: "Loaded the csv-report skill; here is your report.", Usage: &fakeai.Usage{PromptTokens: 80, CompletionTokens: 9, TotalTokens: 89}}
	loadStreamed := load
	loadStreamed.Content = "Let me load the skill. "
	e.up.Script(fakeai.Reply(load), fakeai.Reply(done), fakeai.Reply(loadStreamed), fakeai.Reply(done))
	var got struct {
		Plain struct {
			Usage   map[string]float64 `json:"usage"`
			Headers map[string]string  `json:"headers"`
		} `json:"plain"`
		Stream struct {
			Usage map[string]float64 `json:"usage"`
		} `json:"stream"`
	}
	e.run(t, "load-skill.mjs", &got)
	// The last round's usage (wire.Usage): the context the answer read.
	if got.Plain.Usage["total_tokens"] != 89 || got.Plain.Headers["x-skillrouter-tool-rounds"] != "1" {
		t.Errorf("plain: usage %v headers %v", got.Plain.Usage, got.Plain.Headers)
	}
	if got.Stream.Usage != nil && got.Stream.Usage["total_tokens"] != 89 {
		t.Errorf("stream usage %v, want the last round's", got.Stream.Usage)
	}
	reqs := e.up.Requests()
	if len(reqs) != 4 {
		t.Fatalf("upstream got %d requests, want 4 (two per client request)", len(reqs))
	}
	for _, i := range []int{1, 3} {
		msgs := reqs[i].Messages()
		n := len(msgs)
		asst, tool := msgs[n-2], msgs[n-1]
		calls, _ := asst["tool_calls"].([]any)
		if asst["role"] != "assistant" || len(calls) != 1 {
			t.Fatalf("round 2 request %d: no assistant tool call: %s", i, reqs[i].Body)
		}
		fn := calls[0].(map[string]any)["function"].(map[string]any)
		if fn["name"] != "load_skill" || fn["arguments"] != `{"skill_id":"csv-report"}` {
			t.Errorf("assistant call %v", fn)
		}
		if tool["role"] != "tool" || tool["tool_call_id"] != "call_ls_1" ||
			!strings.Contains(content(tool), `<skill_context id="csv-report">`) || !strings.Contains(content(tool), "<execution_directive>") {
			t.Errorf("load_skill result not the envelope: %.300v", tool)
		}
		checkRewritten(t, reqs[i], 1, "")
	}
}

// An upstream that ignores stream:true answers the streamed request's
// rounds with JSON: the OpenAI SDK's stream helper still reads a whole
// completion (finalChatCompletion), without the proxy's load_skill call,
// with the last round's usage.
func TestSDKStreamAnsweredWithJSON(t *testing.T) {
	e := setup(t)
	load := fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_ls_1", Name: "load_skill", Arguments: `{"skill_id":"csv-report"}`}},
		Usage: &fakeai.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55}}
	done := fakeai.Turn{Content: "Loaded the csv-report skill; here is your report.", Usage: &fakeai.Usage{PromptTokens: 80, CompletionTokens: 9, TotalTokens: 89}}
	loadJSON, doneJSON := load, done
	loadJSON.Content = "Let me load the skill. "
	loadJSON.IgnoreStream, doneJSON.IgnoreStream = true, true
	e.up.Script(fakeai.Reply(load), fakeai.Reply(done), fakeai.Reply(loadJSON), fakeai.Reply(doneJSON))
	var got struct {
		Stream struct {
			Content string             `json:"content"`
			Usage   map[string]float64 `json:"usage"`
		} `json:"stream"`
	}
	e.run(t, "load-skill.mjs", &got) // asserts the streamed content, no tool call, finish_reason stop
	if got.Stream.Usage["total_tokens"] != 89 {
		t.Errorf("stream usage %v, want the last round's", got.Stream.Usage)
	}
	if reqs := e.up.Requests(); len(reqs) != 4 {
		t.Fatalf("upstream got %d requests, want 4 (two per client request)", len(reqs))
	}
}
