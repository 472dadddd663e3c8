package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
)

func TestChatRewrittenAndDecisionHeaders(t *testing.T) {
	h := newHarness(t, nil)
	resp, b := h.chat(simpleChat, map[string]string{"Authorization": "Bearer k"})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	for k, want := range map[string]string{
		HeaderSelected: "demo/pdf", HeaderStrategy: "hybrid", HeaderFallback: "false",
		HeaderAddedTokens: "84", HeaderToolRounds: "0", HeaderError: "",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if resp.Header.Get(HeaderArm) != "" {
		t.Error("arm header without A/B")
	}
	m := decodeJSON(t, b)
	if m["object"] != "chat.completion" {
		t.Fatalf("answer: %s", b)
	}
	got := h.up.Requests()[0]
	msgs := got.Messages()
	if len(msgs) != 3 || msgs[0]["content"] != "CATALOG" || !strings.Contains(msgs[2]["content"].(string), "demo/pdf") {
		t.Fatalf("upstream did not get the rewrite: %s", got.Body)
	}
	if names := got.ToolNames(); len(names) != 1 || names[0] != "load_skill" {
		t.Fatalf("tools %v", names)
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
}

func TestChatOverridesFromHeaders(t *testing.T) {
	h := newHarness(t, nil)
	resp, b := h.chat(simpleChat, map[string]string{
		HeaderStrategy: "BM25", HeaderTopK: "0", HeaderDisable: "true", HeaderCatalog: "enabled",
	})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	ov := h.rw.overrides()[0]
	if ov.Strategy != router.StrategyBM25 || ov.TopK == nil || *ov.TopK != 0 || !ov.Disable || ov.CatalogMode != router.CatalogEnabled {
		t.Fatalf("overrides %+v", ov)
	}
	// Disabled: nothing selected, no strategy ran.
	if resp.Header.Get(HeaderSelected) != "" || resp.Header.Get(HeaderStrategy) != "" {
		t.Fatalf("headers %v", resp.Header)
	}
}

func TestChatRewriteErrorForwardsOriginal(t *testing.T) {
	for _, stream := range []bool{false, true} {
		h := newHarness(t, nil)
		h.rw.err = errBoom
		body := simpleChat
		if stream {
			body = streamChat("")
		}
		resp, b := h.chat(body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if got := resp.Header.Get(HeaderError); got != "boom" {
			t.Fatalf("X-Skillrouter-Error = %q", got)
		}
		if got := string(h.up.Requests()[0].Body); got != body {
			t.Fatalf("upstream body %q, want the original %q", got, body)
		}
		if stream {
			a := assemble(t, b)
			if a.Content != "ok" || a.Done != 1 {
				t.Fatalf("stream %+v", a)
			}
		}
	}
}

func TestToolLoopNonStreaming(t *testing.T) {
	t.Run("load_skill answered server-side", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{Content: "Loading.", ToolCalls: []fakeai.Call{{ID: "call_1", Name: "load_skill", Arguments: `{"skill_id":"demo/xlsx"}`}},
				Usage: &fakeai.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}}),
			fakeai.Reply(fakeai.Turn{Content: "Here is your spreadsheet.",
				Usage: &fakeai.Usage{PromptTokens: 300, CompletionTokens: 20, TotalTokens: 320}}),
		)
		resp, b := h.chat(simpleChat, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		m := decodeJSON(t, b)
		msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		if msg["content"] != "Loading.Here is your spreadsheet." || msg["tool_calls"] != nil {
			t.Fatalf("client got %s", b)
		}
		// The client is told the last round's usage (the context it read);
		// the access log keeps what the request cost, every round summed.
		u := m["usage"].(map[string]any)
		if u["prompt_tokens"] != 300.0 || u["completion_tokens"] != 20.0 || u["total_tokens"] != 320.0 {
			t.Fatalf("usage %v, want the last round's", u)
		}
		mustContain(t, h.logText(), `"usage_total":{"completion_tokens":30,"prompt_tokens":400,"total_tokens":430}`)
		if got := resp.Header.Get(HeaderUsageTotal); got != `{"completion_tokens":30,"prompt_tokens":400,"total_tokens":430}` {
			t.Errorf("%s %q, want the rounds summed", HeaderUsageTotal, got)
		}
		if resp.Header.Get(HeaderToolRounds) != "1" || resp.Header.Get(HeaderRoundsExceeded) != "" {
			t.Fatalf("headers %v", resp.Header)
		}
		reqs := h.up.Requests()
		if len(reqs) != 2 {
			t.Fatalf("upstream got %d requests", len(reqs))
		}
		second := reqs[1].Messages()
		n := len(second)
		asst, tool := second[n-2], second[n-1]
		calls := asst["tool_calls"].([]any)
		if asst["role"] != "assistant" || asst["content"] != "Loading." || len(calls) != 1 ||
			calls[0].(map[string]any)["id"] != "call_1" {
			t.Fatalf("assistant message %v", asst)
		}
		if tool["role"] != "tool" || tool["tool_call_id"] != "call_1" || !strings.Contains(tool["content"].(string), `id="demo/xlsx"`) {
			t.Fatalf("tool message %v", tool)
		}
		if got := h.rw.sessions[0].calls; len(got) != 1 || got[0] != `load_skill{"skill_id":"demo/xlsx"}` {
			t.Fatalf("session calls %v", got)
		}
	})

	t.Run("client tools returned untouched", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}))
		body := `{"model":"m","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"weather?"}]}`
		resp, b := h.chat(body, nil)
		m := decodeJSON(t, b)
		ch := m["choices"].([]any)[0].(map[string]any)
		calls := ch["message"].(map[string]any)["tool_calls"].([]any)
		if resp.StatusCode != 200 || len(calls) != 1 || ch["finish_reason"] != "tool_calls" ||
			calls[0].(map[string]any)["function"].(map[string]any)["name"] != "get_weather" {
			t.Fatalf("client got %s", b)
		}
		if len(h.up.Requests()) != 1 {
			t.Fatal("a client tool call must not loop")
		}
		if names := h.up.Requests()[0].ToolNames(); strings.Join(names, ",") != "get_weather,load_skill" {
			t.Fatalf("client tool not kept: %v", names)
		}
	})

	t.Run("mixed turn: proxy calls first, client calls in the next answer", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{
				{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
				{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/weather"}`},
			}}),
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_w2", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}),
		)
		_, b := h.chat(simpleChat, nil)
		reqs := h.up.Requests()
		if len(reqs) != 2 {
			t.Fatalf("upstream got %d requests", len(reqs))
		}
		msgs := reqs[1].Messages()
		asst := msgs[len(msgs)-2]
		if calls := asst["tool_calls"].([]any); len(calls) != 1 || calls[0].(map[string]any)["id"] != "call_l" {
			t.Fatalf("follow-up assistant message must hold only the proxy's call: %v", asst)
		}
		m := decodeJSON(t, b)
		calls := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)
		if len(calls) != 1 || calls[0].(map[string]any)["id"] != "call_w2" {
			t.Fatalf("client got %s", b)
		}
	})

	t.Run("round limit", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MaxToolRounds = 2 })
		for i := 0; i < 3; i++ {
			h.up.Script(fakeai.Reply(fakeai.Turn{Content: "again", ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"x"}`}},
				Usage: &fakeai.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}}))
		}
		resp, b := h.chat(simpleChat, nil)
		if resp.StatusCode != 200 || resp.Header.Get(HeaderRoundsExceeded) != "true" || resp.Header.Get(HeaderToolRounds) != "2" {
			t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
		}
		if n := len(h.up.Requests()); n != 3 {
			t.Fatalf("upstream got %d requests, want 3 (2 rounds + final)", n)
		}
		m := decodeJSON(t, b)
		ch := m["choices"].([]any)[0].(map[string]any)
		msg := ch["message"].(map[string]any)
		// Each round's text, as a stream shows it.
		if msg["tool_calls"] != nil || ch["finish_reason"] != "stop" || msg["content"] != "againagainagain" {
			t.Fatalf("last answer must come back without the proxy's calls: %s", b)
		}
		if m["usage"].(map[string]any)["total_tokens"] != 2.0 {
			t.Fatalf("usage %v, want the last round's", m["usage"])
		}
		mustContain(t, h.logText(), `"tool_rounds_exhausted":true`)
	})

	t.Run("upstream error in a later round is passed through", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"x"}`}}}),
			fakeai.Status(429, "slow down"),
		)
		resp, b := h.chat(simpleChat, nil)
		if resp.StatusCode != 429 || !strings.Contains(string(b), "slow down") {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	})

	t.Run("follow-up failure returns the answer with an error header", func(t *testing.T) {
		h := newHarness(t, nil)
		h.rw.followErr = errBoom
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "hmm", ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{}`}}}))
		resp, b := h.chat(simpleChat, nil)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get(HeaderError), "tool loop: ") {
			t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
		}
		m := decodeJSON(t, b)
		msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		if msg["content"] != "hmm" || msg["tool_calls"] != nil {
			t.Fatalf("client got %s", b)
		}
	})
}

// X-Skillrouter-Fallback-Reason carries the short code; the full reason,
// with the embedder's URL, stays in the log and the explain endpoint.
func TestFallbackReasonHeader(t *testing.T) {
	const dial = `embedder ollama: Post "http://127.0.0.1:9/api/embed": dial tcp 127.0.0.1:9: connect: connection refused`
	tests := []struct {
		name     string
		code     router.FallbackCode
		reason   string
		stream   bool
		fallback string // X-Skillrouter-Fallback
	}{
		{"embedder down", router.FallbackEmbedderUnavailable, dial, false, "true"},
		{"embedder down, stream", router.FallbackEmbedderUnavailable, dial, true, "true"},
		{"embedder slow", router.FallbackEmbedderTimeout, "embedder ollama exceeded its 250ms latency budget", false, "true"},
		{"vectors missing", router.FallbackVectorsUnavailable, "vector index unavailable: " + dial, false, "true"},
		{"no fallback", "", "", false, "false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.rw.fallback, h.rw.reason = tc.code, tc.reason
			body := simpleChat
			if tc.stream {
				body = streamChat("")
			}
			resp, b := h.chat(body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if got := resp.Header.Get(HeaderFallback); got != tc.fallback {
				t.Errorf("%s = %q, want %q", HeaderFallback, got, tc.fallback)
			}
			if got := resp.Header.Get(HeaderFallbackReason); got != string(tc.code) {
				t.Errorf("%s = %q, want %q", HeaderFallbackReason, got, tc.code)
			}
			for k, v := range resp.Header {
				if s := strings.Join(v, ","); strings.Contains(s, "127.0.0.1") || strings.Contains(s, "http://") {
					t.Errorf("header %s leaks internals: %q", k, s)
				}
			}
			if tc.reason == "" {
				return
			}
			mustContain(t, h.logText(), jsonString(tc.reason)) // the log keeps the details
			_, b = h.do("POST", "/v1/skills/route", simpleChat, nil)
			var ex struct {
				Decision router.Decision `json:"decision"`
			}
			if err := json.Unmarshal(b, &ex); err != nil {
				t.Fatal(err)
			}
			if ex.Decision.FallbackReason != tc.reason || ex.Decision.FallbackCode != tc.code {
				t.Errorf("explain decision: reason %q code %q", ex.Decision.FallbackReason, ex.Decision.FallbackCode)
			}
		})
	}
}
