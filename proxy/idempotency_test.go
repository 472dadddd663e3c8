package proxy

import (
	"slices"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// Each request the proxy sends on its own (a hidden round's follow-up, the
// stored-state repair's retry) carries a key of its own derived from the
// client's Idempotency-Key; the state read carries none.
func TestIdempotencyKeyPerUpstreamRequest(t *testing.T) {
	loadThenAnswer := []fakeai.Responder{
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_m", Name: "load_skill", Arguments: `{"skill_id":"demo/x"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}),
	}
	const k = "stainless-node-retry-1"
	rounds := []string{k, k + "/round-1", k + "/round-2"}
	tests := []struct {
		name, path, body string
	}{
		{"chat", "/v1/chat/completions", simpleChat},
		{"chat stream", "/v1/chat/completions", streamChat("")},
		{"responses", "/v1/responses", `{"model":"m","input":"make me a pdf"}`},
		{"responses stream", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`},
		{"messages stream", "/v1/messages", `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"make me a pdf"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(loadThenAnswer...)
			hdr := map[string]string{"Idempotency-Key": k, "X-Api-Key": "sk-test", "Anthropic-Version": "2023-06-01"}
			resp, b := h.do("POST", tc.path, tc.body, hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var got []string
			for _, r := range h.up.Requests() {
				if r.Method == "POST" {
					got = append(got, r.Header.Get("Idempotency-Key"))
				}
			}
			if !slices.Equal(got, rounds) {
				t.Errorf("keys %q, want %q", got, rounds)
			}
		})
	}

	t.Run("stored-state repair", func(t *testing.T) {
		h := newHarness(t, nil)
		id := dropOneProxyCall(t, h, "load_skill")
		before := len(h.up.Requests())
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "It is sunny."}))
		resp, b := h.do("POST", "/v1/responses", `{"model":"m","previous_response_id":"`+id+`","tools":`+reviewTools+
			`,"input":[{"type":"function_call_output","call_id":"call_w","output":"sunny"}]}`, map[string]string{"Idempotency-Key": k})
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var got []string
		for _, r := range h.up.Requests()[before:] {
			got = append(got, r.Method+" "+r.Header.Get("Idempotency-Key"))
		}
		if want := []string{"POST " + k, "GET ", "POST " + k + "/repair"}; !slices.Equal(got, want) {
			t.Errorf("requests %q, want %q", got, want)
		}
	})
}
