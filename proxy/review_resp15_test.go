package proxy

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// Review resp15: a streamed background response (background: true,
// stream: true) is the one a client resumes or polls by the id of its
// response.created event: OpenAI's background-mode guide says to save that
// id and reconnect with GET /v1/responses/{id}?stream=true&starting_after=N
// (sequence numbers) when the connection drops, or poll GET
// /v1/responses/{id}, and to stop it with POST /v1/responses/{id}/cancel.
// All three pass through to the upstream, where no tool loop can run, as
// for the non-streaming background request the proxy already forwards
// without its tools (docs/proxy.md). The streamed one still gets load_skill:
// after a hidden round the id in response.created names the first round's
// response, whose stored output is the proxy's load_skill call and nothing
// of the answer; the answer lives in another response the client never saw
// created (and a cancel of the client's id does not stop it).
func TestReviewResp15BackgroundStreamResumableByCreatedID(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}),
	)
	body := `{"model":"m","background":true,"stream":true,"input":"make me a pdf"}`
	resp, b := h.do("POST", "/v1/responses", body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var created string
	for _, d := range sseData(t, b) {
		if gjson.Get(d, "type").Str == "response.created" {
			created = gjson.Get(d, "response.id").Str
		}
	}
	if created == "" {
		t.Fatalf("no response.created in %s", b)
	}
	// What a client that lost the connection (or polls) reads back.
	resp, got := h.do("GET", "/v1/responses/"+created, "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", created, resp.StatusCode, got)
	}
	if strings.Contains(string(got), "load_skill") || !strings.Contains(string(got), "final answer") {
		t.Errorf("the background response the client holds (%s, from response.created) reads back as the proxy's hidden round, not the answer:\n%.600s", created, got)
	}
	if names := h.up.Requests()[0].ToolNames(); len(names) > 0 {
		t.Errorf("a streamed background request went upstream with the proxy's tools %v (the non-streaming one goes without)", names)
	}
}
