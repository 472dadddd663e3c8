package proxy

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// The client's output-token cap bounds the whole answer: a follow-up
// carries what the earlier rounds left of it (wire.Budget), and when too
// little is left for a valid request the answer ends as the API ends one
// at its cap, without the proxy's calls and without another round.
func TestBudgetFollowUpCarriesWhatIsLeft(t *testing.T) {
	for _, tc := range []struct {
		name, path, body, key string
		want                  int64
	}{
		{"chat max_completion_tokens", "/v1/chat/completions", `{"model":"m","max_completion_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, "max_completion_tokens", 60},
		{"chat legacy max_tokens", "/v1/chat/completions", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, "max_tokens", 60},
		{"chat streamed with usage", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, "max_tokens", 60},
		// The proxy asks for the usage itself (see usage_test.go).
		{"chat streamed without usage", "/v1/chat/completions", `{"model":"m","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, "max_tokens", 60},
		{"responses", "/v1/responses", `{"model":"m","max_output_tokens":100,"input":"make me a pdf"}`, "max_output_tokens", 60},
		{"responses streamed", "/v1/responses", `{"model":"m","stream":true,"max_output_tokens":100,"input":"make me a pdf"}`, "max_output_tokens", 60},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, "max_tokens", 60},
		{"messages streamed", "/v1/messages", `{"model":"m","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, "max_tokens", 60},
	} {
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
				Usage: &fakeai.Usage{PromptTokens: 500, CompletionTokens: 40}}),
			fakeai.Reply(fakeai.Turn{Content: "final answer", Usage: &fakeai.Usage{PromptTokens: 600, CompletionTokens: 20}}),
		)
		resp, b := h.do("POST", tc.path, tc.body, budgetHeaders(tc.path))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", tc.name, resp.StatusCode, b)
		}
		reqs := h.up.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%s: %d upstream requests, want 2", tc.name, len(reqs))
		}
		if got := gjson.GetBytes(reqs[1].Body, tc.key).Int(); got != tc.want {
			t.Errorf("%s: follow-up %s %d, want %d", tc.name, tc.key, got, tc.want)
		}
		if !strings.Contains(tc.name, "streamed") && tc.path == "/v1/responses" {
			if got := gjson.GetBytes(b, "max_output_tokens").Int(); got != 100 {
				t.Errorf("%s: the response echoes max_output_tokens %d, want the client's 100", tc.name, got)
			}
		}
	}
}

func TestBudgetSpentEndsAtTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
		used             int
		want             []string // in the client's answer
	}{
		{"chat", "/v1/chat/completions", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, 100,
			[]string{`"finish_reason":"length"`, `"completion_tokens":100`, "stopped short"}},
		{"chat streamed", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, 100,
			[]string{`"finish_reason":"length"`, `"completion_tokens":100`, "stopped short", "data: [DONE]"}},
		// The API refuses max_output_tokens below 16: 10 left is too little.
		{"responses", "/v1/responses", `{"model":"m","max_output_tokens":100,"input":"make me a pdf"}`, 90,
			[]string{`"status":"incomplete"`, `"incomplete_details":{"reason":"max_output_tokens"}`, `"max_output_tokens":100`, `"output_tokens":90`, "stopped short"}},
		{"responses streamed", "/v1/responses", `{"model":"m","stream":true,"max_output_tokens":100,"input":"make me a pdf"}`, 90,
			[]string{"event: response.incomplete\n", `"type":"response.incomplete"`, `"incomplete_details":{"reason":"max_output_tokens"}`, `"max_output_tokens":100`, "stopped short"}},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, 100,
			[]string{`"stop_reason":"max_tokens"`, "stopped short"}},
		// budget_tokens must stay below max_tokens: 1020 left cannot carry 1024.
		{"messages thinking", "/v1/messages", `{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"make me a pdf"}]}`, 980,
			[]string{`"stop_reason":"max_tokens"`, "stopped short"}},
		{"messages streamed", "/v1/messages", `{"model":"m","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, 100,
			[]string{`"stop_reason":"max_tokens"`, "stopped short", "message_stop"}},
	} {
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
				Usage: &fakeai.Usage{PromptTokens: 500, CompletionTokens: tc.used}}),
			fakeai.Reply(fakeai.Turn{Content: "final answer"}),
		)
		resp, b := h.do("POST", tc.path, tc.body, budgetHeaders(tc.path))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", tc.name, resp.StatusCode, b)
		}
		if n := len(h.up.Requests()); n != 1 {
			t.Errorf("%s: %d upstream requests, want 1: nothing valid was left for a follow-up", tc.name, n)
		}
		if !strings.Contains(tc.name, "streamed") {
			// Nothing would read the results: the calls are not run (a stream
			// decides at the round's end, before any call is run too).
			for _, sess := range h.rw.sessions {
				if len(sess.calls) > 0 {
					t.Errorf("%s: the proxy ran %v although no round could read the results", tc.name, sess.calls)
				}
			}
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: the answer lacks %s:\n%s", tc.name, w, b)
			}
		}
		if strings.Contains(string(b), "load_skill") {
			t.Errorf("%s: the proxy's call reached the client:\n%s", tc.name, b)
		}
	}
}

// budgetHeaders are the headers the fake upstream requires of path's API.
func budgetHeaders(path string) map[string]string {
	if path == "/v1/messages" {
		return map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	}
	return nil
}

// llama.cpp's and LM Studio's "no limit", max_tokens -1, is no budget: the
// request is routed, its hidden round runs, and each round goes out with
// -1 as the client sent it.
func TestChatMaxTokensMinusOneIsNoLimit(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
			Usage: &fakeai.Usage{PromptTokens: 500, CompletionTokens: 100}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}),
	)
	resp, b := h.do("POST", "/v1/chat/completions", `{"model":"m","max_tokens":-1,"messages":[{"role":"user","content":"make me a pdf"}]}`, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "final answer") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want the hidden round's 2", len(reqs))
	}
	for i, r := range reqs {
		if !strings.Contains(string(r.Body), `"max_tokens":-1`) {
			t.Errorf("round %d: %s", i, r.Body)
		}
	}
}
