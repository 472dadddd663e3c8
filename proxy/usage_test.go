package proxy

import (
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
			if c.clientUsage && (len(a.Usage) != 1 || a.Usage[0]["completion_tokens"] != float64(20)) {
				t.Errorf("the client's usage %v, want the last round's, 20 completion tokens", a.Usage)
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
// asked for usage in that names stream_options is sent again once, as the
// client sent its stream_options: the request goes on as before the ask,
// its hidden rounds taking nothing from the cap, rather than failing where
// it worked. Any other refusal is the client's, relayed at once and as it
// came: sending it again would double every bad request (a context too
// long) to the upstream. The bodies are servers' own, as reported publicly.
func TestStreamUsageAskRefused(t *testing.T) {
	const (
		js   = "application/json"
		text = "text/plain; charset=utf-8"
	)
	for _, c := range []struct {
		name        string
		status      int
		contentType string
		body        string
		resent      bool
	}{
		// Refusals of the ask: sent again without it.
		{"Azure OpenAI, older api-version", 400, js,
			`{"error":{"message":"Unrecognized request argument supplied: stream_options","type":"invalid_request_error","param":null,"code":null}}`, true},
		{"Azure OpenAI On Your Data", 400, js,
			`{"requestid":"1b7cfa98-de62-440f-b230-72919bfa42a0","code":400,"message":"Validation error at #/stream_options: Extra inputs are not permitted"}`, true},
		{"OpenAI-style unknown parameter (relays)", 400, js,
			`{"error":{"message":"Unknown parameter: 'stream_options'.","type":"invalid_request_error","param":"stream_options","code":"unknown_parameter"}}`, true},
		{"unknown parameter, the member named", 400, js,
			`{"error":{"message":"Unknown parameter: 'stream_options.include_usage'.","type":"invalid_request_error","param":"stream_options.include_usage","code":"unknown_parameter"}}`, true},
		{"vLLM before stream_options", 400, js,
			`{"object":"error","message":"[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), 'msg': 'Extra inputs are not permitted', 'input': {}}]","type":"BadRequestError","param":null,"code":400}`, true},
		{"Mistral", 422, js,
			`{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","stream_options"],"msg":"Extra inputs are not permitted","input":{"include_usage":true}}]},"type":"invalid_request_error","param":null,"code":null}`, true},
		{"FastAPI forbidding extra fields", 422, js,
			`{"detail":[{"type":"extra_forbidden","loc":["body","stream_options"],"msg":"Extra inputs are not permitted","input":{"include_usage":true}}]}`, true},
		{"text", 400, text, "Unrecognized request argument supplied: stream_options", true},

		// Refusals for other reasons: relayed with one upstream call.
		{"OpenAI context too long", 400, js,
			`{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, false},
		{"vLLM context too long", 400, js,
			`{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 33100 tokens (33000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, false},
		{"bad model name", 400, js,
			`{"error":{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}}`, false},
		{"cap too large", 400, js,
			`{"error":{"message":"max_tokens is too large: 100. This model supports at most 64 completion tokens, whereas you provided 100.","type":"invalid_request_error","param":"max_tokens","code":"invalid_value"}}`, false},
		{"FastAPI 422 echoing the body", 422, js,
			`{"detail":[{"type":"missing","loc":["body","model"],"msg":"Field required","input":{"stream":true,"stream_options":{"include_usage":true},"max_tokens":100,"messages":[{"role":"user","content":"x"}]}}]}`, false},
		{"text, another reason", 400, text, "Bad Request", false},
		{"empty", 422, js, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(
				fakeai.Raw(c.status, c.contentType, c.body),
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
				fakeai.Reply(fakeai.Turn{Content: "final answer"}),
			)
			resp, b := h.chat(streamChat(`,"max_tokens":100`), map[string]string{"Idempotency-Key": "k1"})
			reqs := h.up.Requests()
			_, m := h.do("GET", "/metrics", "", nil)
			if !c.resent {
				if resp.StatusCode != c.status || string(b) != c.body || resp.Header.Get("Content-Type") != c.contentType {
					t.Errorf("the client got %d %q %q, want the refusal as it came: %d %q %q",
						resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status, c.contentType, c.body)
				}
				if len(reqs) != 1 {
					t.Errorf("%d upstream requests, want 1: a refusal for another reason is not sent again", len(reqs))
				}
				if strings.Contains(string(m), "skillrouter_usage_ask_resent_total{") {
					t.Errorf("a resend counted:\n%s", m)
				}
				return
			}
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if a := assemble(t, b); a.Content != "final answer" || a.Done != 1 || len(a.Errors) > 0 {
				t.Errorf("the client assembled %+v\n%s", a, b)
			}
			if len(reqs) != 3 {
				t.Fatalf("%d upstream requests, want 3 (refused, sent again, follow-up)", len(reqs))
			}
			if !gjson.GetBytes(reqs[0].Body, "stream_options.include_usage").Bool() {
				t.Errorf("the first request did not ask for usage: %s", reqs[0].Body)
			}
			for i, r := range reqs[1:] {
				if gjson.GetBytes(r.Body, "stream_options").Exists() {
					t.Errorf("request %d still has stream_options: %s", i+1, r.Body)
				}
			}
			if got := gjson.GetBytes(reqs[2].Body, "max_tokens").Int(); got != 100 {
				t.Errorf("follow-up max_tokens %d, want 100 (no usage, nothing taken)", got)
			}
			if k0, k1 := reqs[0].Header.Get("Idempotency-Key"), reqs[1].Header.Get("Idempotency-Key"); k0 != "k1" || k1 != "k1/without-usage" {
				t.Errorf("Idempotency-Key %q then %q: the request sent again with another body needs its own key", k0, k1)
			}
			mustContain(t, string(m), `skillrouter_usage_ask_resent_total{outcome="accepted"} 1`)
		})
	}

	// A resend refused in turn (here for another reason) is the answer the
	// client gets, as it would have been before the ask.
	h := newHarness(t, nil)
	h.up.Script(fakeai.Status(400, "Unrecognized request argument supplied: stream_options"), fakeai.Status(400, "context too long"))
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
