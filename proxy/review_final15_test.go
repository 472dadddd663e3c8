package proxy

import (
	"fmt"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// Claude Code with extended thinking sends max_tokens 32000 and
// thinking.budget_tokens 31999, with the interleaved-thinking beta, under
// which the API takes a budget_tokens above max_tokens (it is the budget
// of the whole turn). The budget rule (Min = budget_tokens+1) then leaves
// no room for any follow-up: the first round that used a single output
// token ends the message at "max_tokens" and load_skill is never answered.
func TestReviewFinal15ThinkingBudgetBlocksEveryFollowUp(t *testing.T) {
	for _, stream := range []bool{false, true} {
		h := newHarness(t, nil)
		h.up.Script(
			// With thinking on, the model's turn opens with a thinking block.
			fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "a pdf skill fits"}, ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
				Usage: &fakeai.Usage{PromptTokens: 500, CompletionTokens: 40}}),
			fakeai.Reply(fakeai.Turn{Content: "final answer", Usage: &fakeai.Usage{PromptTokens: 600, CompletionTokens: 20}}),
		)
		body := `{"model":"m","max_tokens":32000,` + map[bool]string{true: `"stream":true,`}[stream] +
			`"thinking":{"type":"enabled","budget_tokens":31999},"messages":[{"role":"user","content":"make me a pdf"}]}`
		hdr := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01", "anthropic-beta": "interleaved-thinking-2025-05-14"}
		resp, b := h.do("POST", "/v1/messages", body, hdr)
		if resp.StatusCode != 200 {
			t.Fatalf("stream=%v: status %d: %s", stream, resp.StatusCode, b)
		}
		if n := len(h.up.Requests()); n != 2 {
			t.Errorf("stream=%v: %d upstream requests, want 2 (the skill loaded, 31960 of 32000 output tokens left); the client got:\n%s", stream, n, b)
		}
		if !stream && gjson.GetBytes(b, "stop_reason").Str == "max_tokens" {
			t.Errorf("stream=%v: the message ended at max_tokens after 40 of 32000 output tokens", stream)
		}
		if rs := h.up.Requests(); len(rs) == 2 {
			// The follow-up carries what is left, and the client's thinking
			// budget: interleaved thinking takes one above max_tokens, and
			// a changed budget would invalidate the message cache (each
			// hidden round writing the conversation to it again).
			if mt, bt := gjson.GetBytes(rs[1].Body, "max_tokens").Int(), gjson.GetBytes(rs[1].Body, "thinking.budget_tokens").Int(); mt != 31960 || bt != 31999 {
				t.Errorf("stream=%v: follow-up max_tokens %d, thinking.budget_tokens %d; want 31960 and 31999", stream, mt, bt)
			}
		}
	}
}

// Without interleaved thinking the API refuses budget_tokens >= max_tokens,
// so the follow-up's budget goes below what is left; with it, the budget
// stays and a follow-up runs with less than 1,025 tokens left.
func TestThinkingBudgetFollowUpWithAndWithoutInterleaving(t *testing.T) {
	for _, tc := range []struct {
		name, beta string
		max        int64 // the client's max_tokens; the first round uses 40
		wantRounds int
		wantBudget int64 // the follow-up's thinking.budget_tokens
	}{
		{"no beta", "", 32000, 2, 31959},
		{"interleaved among other betas", "fine-grained-tool-streaming-2025-05-14, interleaved-thinking-2025-05-14", 32000, 2, 31999},
		{"no beta, 1,000 left: no follow-up", "", 1040, 1, 0},
		{"interleaved, 1,000 left", "interleaved-thinking-2025-05-14", 1040, 2, 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(
				fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "a pdf skill fits"}, ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
					Usage: &fakeai.Usage{PromptTokens: 500, CompletionTokens: 40}}),
				fakeai.Reply(fakeai.Turn{Content: "final answer", Usage: &fakeai.Usage{PromptTokens: 600, CompletionTokens: 20}}),
			)
			budget := min(tc.max-1, 31999)
			if tc.max < 2000 {
				budget = 1024
			}
			body := fmt.Sprintf(`{"model":"m","max_tokens":%d,"thinking":{"type":"enabled","budget_tokens":%d},"messages":[{"role":"user","content":"make me a pdf"}]}`, tc.max, budget)
			hdr := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
			if tc.beta != "" {
				hdr["anthropic-beta"] = tc.beta
			}
			if resp, b := h.do("POST", "/v1/messages", body, hdr); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			rs := h.up.Requests()
			if len(rs) != tc.wantRounds {
				t.Fatalf("%d upstream requests, want %d", len(rs), tc.wantRounds)
			}
			if len(rs) == 2 {
				if bt := gjson.GetBytes(rs[1].Body, "thinking.budget_tokens").Int(); bt != tc.wantBudget {
					t.Errorf("follow-up thinking.budget_tokens %d, want %d", bt, tc.wantBudget)
				}
				if mt := gjson.GetBytes(rs[1].Body, "max_tokens").Int(); mt != tc.max-40 {
					t.Errorf("follow-up max_tokens %d, want %d", mt, tc.max-40)
				}
			}
		})
	}
}

// max_tool_calls spent: the follow-up drops the built-in tools, but keeps
// a tool_choice that names one ({"type":"web_search"}, or allowed_tools
// listing it): the API refuses a tool_choice naming a tool the request
// does not offer, so the client's request fails on the hidden round.
func TestReviewFinal15MaxToolCallsKeepsToolChoiceOfRemovedTool(t *testing.T) {
	h := newHarness(t, nil)
	round1 := `{"id":"resp_a","object":"response","status":"completed","output":[` +
		`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}` +
		`,{"type":"function_call","id":"fc_1","call_id":"call_l","name":"load_skill","arguments":"{\"skill_id\":\"demo/pdf\"}","status":"completed"}],` +
		`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`
	round2 := `{"id":"resp_b","object":"response","status":"completed","output":[` +
		`{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}],` +
		`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`
	h.up.Script(fakeai.Raw(200, "application/json", round1), fakeai.Raw(200, "application/json", round2))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","max_tool_calls":1,"tools":[{"type":"web_search"}],"tool_choice":{"type":"web_search"},"input":"search the web and make me a pdf"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want 2", len(reqs))
	}
	tools := gjson.GetBytes(reqs[1].Body, "tools").Raw
	if tc := gjson.GetBytes(reqs[1].Body, "tool_choice"); tc.Get("type").Str == "web_search" && !gjson.GetBytes(reqs[1].Body, `tools.#(type=="web_search")`).Exists() {
		t.Errorf("the follow-up's tool_choice %s names a tool its tools %s no longer offer (the API answers 400)", tc.Raw, tools)
	}
}
