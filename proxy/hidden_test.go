package proxy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// The stored responses of hidden rounds that the client never gets an id
// for are deleted upstream once the request is over, with the client's
// credentials and query; what the client saw (an id, or items), what was
// not stored and what a later request depends on stay.
func TestHiddenRoundsStoredResponsesDeleted(t *testing.T) {
	load := func(skill string, thinking bool) fakeai.Responder {
		turn := fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_" + skill, Name: "load_skill", Arguments: `{"skill_id":"demo/` + skill + `"}`}}}
		if thinking {
			turn.Thinking = &fakeai.Thinking{Text: "a skill fits"}
		}
		return fakeai.Reply(turn)
	}
	preamble := func(skill string, thinking bool) fakeai.Responder {
		turn := fakeai.Turn{Content: "I'll load the " + skill + " skill first.",
			ToolCalls: []fakeai.Call{{ID: "call_" + skill, Name: "load_skill", Arguments: `{"skill_id":"demo/` + skill + `"}`}}}
		if thinking {
			turn.Thinking = &fakeai.Thinking{Text: "a skill fits"}
		}
		return fakeai.Reply(turn)
	}
	answer := fakeai.Reply(fakeai.Turn{Content: "final answer"})
	tests := []struct {
		name    string
		body    string
		script  []fakeai.Responder
		deleted []string // ids, in order
	}{
		{"json: every round's but the last", `{"model":"m","input":"make me a pdf"}`,
			[]fakeai.Responder{load("pdf", false), load("xlsx", false), answer}, []string{"resp_fake_1", "resp_fake_2"}},
		// response.created waits for the answer and names its round: the
		// hidden rounds' ids, the first's included, never reach the client.
		{"stream: every round's but the last", `{"model":"m","stream":true,"input":"make me a pdf"}`,
			[]fakeai.Responder{load("pdf", false), load("xlsx", false), answer}, []string{"resp_fake_1", "resp_fake_2"}},
		{"store false: nothing stored", `{"model":"m","store":false,"input":"make me a pdf"}`,
			[]fakeai.Responder{load("pdf", false), answer}, nil},
		{"reasoning resent by id: the follow-up reads it from the hidden response", `{"model":"m","input":"make me a pdf"}`,
			[]fakeai.Responder{load("pdf", true), answer}, nil},
		{"reasoning resent whole (encrypted_content)", `{"model":"m","include":["reasoning.encrypted_content"],"input":"make me a pdf"}`,
			[]fakeai.Responder{load("pdf", true), answer}, []string{"resp_fake_1"}},
		{"no hidden round", `{"model":"m","input":"hi"}`, []fakeai.Responder{answer}, nil},
		// A client that got items of a round resends them by id next turn,
		// which the API resolves against that round's stored response.
		{"json: a round whose preamble the client got stays", `{"model":"m","input":"make me a pdf"}`,
			[]fakeai.Responder{preamble("pdf", false), load("xlsx", false), answer}, []string{"resp_fake_2"}},
		{"json: a round whose reasoning the client got stays", `{"model":"m","include":["reasoning.encrypted_content"],"input":"make me a pdf"}`,
			[]fakeai.Responder{preamble("pdf", true), answer}, nil},
		{"stream: a round whose preamble the client was shown stays", `{"model":"m","stream":true,"input":"make me a pdf"}`,
			[]fakeai.Responder{load("pdf", false), preamble("xlsx", false), load("docx", false), answer}, []string{"resp_fake_1", "resp_fake_3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(tc.script...)
			resp, b := h.do("POST", "/v1/responses?api-version=v1", tc.body, map[string]string{"Authorization": "Bearer sk-client", "Idempotency-Key": "k1"})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			finish(t, h)
			var got []string
			for _, d := range h.up.Deletes() {
				got = append(got, strings.TrimPrefix(d.Path, "/v1/responses/"))
				if d.Header.Get("Authorization") != "Bearer sk-client" || d.RawQuery != "api-version=v1" || d.Header.Get("Idempotency-Key") != "" {
					t.Errorf("DELETE %s?%s with Authorization %q, Idempotency-Key %q", d.Path, d.RawQuery, d.Header.Get("Authorization"), d.Header.Get("Idempotency-Key"))
				}
			}
			if !slices.Equal(got, tc.deleted) {
				t.Errorf("deleted %q, want %q", got, tc.deleted)
			}
			if n := len(tc.deleted); n > 0 && !strings.Contains(metricsText(h), `skillrouter_hidden_responses_deleted_total{outcome="deleted"} `+string(rune('0'+n))) {
				t.Errorf("metric not counted:\n%s", grepLines(metricsText(h), "hidden_responses"))
			}
		})
	}
}

// The next turn chains from the id the client got: the final response,
// whose input holds the hidden round's items, not the deleted one.
func TestHiddenRoundDeletedNextTurnChains(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}),
		fakeai.Reply(fakeai.Turn{Content: "second turn"}))
	_, b := h.do("POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, nil)
	id := gjson.GetBytes(b, "id").Str
	finish(t, h)
	if len(h.up.Deletes()) != 1 {
		t.Fatalf("deletes %d", len(h.up.Deletes()))
	}
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","previous_response_id":"`+id+`","input":"thanks"}`, nil)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "output.0.content.0.text").Str != "second turn" {
		t.Fatalf("next turn: %d %s", resp.StatusCode, b)
	}
}

// A deletion the upstream refuses is counted and logged, never retried.
func TestHiddenRoundDeleteFailureLogged(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Handle("/v1/responses/resp_fake_1", fakeai.Status(500, "boom"))
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	finish(t, h)
	if m := metricsText(h); !strings.Contains(m, `skillrouter_hidden_responses_deleted_total{outcome="failed"} 1`) {
		t.Errorf("failure not counted:\n%s", grepLines(m, "hidden_responses"))
	}
	if l := h.logText(); !strings.Contains(l, "stored response was not deleted") || !strings.Contains(l, "status 500") {
		t.Errorf("failure not logged:\n%s", l)
	}
}

// Once the server finished, no deletion starts: they are counted as skipped.
func TestHiddenRoundDeleteSkippedAfterFinish(t *testing.T) {
	h := newHarness(t, nil)
	finish(t, h)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}))
	h.do("POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, nil)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(metricsText(h), `skillrouter_hidden_responses_deleted_total{outcome="skipped"} 1`) {
		if time.Now().After(deadline) {
			t.Fatalf("not counted as skipped:\n%s", grepLines(metricsText(h), "hidden_responses"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(h.up.Deletes()); n != 0 {
		t.Errorf("%d deletes after Finish", n)
	}
}

// finish waits for the server's background work. The deletions start as
// the handler returns, which may be just after the client read its answer:
// wait for the handlers first.
func finish(t *testing.T, h *harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for h.srv.InFlight() > 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if err := h.srv.Finish(ctx); err != nil {
		t.Fatal(err)
	}
}

func metricsText(h *harness) string {
	_, m := h.do("GET", "/metrics", "", nil)
	return string(m)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Chat Completions with store keeps every answer upstream (listed, used
// for distillation): the hidden rounds' the client has no id for are
// deleted as for Responses.
func TestHiddenRoundsStoredCompletionsDeleted(t *testing.T) {
	load := func(skill string) fakeai.Responder {
		return fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_" + skill, Name: "load_skill", Arguments: `{"skill_id":"demo/` + skill + `"}`}}})
	}
	answer := fakeai.Reply(fakeai.Turn{Content: "final answer"})
	for _, tc := range []struct {
		name, body string
		deleted    int
	}{
		{"json: every round's but the last", `{"model":"m","store":true,"messages":[{"role":"user","content":"make me a pdf"}]}`, 2},
		{"stream: the first round's id is the stream's", `{"model":"m","store":true,"stream":true,"messages":[{"role":"user","content":"make me a pdf"}]}`, 1},
		{"not stored", `{"model":"m","messages":[{"role":"user","content":"make me a pdf"}]}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(load("pdf"), load("xlsx"), answer)
			resp, b := h.do("POST", "/v1/chat/completions", tc.body, map[string]string{"Authorization": "Bearer sk-client"})
			if resp.StatusCode != 200 || !strings.Contains(string(b), "final") {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			finish(t, h)
			var got []string
			for _, d := range h.up.Deletes() {
				if !strings.HasPrefix(d.Path, "/v1/chat/completions/chatcmpl-") || d.Header.Get("Authorization") != "Bearer sk-client" {
					t.Errorf("DELETE %s with Authorization %q", d.Path, d.Header.Get("Authorization"))
				}
				got = append(got, d.Path)
			}
			if len(got) != tc.deleted {
				t.Errorf("deleted %q, want %d", got, tc.deleted)
			}
			if strings.Contains(string(b), `"id":"`) && slices.ContainsFunc(got, func(p string) bool {
				return strings.Contains(string(b), strings.TrimPrefix(p, "/v1/chat/completions/"))
			}) {
				t.Errorf("deleted the completion the client got: %s", b)
			}
		})
	}
}
