package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// A streamed Chat request carries usage only when it asks for it
// (stream_options.include_usage). When the client capped its answer and
// the proxy may run hidden rounds, the proxy asks the upstream itself, so
// that each follow-up carries what the earlier rounds left of the cap
// (wire.Budget); a client that did not ask sees no usage, as if the proxy
// had not asked either.
func TestStreamAsksForUsageTheClientDidNot(t *testing.T) {
	for _, c := range []struct {
		name, extra  string
		asked        bool   // stream_options.include_usage goes upstream
		followUpCap  int64  // the follow-up's max_tokens
		clientUsage  bool   // the client's stream has usage
		upstreamOpts string // the first request's stream_options
	}{
		{"capped, no usage asked", `,"max_tokens":100`, true, 60, false, `{"include_usage":true}`},
		{"other stream_options kept", `,"max_tokens":100,"stream_options":{"continuous_usage_stats":false}`, true, 60, false,
			`{"continuous_usage_stats":false,"include_usage":true}`},
		{"the client asked", `,"max_tokens":100,"stream_options":{"include_usage":true}`, true, 60, true, `{"include_usage":true}`},
		{"no cap: nothing asked", ``, false, 0, false, ``},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
					Usage: &fakeai.Usage{PromptTokens: 500, CompletionTokens: 40, TotalTokens: 540}}),
				fakeai.Reply(fakeai.Turn{Content: "final answer", Usage: &fakeai.Usage{PromptTokens: 600, CompletionTokens: 20, TotalTokens: 620}}),
			)
			resp, b := h.chat(streamChat(c.extra), nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			reqs := h.up.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d upstream requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				if got := gjson.GetBytes(r.Body, "stream_options.include_usage").Bool(); got != c.asked {
					t.Errorf("request %d: include_usage %v, want %v: %s", i, got, c.asked, gjson.GetBytes(r.Body, "stream_options").Raw)
				}
			}
			if got := gjson.GetBytes(reqs[0].Body, "stream_options").Raw; got != c.upstreamOpts {
				t.Errorf("stream_options upstream %s, want %s", got, c.upstreamOpts)
			}
			if got := gjson.GetBytes(reqs[1].Body, "max_tokens").Int(); got != c.followUpCap {
				t.Errorf("follow-up max_tokens %d, want %d", got, c.followUpCap)
			}
			a := assemble(t, b)
			if a.Content != "final answer" || a.Done != 1 {
				t.Errorf("the client assembled %+v", a)
			}
			if got := strings.Contains(string(b), `"usage"`); got != c.clientUsage {
				t.Errorf("usage in the client's stream: %v, want %v\n%s", got, c.clientUsage, b)
			}
			if c.clientUsage && (len(a.Usage) != 1 || a.Usage[0]["completion_tokens"] != float64(60)) {
				t.Errorf("the client's usage %v, want the rounds' sum, 60 completion tokens", a.Usage)
			}
			if !c.clientUsage && strings.Contains(string(b), `"choices":[]`) {
				t.Errorf("the client got a usage chunk without its usage:\n%s", b)
			}
		})
	}
}

// Some servers refuse stream_options (Azure's older API versions:
// "Unrecognized request argument supplied: stream_options"; servers that
// forbid unknown fields answer 422). A refusal of the request the proxy
// asked for usage in is sent again once, as the client sent its
// stream_options: the request goes on as before the ask, its hidden rounds
// taking nothing from the cap, rather than failing where it worked.
func TestStreamUsageAskRefused(t *testing.T) {
	refuseStreamOptions := func(status int, next fakeai.Responder) fakeai.Responder {
		return func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
			if gjson.GetBytes(rec.Body, "stream_options").Exists() {
				fakeai.Status(status, "Unrecognized request argument supplied: stream_options")(w, r, rec)
				return
			}
			next(w, r, rec)
		}
	}
	for _, status := range []int{http.StatusBadRequest, http.StatusUnprocessableEntity} {
		h := newHarness(t, nil)
		h.up.Script(
			refuseStreamOptions(status, fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}})),
		)
		// The retry is answered from the script too: queue its answers.
		h.up.Script(
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
			refuseStreamOptions(status, fakeai.Reply(fakeai.Turn{Content: "final answer"})),
		)
		resp, b := h.chat(streamChat(`,"max_tokens":100`), map[string]string{"Idempotency-Key": "k1"})
		if resp.StatusCode != 200 {
			t.Fatalf("%d: status %d: %s", status, resp.StatusCode, b)
		}
		if a := assemble(t, b); a.Content != "final answer" || a.Done != 1 || len(a.Errors) > 0 {
			t.Errorf("%d: the client assembled %+v\n%s", status, a, b)
		}
		reqs := h.up.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d: %d upstream requests, want 3 (refused, sent again, follow-up)", status, len(reqs))
		}
		for i, r := range reqs[1:] {
			if gjson.GetBytes(r.Body, "stream_options").Exists() {
				t.Errorf("%d: request %d still has stream_options: %s", status, i+1, r.Body)
			}
		}
		if got := gjson.GetBytes(reqs[2].Body, "max_tokens").Int(); got != 100 {
			t.Errorf("%d: follow-up max_tokens %d, want 100 (no usage, nothing taken)", status, got)
		}
		if k0, k1 := reqs[0].Header.Get("Idempotency-Key"), reqs[1].Header.Get("Idempotency-Key"); k0 != "k1" || k1 != "k1/without-usage" {
			t.Errorf("%d: Idempotency-Key %q then %q: the request sent again with another body needs its own key", status, k0, k1)
		}
		_, m := h.do("GET", "/metrics", "", nil)
		mustContain(t, string(m), `skillrouter_usage_ask_resent_total{outcome="accepted"} 1`)
	}

	// A refusal for another reason is refused again: the client gets that
	// refusal, as it did before the ask.
	h := newHarness(t, nil)
	h.up.Script(fakeai.Status(400, "context too long"), fakeai.Status(400, "context too long"))
	resp, b := h.chat(streamChat(`,"max_tokens":100`), nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "context too long") {
		t.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if reqs := h.up.Requests(); len(reqs) != 2 || gjson.GetBytes(reqs[1].Body, "stream_options").Exists() {
		t.Errorf("%d upstream requests, want the refused one and once without the ask", len(reqs))
	}
	_, m := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), `skillrouter_usage_ask_resent_total{outcome="refused"} 1`)
}

// Without a session there are no hidden rounds and the stream is relayed
// untranslated: nothing would read the usage, nor hide it from the client,
// so the proxy does not ask for it.
func TestStreamWithoutSessionAsksNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.rw.noTools = true
	resp, b := h.chat(streamChat(`,"max_tokens":100`), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if reqs := h.up.Requests(); len(reqs) != 1 || gjson.GetBytes(reqs[0].Body, "stream_options").Exists() {
		t.Errorf("the upstream got stream_options %s", gjson.GetBytes(reqs[0].Body, "stream_options").Raw)
	}
	if strings.Contains(string(b), `"usage"`) {
		t.Errorf("the client got usage it did not ask for:\n%s", b)
	}
}

// A round answered with JSON although it was asked to stream carries usage
// whatever stream_options said; when the proxy asked for usage, that usage
// counts against the client's cap and stays hidden from the client, as a
// streamed round's does.
func TestStreamJSONRoundSpendsTheCapUnasked(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{IgnoreStream: true, ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
			Usage: &fakeai.Usage{PromptTokens: 500, CompletionTokens: 40, TotalTokens: 540}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer", Usage: &fakeai.Usage{PromptTokens: 600, CompletionTokens: 20, TotalTokens: 620}}),
	)
	resp, b := h.chat(streamChat(`,"max_tokens":100`), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want 2", len(reqs))
	}
	if got := gjson.GetBytes(reqs[1].Body, "max_tokens").Int(); got != 60 {
		t.Errorf("follow-up max_tokens %d, want 60", got)
	}
	if a := assemble(t, b); a.Content != "final answer" || a.Done != 1 {
		t.Errorf("the client assembled %+v", a)
	}
	if strings.Contains(string(b), `"usage"`) {
		t.Errorf("usage in the client's stream, which did not ask for it:\n%s", b)
	}
}
