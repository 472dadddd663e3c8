package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// mistralRefusal is Mistral's API's answer to a request that breaks its
// message order (mistral-common's InvalidMessageStructureException).
func mistralRefusal(msg string) string {
	return `{"object":"error","message":` + jsonString(msg) + `,"type":"invalid_request_message_order","param":null,"code":"3230"}`
}

// mistralOrder is mistral-common's rule (validator.py,
// _validate_message_order, and the last message's role for serving): ""
// when messages keep it, else the refusal's message.
func mistralOrder(msgs []map[string]any) string {
	follows := map[string]string{"system": "user assistant system", "user": "assistant system user",
		"assistant": "assistant user tool", "tool": "assistant tool"}
	role := func(m map[string]any) string {
		r, _ := m["role"].(string)
		if r == "developer" {
			return "system"
		}
		return r
	}
	for i := 1; i < len(msgs); i++ {
		prev, cur := role(msgs[i-1]), role(msgs[i])
		if !strings.Contains(" "+follows[prev]+" ", " "+cur+" ") {
			return fmt.Sprintf("Unexpected role '%s' after role '%s'", cur, prev)
		}
	}
	if last := msgs[len(msgs)-1]; role(last) != "user" && role(last) != "tool" && !(role(last) == "assistant" && last["prefix"] == true) {
		return "Expected last role User or Tool (or Assistant with prefix True) for serving but got " + role(last)
	}
	return ""
}

// mistralUpstream makes h's fake Chat upstream validate as Mistral's API
// does: stream_options refused first when refuseUsage (422, pydantic's
// extra_forbidden) — or after the order when usageLast —, then the
// message order (400). Requests that pass get answers in turn, then "ok".
func mistralUpstream(h *harness, refuseUsage, usageLast bool, answers ...fakeai.Responder) {
	var mu sync.Mutex
	usage := func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) bool {
		if !refuseUsage || !gjson.GetBytes(rec.Body, "stream_options").Exists() {
			return false
		}
		fakeai.Raw(422, "application/json", `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","stream_options"],"msg":"Extra inputs are not permitted","input":{"include_usage":true}}]},"type":"invalid_request_error","param":null,"code":null}`)(w, r, rec)
		return true
	}
	h.up.Handle("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
		if !usageLast && usage(w, r, rec) {
			return
		}
		if msg := mistralOrder(rec.Messages()); msg != "" {
			fakeai.Raw(400, "application/json", mistralRefusal(msg))(w, r, rec)
			return
		}
		if usageLast && usage(w, r, rec) {
			return
		}
		mu.Lock()
		next := fakeai.Reply(fakeai.Turn{Content: "ok"})
		if len(answers) > 0 {
			next, answers = answers[0], answers[1:]
		}
		mu.Unlock()
		next(w, r, rec)
	})
}

// toolStep is a step of an agent's tool loop: the client's messages end
// with a tool result.
func toolStep(stream bool) string {
	return fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"system","content":"S"},{"role":"user","content":"make me a pdf"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"c1","content":"a.txt"}],"tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}]}`, stream)
}

const mergedUser = `{"role":"user","content":"make me a pdf\n\n<skill_context id=\"demo/pdf\">BODY</skill_context>"}`

// Mistral's API and servers that validate with mistral-common refuse a user
// message after a tool message, which the default placement of a skill
// envelope makes of every tool-loop step: the first such refusal is sent
// again with the envelope inside the last user message, and from then on
// Chat requests go that way at once.
func TestEnvelopeOrderRefusedResentMerged(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			h := newHarness(t, nil)
			mistralUpstream(h, false, false,
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/other"}`}}}),
				fakeai.Reply(fakeai.Turn{Content: "final answer"}),
				fakeai.Reply(fakeai.Turn{Content: "second"}),
			)
			resp, b := h.chat(toolStep(stream), map[string]string{"Idempotency-Key": "k1"})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if stream {
				if a := assemble(t, b); a.Content != "final answer" || a.Done != 1 || len(a.Errors) > 0 {
					t.Errorf("the client assembled %+v\n%s", a, b)
				}
			} else if got := gjson.GetBytes(b, "choices.0.message.content").Str; got != "final answer" {
				t.Errorf("the client got %s", b)
			}
			reqs := h.up.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d upstream requests, want 3 (refused, merged, the load_skill follow-up)", len(reqs))
			}
			if !strings.HasSuffix(gjson.GetBytes(reqs[0].Body, "messages").Raw, `{"role":"tool","tool_call_id":"c1","content":"a.txt"},{"role":"user","content":"<skill_context id=\"demo/pdf\">BODY</skill_context>"}]`) {
				t.Errorf("the first request's messages %s", gjson.GetBytes(reqs[0].Body, "messages").Raw)
			}
			for i, r := range reqs[1:] {
				if !strings.Contains(string(r.Body), mergedUser) || strings.Count(string(r.Body), "skill_context id=\\\"demo/pdf") != 1 {
					t.Errorf("request %d is not merged: %s", i+1, r.Body)
				}
			}
			// The hidden round continues from the merged body.
			if !strings.HasPrefix(string(reqs[2].Body), string(reqs[1].Body[:len(reqs[1].Body)/2])) ||
				!strings.Contains(string(reqs[2].Body), `"tool_call_id":"call_l"`) {
				t.Errorf("the follow-up %s", reqs[2].Body)
			}
			if k := reqs[1].Header.Get("Idempotency-Key"); k != "k1/merged" {
				t.Errorf("the resend's Idempotency-Key %q, want k1/merged", k)
			}
			_, m := h.do("GET", "/metrics", "", nil)
			mustContain(t, string(m), `skillrouter_envelope_order_resent_total{outcome="accepted"} 1`)

			// Learned: the next request goes merged at once.
			resp, b = h.chat(toolStep(stream), nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			reqs = h.up.Requests()
			if len(reqs) != 4 || !strings.Contains(string(reqs[3].Body), mergedUser) {
				t.Errorf("%d upstream requests, want 4, the last merged: %s", len(reqs), reqs[len(reqs)-1].Body)
			}
			if n := strings.Count(h.logText(), "skill bodies now go inside the last user message"); n != 1 {
				t.Errorf("logged %d times, want once:\n%s", n, h.logText())
			}
			_, m = h.do("GET", "/metrics", "", nil)
			mustContain(t, string(m), `skillrouter_envelope_order_resent_total{outcome="accepted"} 1`)
		})
	}
}

// A strict chat template (Mistral's, Gemma's, Llama 2's on vLLM) refuses
// two user messages in a row, which the default placement makes of a plain
// turn; the refusal is taken for the placement's the same way.
func TestEnvelopeAlternationRefusedResentMerged(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Handle("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
		msgs := rec.Messages()
		for i := 1; i < len(msgs); i++ {
			if msgs[i]["role"] == "user" && msgs[i-1]["role"] == "user" {
				fakeai.Raw(400, "application/json", `{"object":"error","message":"Conversation roles must alternate user/assistant/user/assistant/...","type":"BadRequestError","param":null,"code":400}`)(w, r, rec)
				return
			}
		}
		fakeai.Reply(fakeai.Turn{Content: "ok"})(w, r, rec)
	})
	resp, b := h.chat(simpleChat, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if reqs := h.up.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), mergedUser) {
		t.Errorf("%d upstream requests, want 2, the second merged", len(reqs))
	}
}

// Mistral's API refuses stream_options too (422, before it checks the
// order): a capped stream the proxy asked for usage in is sent again
// without the ask, then merged, one refusal at a time; and the other way
// round for a server that checks the order first.
func TestEnvelopeOrderAndUsageAskRefused(t *testing.T) {
	for _, usageLast := range []bool{false, true} {
		t.Run(fmt.Sprintf("usageLast=%v", usageLast), func(t *testing.T) {
			h := newHarness(t, nil)
			mistralUpstream(h, true, usageLast)
			body := strings.Replace(toolStep(true), `"stream":true`, `"stream":true,"max_tokens":100`, 1)
			resp, b := h.chat(body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if a := assemble(t, b); a.Content != "ok" || a.Done != 1 {
				t.Errorf("the client assembled %+v\n%s", a, b)
			}
			reqs := h.up.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d upstream requests, want 3", len(reqs))
			}
			last := string(reqs[2].Body)
			if !strings.Contains(last, mergedUser) || strings.Contains(last, "stream_options") {
				t.Errorf("the last request %s", last)
			}
			_, m := h.do("GET", "/metrics", "", nil)
			mustContain(t, string(m), `skillrouter_envelope_order_resent_total{outcome="accepted"} 1`)
			if usageLast {
				mustContain(t, string(m), `skillrouter_usage_ask_resent_total{outcome="accepted"} 1`)
			} else { // the resend without the ask was refused for the order
				mustContain(t, string(m), `skillrouter_usage_ask_resent_total{outcome="refused"} 1`)
			}

			// Learned either way: merged at once, the ask refused alone.
			resp, b = h.chat(body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			reqs = h.up.Requests()
			if len(reqs) != 5 || !strings.Contains(string(reqs[3].Body), mergedUser) || !strings.Contains(string(reqs[3].Body), "stream_options") {
				t.Errorf("%d upstream requests, want 5, the 4th merged and asking for usage", len(reqs))
			}
		})
	}
}

// Any other refusal is the client's request's, and so is a role-order
// refusal of a request the proxy added no envelope to, or whose client
// messages break the order themselves: relayed as it came, after one
// upstream call.
func TestEnvelopeOrderOtherRefusalsRelayed(t *testing.T) {
	ownOrder := `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a.txt"},{"role":"system","content":"late"}]}`
	for _, c := range []struct {
		name, body, refusal string
		noEnvelope          bool
	}{
		{"another reason", toolStep(false), `{"object":"error","message":"Prompt contains 40000 tokens, too large for model with 32768 maximum context length","type":"invalid_request_error","param":null,"code":"3051"}`, false},
		{"another reason, streamed", toolStep(true), `{"error":{"message":"model not found","type":"invalid_request_error","param":null,"code":null}}`, false},
		{"no envelope added", toolStep(false), mistralRefusal("Unexpected role 'user' after role 'tool'"), true},
		{"the client's own order", ownOrder, mistralRefusal("Unexpected role 'system' after role 'tool'"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if c.noEnvelope {
				h.rw.selected = nil
			}
			h.up.Handle("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
				fakeai.Raw(400, "application/json", c.refusal)(w, r, rec)
			})
			resp, b := h.chat(c.body, nil)
			if resp.StatusCode != 400 || string(b) != c.refusal {
				t.Errorf("the client got %d %s, want the refusal as it came", resp.StatusCode, b)
			}
			if reqs := h.up.Requests(); len(reqs) != 1 {
				t.Errorf("%d upstream requests, want 1", len(reqs))
			}
			_, m := h.do("GET", "/metrics", "", nil)
			if strings.Contains(string(m), "skillrouter_envelope_order_resent_total{") {
				t.Errorf("a resend counted")
			}
		})
	}
}

// A merged resend refused in turn is the answer the client gets, and
// nothing is learned from it.
func TestEnvelopeOrderResendRefused(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Raw(400, "application/json", mistralRefusal("Unexpected role 'user' after role 'tool'")), fakeai.Status(400, "context too long"))
	resp, b := h.chat(toolStep(false), nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "context too long") {
		t.Errorf("status %d: %s", resp.StatusCode, b)
	}
	_, m := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), `skillrouter_envelope_order_resent_total{outcome="refused"} 1`)
	h.chat(toolStep(false), nil)
	if reqs := h.up.Requests(); len(reqs) != 3 || strings.Contains(string(reqs[2].Body), mergedUser) {
		t.Errorf("%d upstream requests; the next request was merged after a refused resend", len(reqs))
	}
}

// The merged placement is learned per model: a gateway's Mistral model
// refuses envelopes apart, its other models keep the default placement
// (and their cached prefixes); each model that refuses pays one resend.
// With MergeSkillBodies the first request goes merged at once.
func TestEnvelopePlacementPerModel(t *testing.T) {
	step := func(model string) string {
		return strings.Replace(toolStep(false), `"model":"m"`, `"model":"`+model+`"`, 1)
	}
	t.Run("learned", func(t *testing.T) {
		h := newHarness(t, nil)
		h.up.Handle("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
			if gjson.GetBytes(rec.Body, "model").Str != "gpt" {
				if msg := mistralOrder(rec.Messages()); msg != "" {
					fakeai.Raw(400, "application/json", mistralRefusal(msg))(w, r, rec)
					return
				}
			}
			fakeai.Reply(fakeai.Turn{Content: "ok"})(w, r, rec)
		})
		for i, c := range []struct {
			model  string
			sent   int  // upstream requests
			merged bool // the last of them
		}{{"mistral-large", 2, true}, {"mistral-large", 1, true}, {"gpt", 1, false}, {"devstral", 2, true}, {"gpt", 1, false}, {"devstral", 1, true}} {
			before := len(h.up.Requests())
			resp, b := h.chat(step(c.model), nil)
			if resp.StatusCode != 200 {
				t.Fatalf("request %d (%s): status %d: %s", i, c.model, resp.StatusCode, b)
			}
			reqs := h.up.Requests()[before:]
			if len(reqs) != c.sent || strings.Contains(string(reqs[len(reqs)-1].Body), mergedUser) != c.merged {
				t.Errorf("request %d (%s): %d upstream requests, want %d, the last merged: %v", i, c.model, len(reqs), c.sent, c.merged)
			}
		}
		if n := strings.Count(h.logText(), "skill bodies now go inside the last user message"); n != 2 {
			t.Errorf("logged %d times, want once per model:\n%s", n, h.logText())
		}
	})
	t.Run("configured", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MergeSkillBodies = true })
		mistralUpstream(h, false, false)
		resp, b := h.chat(step("mistral-large"), nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if reqs := h.up.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), mergedUser) {
			t.Errorf("%d upstream requests, want 1, merged", len(reqs))
		}
	})
}

// modelSet stays within maxMergedModels: past it every model counts as
// one (made-up names cannot leave later models paying a resend each time),
// and says which of the two a model made.
func TestModelSet(t *testing.T) {
	var ms modelSet
	if ms.has("a") || ms.add("a") != addedModel || ms.add("a") != addedNone || !ms.has("a") || ms.has("b") {
		t.Fatal("one model")
	}
	for i := range maxMergedModels - 1 {
		if got := ms.add(fmt.Sprint(i)); got != addedModel {
			t.Fatalf("model %d: %d", i, got)
		}
	}
	if ms.has("never named") {
		t.Fatal("a full set holds every model before one more is refused for")
	}
	if got := ms.add("one too many"); got != addedAll || !ms.has("never named") || ms.add("another") != addedNone {
		t.Errorf("past the cap: %d, has %v", got, ms.has("never named"))
	}
	if n := len(*ms.m.Load()); n != maxMergedModels {
		t.Errorf("%d models kept", n)
	}
}

// The model name a merged placement is learned for comes from the client:
// one as long as the body limit allows must not be kept (1,024 of them
// would hold that many request bodies' worth of memory for the process's
// life) nor logged whole. Such a request still gets its one resend.
func TestEnvelopePlacementLongModelName(t *testing.T) {
	h := newHarness(t, nil)
	mistralUpstream(h, false, false)
	model := strings.Repeat("m", 1<<20)
	body := strings.Replace(toolStep(false), `"model":"m"`, `"model":"`+model+`"`, 1)
	for i := range 2 {
		before := len(h.up.Requests())
		resp, b := h.chat(body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %.200s", i, resp.StatusCode, b)
		}
		if n := len(h.up.Requests()) - before; n != 2 {
			t.Errorf("request %d: %d upstream requests, want 2 (refused, merged)", i, n)
		}
	}
	if h.srv.mergedModels.has(model) {
		t.Errorf("a %d-byte model name is remembered", len(model))
	}
	if n := len(h.logText()); n > 64<<10 {
		t.Errorf("%d bytes of log for one request's model name", n)
	}
}
