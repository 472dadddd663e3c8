package proxy

import (
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// A stateless Responses client (store: false) that did not ask for
// reasoning.encrypted_content: the hidden round's reasoning item comes back
// without it, and the follow-up sends it as input, which the API rejects
// ("Item with id 'rs_...' not found. Items are not persisted when `store`
// is set to false.").
func TestResponsesStoreFalseReasoningWithoutEncryptedContent(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "I need the pdf skill"},
			ToolCalls: []fakeai.Call{{ID: "call_1", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "done"}),
	)
	for _, stream := range []bool{false, true} {
		body := `{"model":"m","store":false,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `,"reasoning":{"effort":"low"},"input":"make me a pdf"}`
		resp, b := h.do("POST", "/v1/responses", body, nil)
		t.Logf("stream=%v status %d: %.600s", stream, resp.StatusCode, b)
		if resp.StatusCode != 200 || strings.Contains(string(b), "not persisted") {
			t.Errorf("stream=%v: the follow-up was rejected: %s", stream, b)
		}
		h.up.Reset()
		h.up.Script(
			fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "I need the pdf skill"},
				ToolCalls: []fakeai.Call{{ID: "call_1", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
			fakeai.Reply(fakeai.Turn{Content: "done"}),
		)
	}
}
