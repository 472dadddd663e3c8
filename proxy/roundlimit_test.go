package proxy

import (
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/wire"
)

// When the model calls only the proxy's tools up to the round limit, the
// answer the client gets once those calls are dropped must not be empty:
// kept in the client's history, an assistant turn without content makes
// the next request invalid (Anthropic refuses empty content; OpenAI an
// assistant message with neither content nor tool calls).
func TestRoundLimitLeavesNoEmptyAnswer(t *testing.T) {
	anthropic := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	for _, tc := range []struct {
		name, path, body string
		hdr              map[string]string
	}{
		{"chat", "/v1/chat/completions", simpleChat, nil},
		{"chat stream", "/v1/chat/completions", streamChat(""), nil},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"make me a pdf"}]}`, anthropic},
		{"messages stream", "/v1/messages", msgStream, anthropic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxToolRounds = 1 })
			for i := 0; i < 2; i++ {
				h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}))
			}
			resp, b := h.do("POST", tc.path, tc.body, tc.hdr)
			if resp.StatusCode != 200 || resp.Header.Get(HeaderRoundsExceeded) != "true" && resp.Trailer.Get(HeaderRoundsExceeded) != "true" {
				t.Fatalf("status %d, headers %v: %s", resp.StatusCode, resp.Header, b)
			}
			text := string(wire.Quote(wire.EmptyAnswerText))
			if !strings.Contains(string(b), text[1:len(text)-1]) {
				t.Errorf("the answer left without the proxy's calls has no text:\n%s", b)
			}
			if strings.Contains(string(b), "load_skill") {
				t.Errorf("the proxy's call reached the client:\n%s", b)
			}
		})
	}
}
