package proxy

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// Regression tests from the review of 4b77b39 (skills remembered for state
// stored upstream, presence.go).

// POST /v1/responses/input_tokens goes through the rewrite (it counts what
// a responses.create would send) but stores nothing upstream: the count
// never adds its input to the conversation it names. A client that counts
// a turn before sending it must not have the skills the count auto-loaded
// remembered as held by the conversation, or the turn itself does not get
// them (and they count as active for allowed-tools and tier-3 tools).
func TestReviewPresenceInputTokensRecordsNothing(t *testing.T) {
	h := newHarness(t, nil)
	_, b := h.do("POST", "/v1/conversations", `{}`, nil)
	conv := gjson.GetBytes(b, "id").Str
	if conv == "" {
		t.Fatalf("no conversation: %s", b)
	}
	body := `{"model":"m","conversation":"` + conv + `","input":"make me a pdf"}`
	resp, b := h.do("POST", "/v1/responses/input_tokens", body, nil)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "object").Str != "response.input_tokens" {
		t.Fatalf("count: %d %s", resp.StatusCode, b)
	}
	if got := h.srv.presence.get("conversation " + conv); got != nil {
		t.Errorf("a token count recorded %v as held by conversation %s, which it never wrote to", got, conv)
	}
	// The turn the client counted: its auto-load must not be suppressed.
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "ok"}))
	if resp, b := h.do("POST", "/v1/responses", body, nil); resp.StatusCode != 200 {
		t.Fatalf("turn: %d %s", resp.StatusCode, b)
	}
	ovs := h.rw.overrides()
	if p := ovs[len(ovs)-1].Present; p != nil {
		t.Errorf("the first real turn of the conversation was given Present %v (from the count)", p)
	}
}
func failRewrite(h *harness) map[string]string {
	h.rw.mu.Lock()
	h.rw.err = errNoRewrite
	h.rw.mu.Unlock()
	return nil
}

// The memory is keyed by the upstream's ids alone. A client presenting
// another credential (another tenant's OpenAI key passed through) with a
// response id it does not own is ranked with that conversation's skills:
// the decision headers it gets back (X-Skillrouter-Selected,
// -Added-Tokens, -Tools-Withheld) are computed from another tenant's state
// before the upstream refuses the id. Remembered state should only apply
// to the credential that created it.
func TestReviewPresenceScopedToCredential(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "ok"}))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, map[string]string{"Authorization": "Bearer sk-tenant-a"})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	id := gjson.GetBytes(b, "id").Str
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "ok"}))
	h.do("POST", "/v1/responses", `{"model":"m","previous_response_id":"`+id+`","input":"make me a pdf"}`, map[string]string{"Authorization": "Bearer sk-tenant-b"})
	ovs := h.rw.overrides()
	if got := ovs[len(ovs)-1].Present; got != nil {
		t.Errorf("a request with another credential got tenant A's remembered skills %v for %s", got, id)
	}
}
