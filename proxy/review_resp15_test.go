package proxy

import (
	"testing"
	"time"

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
	var created, completed string
	for _, d := range sseData(t, b) {
		switch gjson.Get(d, "type").Str {
		case "response.created":
			created = gjson.Get(d, "response.id").Str
		case "response.completed":
			completed = gjson.Get(d, "response.id").Str
		}
	}
	if created == "" || completed == "" {
		t.Fatalf("no response.created or response.completed in %s", b)
	}
	if created != completed {
		// What a client that lost the connection (or polls) reads back.
		_, got := h.do("GET", "/v1/responses/"+created, "", nil)
		t.Errorf("the background response the client saves from response.created (%s) is not the one that answers (%s); it reads back as the proxy's hidden round:\n%.400s", created, completed, got)
	}
	if names := h.up.Requests()[0].ToolNames(); len(names) > 0 {
		t.Errorf("a streamed background request went upstream with the proxy's tools %v (the non-streaming one goes without)", names)
	}
}

// Review resp15: with store left at its default (true), every hidden round
// is a response the upstream keeps (30 days at OpenAI) holding the client's
// whole input, the catalog and the skill bodies, that the client never gets
// an id for (JSON answers carry the last round's id only) and so can never
// read back, list or DELETE. OpenAI's reference: store is "whether to store
// the generated model response for later retrieval via API" and DELETE
// /v1/responses/{id} deletes "a model response with the given ID": a client
// that deletes the response it got (data retention, a user's erasure
// request) leaves the proxy's intermediate responses behind. The follow-up
// carries the round's items in its input (it never chains from the round's
// response), so nothing needs the intermediate response once the round is
// over.
func TestReviewResp15HiddenRoundLeavesNoOrphanStoredResponse(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}),
	)
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","input":"my tax id is 123-45-6789, make me a pdf"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	id := gjson.GetBytes(b, "id").Str
	if id != "resp_fake_2" {
		t.Fatalf("client got response %q, want the second round's", id)
	}
	// The first round's response: stored upstream, unknown to the client.
	// The proxy deletes it after the answer, off the client's latency path:
	// give it a moment.
	var got []byte
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, got = h.do("GET", "/v1/responses/resp_fake_1", "", nil)
		if resp.StatusCode == 404 || time.Now().After(deadline) {
			break
		}
	}
	if resp.StatusCode != 404 {
		t.Errorf("the hidden round's response resp_fake_1 is still stored upstream (the client only knows %s and cannot delete it): %d %.300s", id, resp.StatusCode, got)
	}
}

// Review resp15: the client's Idempotency-Key goes upstream unchanged on
// every hidden round (and on the stored-state repair's retry), each time
// with a different body. Idempotency keys name one request: the IETF
// draft (draft-ietf-httpapi-idempotency-key-header, section 2.7) has a
// server answer a reused key with a different payload with 422, and
// servers that implement it (gateways in front of the model, Stripe-style
// APIs) replay the first answer instead: the follow-up would get round 1's
// load_skill call back, or a 422, instead of the model's answer.
func TestReviewResp15IdempotencyKeyNotReusedAcrossRounds(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}),
	)
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, map[string]string{"Idempotency-Key": "stainless-node-retry-1"})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	k0, k1 := reqs[0].Header.Get("Idempotency-Key"), reqs[1].Header.Get("Idempotency-Key")
	if k0 != "stainless-node-retry-1" {
		t.Errorf("first round's key %q, want the client's", k0)
	}
	if k1 != "" && k1 == k0 {
		t.Errorf("the hidden round's follow-up (a different body) reuses the client's Idempotency-Key %q", k1)
	}
}

// Review resp15: the upstream refuses a hidden round's follow-up (the
// skill body the round loaded is what pushed the input over the context
// window, a rate limit, a quota). When the client's stream showed nothing
// yet (its headers are held until the answer begins), the client gets the
// upstream's answer as it came: its status, which an SDK retries on (429,
// 5xx), and its body. When the stream had begun (text before the proxy's
// call), the stream ends with response.failed, whose response.error
// carries the upstream's code (API reference, "response.failed"): Codex
// CLI reads failures only from there, and otherwise reports "stream closed
// before response.completed" and retries the whole request as a broken
// connection (proxy/e2e TestReviewResp15CodexSeesUpstreamErrorOfHiddenRound).
func TestReviewResp15LaterRoundUpstreamErrorEndsWithResponseFailed(t *testing.T) {
	refusal := `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`
	for _, text := range []string{"", "Loading the skill."} {
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{Content: text, ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
			fakeai.Raw(400, "application/json", refusal),
		)
		resp, b := h.do("POST", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`, nil)
		if text == "" {
			if resp.StatusCode != 400 || string(b) != refusal {
				t.Errorf("nothing shown yet: status %d: %s, want the upstream's 400 as it came", resp.StatusCode, b)
			}
			continue
		}
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		data := sseData(t, b)
		if len(data) == 0 {
			t.Fatal("empty stream")
		}
		var failed string
		for _, d := range data {
			if gjson.Get(d, "type").Str == "response.failed" {
				failed = d
			}
		}
		if failed == "" {
			t.Fatalf("the stream ends without response.failed; last event: %s", data[len(data)-1])
		}
		if code := gjson.Get(failed, "response.error.code").Str; code != "context_length_exceeded" {
			t.Errorf("response.failed carries code %q, want the upstream's context_length_exceeded: %s", code, failed)
		}
	}
}
