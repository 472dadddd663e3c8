package proxy

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// newConversation creates a conversation upstream and returns its id.
func newConversation(t *testing.T, h *harness) string {
	t.Helper()
	resp, b := h.do("POST", "/v1/conversations", `{}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("create conversation: %d %s", resp.StatusCode, b)
	}
	return gjson.GetBytes(b, "id").Str
}

// countIn counts the conversation's items that hold sub.
func countIn(items []string, sub string) int {
	n := 0
	for _, it := range items {
		if strings.Contains(it, sub) {
			n++
		}
	}
	return n
}

// In a conversation, each response adds its input and output items once
// it completes. When a hidden round succeeded (its items are in the
// conversation) and a later one is refused, the client gets an error and
// retries the turn: the proxy takes back what its rounds added, so the
// retry does not leave the turn's input (and the first round's items)
// twice in the conversation.
func TestResponsesConversationFailedTurnTakenBack(t *testing.T) {
	load := fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}})
	refused := fakeai.Status(400, "Your input exceeds the context window of this model.")
	// A round that ends failed is over upstream: it adds nothing to the
	// conversation and will not complete later, so the earlier rounds'
	// items are taken back as after a refusal.
	failedStream := fakeai.Reply(fakeai.Turn{Content: "Here is your", Fail: &fakeai.Failure{After: 4, Message: "The server had an error while processing your request."}})
	// A stream ended by an error event (one of the Responses stream's
	// terminal events, as response.failed is) is over upstream just as well.
	errorEvent := fakeai.Reply(fakeai.Turn{Content: "Here is your", Fail: &fakeai.Failure{After: 4, Event: "error", Message: "The server had an error while processing your request."}})
	failedJSON := fakeai.Raw(200, "application/json", `{"id":"resp_failed","object":"response","created_at":1741476542,"status":"failed",`+
		`"error":{"code":"server_error","message":"The server had an error while processing your request."},"incomplete_details":null,`+
		`"model":"m","output":[],"usage":null}`)
	for _, tc := range []struct {
		name      string
		stream    bool
		followErr bool // the follow-up cannot be built (no second request)
		script    []fakeai.Responder
	}{
		{"json, second round refused", false, false, []fakeai.Responder{load, refused}},
		{"stream, second round refused", true, false, []fakeai.Responder{load, refused}},
		{"json, third round refused", false, false, []fakeai.Responder{load,
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l2", Name: "load_skill", Arguments: `{"skill_id":"demo/xlsx"}`}}}), refused}},
		{"stream, follow-up not built", true, true, []fakeai.Responder{load}},
		{"stream, second round failed", true, false, []fakeai.Responder{load, failedStream}},
		{"stream, second round ended by an error event", true, false, []fakeai.Responder{load, errorEvent}},
		{"json, second round failed", false, false, []fakeai.Responder{load, failedJSON}},
		{"stream answered as JSON, second round failed", true, false, []fakeai.Responder{load, failedJSON}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			cid := newConversation(t, h)
			turn := `{"model":"m","stream":` + strconv.FormatBool(tc.stream) + `,"conversation":"` + cid + `","input":[{"role":"user","content":"make me a pdf"}]}`
			if tc.followErr {
				h.rw.followErr = errBoom
			}
			h.up.Script(tc.script...)
			resp, b := h.do("POST", "/v1/responses?api-version=v1", turn, map[string]string{"Authorization": "Bearer sk-client", "Idempotency-Key": "k1"})
			if failed := resp.StatusCode != 200 || strings.Contains(string(b), "response.failed") || strings.Contains(string(b), "event: error") ||
				gjson.GetBytes(b, "status").Str == "failed"; !failed {
				t.Fatalf("the turn did not fail: %d %s", resp.StatusCode, b)
			}
			finish(t, h)
			if items := h.up.Conversation(cid); len(items) != 0 {
				t.Errorf("the failed turn left %d items in the conversation:\n%s", len(items), strings.Join(items, "\n"))
			}
			for _, d := range h.up.Deletes() {
				if !strings.HasPrefix(d.Path, "/v1/conversations/"+cid+"/items/") || d.Header.Get("Authorization") != "Bearer sk-client" ||
					d.RawQuery != "api-version=v1" || d.Header.Get("Idempotency-Key") != "" {
					t.Errorf("DELETE %s?%s with Authorization %q, Idempotency-Key %q", d.Path, d.RawQuery, d.Header.Get("Authorization"), d.Header.Get("Idempotency-Key"))
				}
			}
			if m := metricsText(h); !strings.Contains(m, `skillrouter_conversation_items_deleted_total{outcome="deleted"}`) {
				t.Errorf("not counted:\n%s", grepLines(m, "conversation_items"))
			}
			// The client retries the turn, which succeeds (and needs no
			// background work: the server is finished): the conversation
			// holds the turn once.
			h.rw.followErr = nil
			h.up.Script(load, fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."}))
			resp, b = h.do("POST", "/v1/responses", turn, nil)
			if resp.StatusCode != 200 || !strings.Contains(string(b), "Here is your pdf.") {
				t.Fatalf("retry: %d %s", resp.StatusCode, b)
			}
			items := h.up.Conversation(cid)
			if n := countIn(items, "make me a pdf"); n != 1 {
				t.Errorf("the turn's input is %d times in the conversation:\n%s", n, strings.Join(items, "\n"))
			}
		})
	}
}

// What the conversation shows decides: unless its newest items are
// exactly the turn's, nothing is deleted; a deletion that fails stops the
// others (older items stay with their answers). Either way it is counted
// and logged; a turn that succeeds takes nothing back.
func TestResponsesConversationTakeBackLeaves(t *testing.T) {
	load := fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}})
	refused := fakeai.Status(429, "Rate limit reached.")
	for _, tc := range []struct {
		name    string
		script  []fakeai.Responder
		handle  func(cid string) (string, fakeai.Responder)
		left    int    // items left in the conversation
		metric  string // a line of the metric
		logLine string
	}{
		{"another writer's item is the newest", []fakeai.Responder{load, refused},
			func(cid string) (string, fakeai.Responder) {
				return "/v1/conversations/" + cid + "/items", fakeai.Raw(200, "application/json",
					`{"object":"list","data":[{"id":"msg_other","type":"message","role":"user","content":"someone else"},`+
						`{"id":"fc_fake_2_0","type":"function_call","call_id":"call_l","name":"load_skill","arguments":"{}"},`+
						`{"id":"msg_fake_conv_2","type":"message","role":"user","content":"<skill_context id=\"demo/pdf\">BODY</skill_context>"}],`+
						`"first_id":"msg_other","last_id":"msg_fake_conv_2","has_more":true}`)
			}, 3, `{outcome="unmatched"} 3`, "is not the turn's"},
		{"the conversation cannot be read", []fakeai.Responder{load, refused},
			func(cid string) (string, fakeai.Responder) {
				return "/v1/conversations/" + cid + "/items", fakeai.Status(500, "boom")
			}, 3, `{outcome="unmatched"} 3`, "status 500"},
		{"the newest item's deletion fails", []fakeai.Responder{load, refused},
			func(cid string) (string, fakeai.Responder) {
				return "/v1/conversations/" + cid + "/items/fc_fake_2_0", fakeai.Status(500, "boom")
			}, 3, `{outcome="failed"} 3`, "status 500"},
		{"a turn that succeeds", []fakeai.Responder{load, fakeai.Reply(fakeai.Turn{Content: "done"})}, nil, 5, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			cid := newConversation(t, h)
			if tc.handle != nil {
				h.up.Handle(tc.handle(cid))
			}
			h.up.Script(tc.script...)
			h.do("POST", "/v1/responses", `{"model":"m","conversation":"`+cid+`","input":"make me a pdf"}`, nil)
			finish(t, h)
			if items := h.up.Conversation(cid); len(items) != tc.left {
				t.Errorf("%d items left, want %d:\n%s", len(items), tc.left, strings.Join(items, "\n"))
			}
			m := grepLines(metricsText(h), "skillrouter_conversation_items_deleted_total{")
			if tc.metric == "" {
				if m != "" || len(h.up.Deletes()) != 0 {
					t.Errorf("a turn that succeeded took back items: %q, %d deletes", m, len(h.up.Deletes()))
				}
				return
			}
			if !strings.Contains(m, tc.metric) {
				t.Errorf("metric %q not in:\n%s", tc.metric, m)
			}
			if l := h.logText(); !strings.Contains(l, "refused turn's items were left in the conversation") || !strings.Contains(l, tc.logLine) {
				t.Errorf("not logged (%q):\n%s", tc.logLine, l)
			}
		})
	}
}

// Once the server finished, nothing is taken back: counted as skipped.
func TestResponsesConversationTakeBackSkippedAfterFinish(t *testing.T) {
	h := newHarness(t, nil)
	cid := newConversation(t, h)
	finish(t, h)
	h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Status(400, "too long"))
	h.do("POST", "/v1/responses", `{"model":"m","conversation":"`+cid+`","input":"make me a pdf"}`, nil)
	waitFor(t, func() bool {
		return strings.Contains(metricsText(h), `skillrouter_conversation_items_deleted_total{outcome="skipped"} 3`)
	})
	if n := len(h.up.Deletes()); n != 0 {
		t.Errorf("%d deletes after Finish", n)
	}
}

// A round cut on the way (a timeout, a broken stream) may still complete
// upstream and add its items after the proxy took the others back, leaving
// its own without what they answer: nothing is taken back. Nor after a
// round that ended incomplete (max_output_tokens reached): it completed,
// an answer the client keeps, with every item the turn added.
func TestResponsesConversationNotTakenBack(t *testing.T) {
	load := fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}})
	for _, tc := range []struct {
		name   string
		stream bool
		second fakeai.Responder
		left   int // items in the conversation after the turn
	}{
		// The fake adds a cut round's items, as an upstream that completed it.
		{"stream, second round cut", true, fakeai.Reply(fakeai.Turn{Content: "Here is your pdf.", CutAfter: 4}), 5},
		{"json, second round cut", false, fakeai.CutBody(200, `{"id":"resp_cut","object":"resp`), 3},
		{"stream, second round timed out", true, fakeai.Hang(), 3},
		{"json, second round timed out", false, fakeai.Hang(), 3},
		{"stream, second round incomplete", true, fakeai.Reply(fakeai.Turn{Content: "Here is your", Truncated: true}), 5},
		{"json, second round incomplete", false, fakeai.Reply(fakeai.Turn{Content: "Here is your", Truncated: true}), 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.HeaderTimeout, c.UpstreamTimeout = 300*time.Millisecond, 300*time.Millisecond })
			cid := newConversation(t, h)
			h.up.Script(load, tc.second)
			h.do("POST", "/v1/responses", `{"model":"m","stream":`+strconv.FormatBool(tc.stream)+`,"conversation":"`+cid+`","input":"make me a pdf"}`, nil)
			finish(t, h)
			if n := len(h.up.Deletes()); n != 0 {
				t.Errorf("%d items taken back", n)
			}
			if m := grepLines(metricsText(h), "skillrouter_conversation_items_deleted_total{"); m != "" {
				t.Errorf("counted: %s", m)
			}
			if items := h.up.Conversation(cid); len(items) != tc.left {
				t.Errorf("%d items in the conversation, want %d:\n%s", len(items), tc.left, strings.Join(items, "\n"))
			}
		})
	}
}
