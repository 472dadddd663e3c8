package proxy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

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

// completedResponse returns the id of the response a client gets (JSON, or
// the response.completed event of a stream) and its calls' call_ids.
func completedResponse(t *testing.T, b []byte) (id string, calls []string) {
	t.Helper()
	raw := b
	if !strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		raw = nil
		for _, d := range sseData(t, b) {
			if gjson.Get(d, "type").Str == "response.completed" {
				raw = []byte(gjson.Get(d, "response").Raw)
			}
		}
	}
	resp := gjson.ParseBytes(raw)
	if !resp.Get("output").IsArray() {
		t.Fatalf("no response in %s", b)
	}
	resp.Get("output").ForEach(func(_, it gjson.Result) bool {
		if strings.HasSuffix(it.Get("type").Str, "call") {
			calls = append(calls, it.Get("call_id").Str)
		}
		return true
	})
	return resp.Get("id").Str, calls
}

// A conversation stored upstream (store defaults to true), continued with
// previous_response_id or the conversation parameter: when the proxy
// removed its own calls from the answer the client got (a client call was
// streamed before them, or the round limit was reached), the stored state
// still holds them unanswered, and the client's next turn, which answers
// only what it was shown, is refused until the proxy answers them.
func TestResponsesContinueAfterDroppedProxyCall(t *testing.T) {
	weather := []fakeai.Call{
		{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
		{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/weather"}`}}
	for _, tc := range []struct {
		name         string
		stream       bool
		rounds       int
		conversation bool
	}{
		{"previous_response_id, stream, client call relayed first", true, 0, false},
		{"previous_response_id, json, round limit", false, 1, false},
		{"previous_response_id, stream, round limit", true, 1, false},
		{"conversation, stream, client call relayed first", true, 0, true},
		{"conversation, json, round limit", false, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				if tc.rounds != 0 {
					c.MaxToolRounds = tc.rounds
				}
			})
			conv := ""
			if tc.conversation {
				resp, b := h.do("POST", "/v1/conversations", `{}`, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("create conversation: %d %s", resp.StatusCode, b)
				}
				conv = `,"conversation":"` + gjson.GetBytes(b, "id").Str + `"`
			}
			if tc.rounds > 0 { // a first round that loads a skill, then the limit
				h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l0", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}))
			}
			h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: weather}))
			tools := `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
			first := `{"model":"m","stream":` + strconv.FormatBool(tc.stream) + `,"tools":` + tools + conv + `,"input":"weather in Oslo?"}`
			resp, b := h.do("POST", "/v1/responses", first, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("first turn: %d %s", resp.StatusCode, b)
			}
			id, calls := completedResponse(t, b)
			if len(calls) != 1 || calls[0] != "call_w" {
				t.Fatalf("client shown calls %v, want [call_w]", calls)
			}
			// The client answers what it was shown, continuing the state.
			cont := `"previous_response_id":"` + id + `"`
			if tc.conversation {
				cont = conv[1:]
			}
			// The refused request takes a scripted answer too.
			sunny := fakeai.Reply(fakeai.Turn{Content: "It is sunny."})
			h.up.Script(sunny, sunny)
			second := `{"model":"m",` + cont + `,"tools":` + tools +
				`,"input":[{"type":"function_call_output","call_id":"call_w","output":"sunny"}]}`
			resp, b = h.do("POST", "/v1/responses", second, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("next turn refused: %d %s", resp.StatusCode, b)
			}
			if got := gjson.GetBytes(b, "output.0.content.0.text").Str; got != "It is sunny." {
				t.Errorf("answer %q: %s", got, b)
			}
			// What went upstream last: the dropped call answered first, as not run.
			reqs := h.up.Requests()
			last := reqs[len(reqs)-1]
			in := gjson.GetBytes(last.Body, "input").Array()
			if len(in) < 2 || in[0].Get("call_id").Str != "call_l" || !strings.Contains(in[0].Get("output").Str, "not run") ||
				in[1].Get("call_id").Str != "call_w" {
				t.Errorf("retried input %s", gjson.GetBytes(last.Body, "input").Raw)
			}
			// The line is written once the handler returns, which may be
			// after the client has read a relayed body.
			waitFor(t, func() bool { return strings.Contains(h.logText(), `"dropped_calls_answered":1`) })
		})
	}
}

// A refusal of a request that continues stored state but has nothing of
// the proxy's to answer goes back to the client as it came.
func TestResponsesRefusalWithoutDroppedCallsRelayed(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "hello"}))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","input":"hi"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	id := gjson.GetBytes(b, "id").Str
	// An output for a call that never was: the client's own mistake.
	resp, b = h.do("POST", "/v1/responses", `{"model":"m","previous_response_id":"`+id+`","input":[{"type":"function_call_output","call_id":"call_x","output":"?"}]}`, nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "No tool call found") {
		t.Fatalf("want the upstream's 400, got %d %s", resp.StatusCode, b)
	}
	var posts int
	for _, r := range h.up.Requests() {
		if r.Method == "POST" {
			posts++
		}
	}
	if posts != 2 {
		t.Errorf("%d model requests, want 2 (no retry)", posts)
	}
}

// A hidden round in a conversation stored upstream: the conversation
// already holds the turn's input and the round's items, so the follow-up
// sends only the outputs. After one client turn the conversation holds each
// item once, every call answered, and goes on. A round that also calls a
// client tool is the client's: a held call would stay in the conversation
// unanswered, so the proxy's call is dropped instead (and answered as not
// run when the next turn is refused: TestResponsesContinueAfterDroppedProxyCall).
func TestResponsesConversationHiddenRound(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			h := newHarness(t, nil)
			resp, b := h.do("POST", "/v1/conversations", `{}`, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("create conversation: %d %s", resp.StatusCode, b)
			}
			cid := gjson.GetBytes(b, "id").Str
			h.up.Script(
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
				fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."}),
			)
			tools := `[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]`
			resp, b = h.do("POST", "/v1/responses", `{"model":"m","stream":`+strconv.FormatBool(stream)+`,"tools":`+tools+`,"conversation":{"id":"`+cid+`"},"input":[{"role":"user","content":"make me a pdf"}]}`, nil)
			if resp.StatusCode != 200 || !strings.Contains(string(b), "Here is your pdf.") {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			reqs := h.up.Requests()
			if in := gjson.GetBytes(reqs[len(reqs)-1].Body, "input").Array(); len(in) != 1 || in[0].Get("type").Str != "function_call_output" {
				t.Errorf("follow-up input %s, want the output alone", gjson.GetBytes(reqs[len(reqs)-1].Body, "input").Raw)
			}
			items := h.up.Conversation(cid)
			seen := map[string]int{}
			for _, it := range items {
				seen[fakeai.WithoutID(it)]++
			}
			for it, n := range seen {
				if n > 1 {
					t.Errorf("the conversation holds this item %d times: %.160s", n, it)
				}
			}
			if t.Failed() {
				for i, it := range items {
					t.Logf("conversation[%d] %.140s", i, it)
				}
			}
			// A round with a client call too is the client's.
			h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{
				{ID: "call_l2", Name: "load_skill", Arguments: `{"skill_id":"demo/weather"}`},
				{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}))
			n := len(h.up.Requests())
			resp, b = h.do("POST", "/v1/responses", `{"model":"m","stream":`+strconv.FormatBool(stream)+`,"tools":`+tools+`,"conversation":"`+cid+`","input":"weather?"}`, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if _, calls := completedResponse(t, b); len(calls) != 1 || calls[0] != "call_w" || len(h.up.Requests()) != n+1 {
				t.Errorf("client shown calls %v after %d upstream requests, want [call_w] after 1", calls, len(h.up.Requests())-n)
			}
		})
	}
}

// A client's custom (free-form) tool call — Codex's apply_patch — in a
// round that loops is held back like a function call: the follow-up must
// not carry it without its output.
func TestResponsesCustomToolCallHeld(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{
					{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`},
					{ID: "call_p", Name: "apply_patch", Arguments: "*** Begin Patch\n*** End Patch", Custom: true}}}),
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_p2", Name: "apply_patch", Arguments: "*** Begin Patch\n*** End Patch", Custom: true}}}),
			)
			tools := `[{"type":"custom","name":"apply_patch","description":"patch files"}]`
			resp, b := h.do("POST", "/v1/responses", `{"model":"m","store":false,"stream":`+strconv.FormatBool(stream)+`,"tools":`+tools+`,"input":"fix the bug"}`, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			_, calls := completedResponse(t, b)
			if len(calls) != 1 || calls[0] != "call_p2" {
				t.Errorf("client shown calls %v, want [call_p2]: %s", calls, b)
			}
		})
	}
}

// POST /v1/responses/input_tokens counts the rewritten request, as
// Messages' count_tokens does: what a responses.create with the same body
// sends upstream.
func TestResponsesInputTokensCountsTheRewrite(t *testing.T) {
	h := newHarness(t, nil)
	resp, b := h.do("POST", "/v1/responses/input_tokens", `{"model":"m","input":"make me a pdf"}`, nil)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "object").Str != "response.input_tokens" || gjson.GetBytes(b, "input_tokens").Int() == 0 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/responses/input_tokens" || reqs[0].Instructions() != "CATALOG" ||
		!slices.Contains(reqs[0].ToolNames(), "load_skill") {
		t.Fatalf("upstream got %+v", reqs)
	}
	// A bad body gets the API's own error, not an upstream round trip.
	resp, b = h.do("POST", "/v1/responses/input_tokens", `{"input":5}`, nil)
	if resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").Str != "input" || len(h.up.Requests()) != 1 {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

// An item reference may leave its type out ({"id": "msg_..."}, as the API
// reference and the SDKs' types allow): the request is routed and relayed
// with the reference as the client wrote it, not refused for a missing role.
func TestResponsesItemReferenceWithoutType(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "done"}))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","input":[{"id":"msg_1"},{"role":"user","content":"make me a pdf"}]}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if len(reqs) != 1 || gjson.GetBytes(reqs[0].Body, "input.0").Raw != `{"id":"msg_1"}` {
		t.Fatalf("upstream got %s", reqs[0].Body)
	}
	if resp.Header.Get(HeaderStrategy) == "" {
		t.Error("the request was not routed")
	}
}

// A call into a namespace tool is the client's, whatever its name: Codex
// CLI offers each MCP server's tools as {"type":"namespace","name":
// "mcp__NAME","tools":[...]}, and the model's call of that server's
// search_skills carries "namespace": the proxy must relay it, not answer
// it as its own search_skills, streamed or not.
func TestResponsesNamespacedCallIsTheClients(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{
				{ID: "call_ns", Name: "search_skills", Namespace: "mcp__skills", Arguments: `{"query":"pdf"}`}}}))
			body := `{"model":"m","stream":` + strconv.FormatBool(stream) + `,"input":"make me a pdf","tools":[` +
				`{"type":"namespace","name":"mcp__skills","description":"skills over MCP","tools":[{"type":"function","name":"search_skills","parameters":{}}]}]}`
			resp, b := h.do("POST", "/v1/responses", body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if n := len(h.up.Requests()); n != 1 {
				t.Errorf("%d upstream requests: the proxy answered the client's call", n)
			}
			if rounds := resp.Header.Get(HeaderToolRounds) + resp.Trailer.Get(HeaderToolRounds); rounds != "0" {
				t.Errorf("tool rounds %q, want 0", rounds)
			}
			if !strings.Contains(string(b), `"namespace":"mcp__skills"`) || !strings.Contains(string(b), `"call_ns"`) {
				t.Errorf("the client did not get its call:\n%.2000s", b)
			}
		})
	}
}
