package proxy

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

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
		// Responses allows an empty output, but Codex CLI then shows an
		// empty turn with no word of why.
		{"responses", "/v1/responses", `{"model":"m","store":false,"input":"make me a pdf"}`, nil},
		{"responses stream", "/v1/responses", `{"model":"m","store":false,"stream":true,"input":"make me a pdf"}`, nil},
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
			if strings.HasPrefix(tc.name, "responses") {
				final := b
				if strings.HasSuffix(tc.name, "stream") {
					var done string
					for _, d := range sseData(t, b) {
						if gjson.Get(d, "type").Str == "response.completed" {
							done = d
						}
					}
					if got := gjson.Get(done, `response.output.#(type=="message").content.0.text`).String(); got != wire.EmptyAnswerText {
						t.Errorf("response.completed lists no message with the text (%q): %s", got, done)
					}
					for _, ev := range []string{"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done"} {
						if !strings.Contains(string(b), "event: "+ev+"\n") {
							t.Errorf("no %s event:\n%s", ev, b)
						}
					}
					return
				}
				if got := gjson.GetBytes(final, "output.#(type==\"message\").content.0.text").String(); got != wire.EmptyAnswerText {
					t.Errorf("output message text %q:\n%s", got, final)
				}
			}
		})
	}
}
