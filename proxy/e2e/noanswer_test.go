package e2e

import (
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/wire"
)

// At the round limit, a Responses answer left with nothing once the proxy's
// calls are dropped gets an assistant message saying so; the OpenAI SDK
// reads it in every mode (its stream's sequence numbers, deltas and final
// text agree: responses.mjs asserts them).
func TestRealClientResponsesRoundLimitMessage(t *testing.T) {
	for _, mode := range []string{"create", "stream", "helper"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := setup(t, func(c *proxy.Config) { c.MaxToolRounds = 1 })
			for range 2 {
				e.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`}}}))
			}
			r := runNode(t, "responses.mjs", e.proxy.URL, nil, "plain", mode)
			if r.Text != wire.EmptyAnswerText || len(e.up.Requests()) != 2 {
				t.Fatalf("got %+v; %d upstream requests", r, len(e.up.Requests()))
			}
			for _, call := range r.ToolCalls {
				if strings.Contains(call.Name, "load_skill") {
					t.Fatalf("the client saw the proxy's call: %+v", r)
				}
			}
		})
	}
}
