package proxy

import (
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
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
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
	}
}
