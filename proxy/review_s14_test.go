package proxy

import (
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/wire"
)

// Review s14: an answer the upstream stopped short for a reason other than
// the output-token limit is the client's answer too. Responses already
// treats a content filter that way (status "incomplete", reason
// "content_filter": wire/responses/loop.go truncated), but Chat's
// finish_reason "content_filter" ("content was omitted due to a flag from
// our content filters") and Messages' stop_reason "refusal" (streaming
// classifiers intervened; Anthropic: "you must reset the conversation
// context ... attempting to continue without resetting will result in
// continued refusals") still loop: the proxy runs the (possibly cut) call,
// sends the filtered/refused turn back with its result and asks again, and
// the client never sees the stop signal of the first round.
func TestReviewFilteredOrRefusedAnswerRunsNoRound(t *testing.T) {
	for _, tc := range truncCases() {
		var stop string
		switch tc.api {
		case wire.APIChat:
			stop = "content_filter"
		case wire.APIMessages:
			stop = "refusal"
		default:
			continue // Responses: covered by truncated() on status "incomplete"
		}
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(
				fakeai.Reply(fakeai.Turn{FinishReason: stop, ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
				fakeai.Reply(fakeai.Turn{Content: "second round answer"}),
			)
			resp, b := h.do("POST", tc.path, tc.body, tc.hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if n := len(h.up.Requests()); n != 1 {
				t.Errorf("upstream got %d requests for an answer stopped with %q, want 1 (no hidden round)", n, stop)
			}
			if calls := sessionCalls(h); len(calls) > 0 {
				t.Errorf("the proxy ran %v from an answer stopped with %q", calls, stop)
			}
			v := viewAnswer(t, tc, b)
			if v.stop != stop {
				t.Errorf("the client got stop %q, want the upstream's %q:\n%s", v.stop, stop, b)
			}
			if strings.Contains(string(b), "second round") {
				t.Errorf("a second round's answer reached the client:\n%s", b)
			}
		})
	}
}
