package proxy

import (
	"context"
	"strings"
	"time"

	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// Review agents15 (an OpenAI Agents SDK user's acceptance of the Responses
// path): ModelSettings.max_tokens becomes the request's max_output_tokens,
// which OpenAI's reference defines as "An upper bound for the number of
// tokens that can be generated for a response, including visible output
// tokens and reasoning tokens" (openai-node 6.30.1,
// resources/responses/responses.d.ts, ResponseCreateParamsBase
// .max_output_tokens). The proxy sends every hidden round's follow-up with
// the client's whole max_output_tokens again, so one response the client
// bounded at 100 output tokens is generated (and billed) as up to
// (tool_rounds+1) x 100, and the response it gets says so: its usage
// (summed over the rounds) reports more output tokens than the
// max_output_tokens it echoes. The follow-up should carry what is left of
// the budget (and the loop stop, as at the output-token limit, when
// nothing is). (Round 1 generates 80, not 90: the API refuses a
// max_output_tokens below 16, so with 10 left the proxy ends the response
// instead, see TestBudgetSpentEndsAtTheLimit.)
func TestReviewAgents15MaxOutputTokensIsPerResponseNotPerRound(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
			Usage: &fakeai.Usage{PromptTokens: 500, CompletionTokens: 80}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer", Usage: &fakeai.Usage{PromptTokens: 600, CompletionTokens: 90}}),
	)
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","max_output_tokens":100,"input":"make me a pdf"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want 2 (one hidden round)", len(reqs))
	}
	follow := gjson.GetBytes(reqs[1].Body, "max_output_tokens")
	out := gjson.GetBytes(b, "usage.output_tokens").Int()
	limit := gjson.GetBytes(b, "max_output_tokens").Int()
	if follow.Int() > 100-80 || out > limit {
		t.Errorf("max_output_tokens 100 is the bound of the whole response, but the hidden round's follow-up was sent with max_output_tokens %s after round 1 generated 80; the client's response reports usage.output_tokens %d > its max_output_tokens %d", follow.Raw, out, limit)
	}
}

// Review agents15: max_tool_calls is "The maximum number of total calls to
// built-in tools that can be processed in a response. This maximum number
// applies across all built-in tool calls, not per individual tool. Any
// further attempts to call a tool by the model will be ignored."
// (openai-node 6.30.1, responses.d.ts, ResponseCreateParamsBase
// .max_tool_calls). An Agents SDK user sets it (ModelSettings
// extra_args / max_tool_calls) to cap web_search spend. Every hidden
// round's follow-up carries the whole max_tool_calls again, and the
// client gets the built-in calls of every round in one response: with
// max_tool_calls 1 it receives (and pays for) two web searches.
func TestReviewAgents15MaxToolCallsIsPerResponseNotPerRound(t *testing.T) {
	h := newHarness(t, nil)
	ws := func(id string) string {
		return `{"type":"web_search_call","id":"` + id + `","status":"completed","action":{"type":"search","query":"q"}}`
	}
	round1 := `{"id":"resp_a","object":"response","status":"completed","output":[` + ws("ws_1") +
		`,{"type":"function_call","id":"fc_1","call_id":"call_l","name":"load_skill","arguments":"{\"skill_id\":\"demo/pdf\"}","status":"completed"}],` +
		`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`
	// Round 2 is an upstream that honours the follow-up: with no built-in
	// call left it is offered no web_search and runs none.
	round2 := `{"id":"resp_b","object":"response","status":"completed","output":[` +
		`{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}],` +
		`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`
	h.up.Script(fakeai.Raw(200, "application/json", round1), fakeai.Raw(200, "application/json", round2))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","max_tool_calls":1,"tools":[{"type":"web_search"}],"input":"search the web and make me a pdf"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	reqs := h.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want 2", len(reqs))
	}
	n := 0
	for _, it := range gjson.GetBytes(b, "output").Array() {
		if it.Get("type").Str == "web_search_call" {
			n++
		}
	}
	if tools := gjson.GetBytes(reqs[1].Body, `tools.#(type=="web_search")#`).Array(); len(tools) > 0 {
		t.Errorf("the follow-up after the response's one built-in call still offers web_search: %s", gjson.GetBytes(reqs[1].Body, "tools").Raw)
	}
	if follow := gjson.GetBytes(reqs[1].Body, "max_tool_calls").Int(); n > 1 || follow > 0 {
		t.Errorf("max_tool_calls 1 bounds the built-in calls of the whole response, but the follow-up after a round that ran one web search still allows %d, and the client's response holds %d web_search_call items", follow, n)
	}
}

// Review agents15: a reasoning model (gpt-5, o3: every Agents SDK default
// model since 2025) that calls a client tool and load_skill in parallel
// answers [reasoning rs, function_call get_weather, function_call
// load_skill]: one reasoning item before both calls. The proxy holds the
// client's call back for the next round and drops the reasoning with it
// (ownership: "reasoning goes with the item that follows it"), but sends
// the load_skill call, by its fc_ id, in the follow-up. The OpenAI API
// refuses a function call whose reasoning item is missing: 400 "Item
// 'fc_…' of type 'function_call' was provided without its required
// 'reasoning' item: 'rs_…'." (the error reported against the real API in
// cline/cline#12242, continuedev/continue#10018, mastra-ai/mastra#8738,
// VRSEN/agency-swarm#367 with openai-agents-python handoffs). The
// reasoning item must go with every call it precedes that is sent: here
// with the proxy's call, since the held call is never sent.
func TestReviewAgents15ReasoningKeptWithProxyCallAfterHeldClientCall(t *testing.T) {
	for _, stream := range []bool{false} { // streamed, the client call is relayed first and the round is the client's (docs/proxy.md)
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "weather, and the pdf skill"}, ToolCalls: []fakeai.Call{
				{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`},
			}}),
			fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_w2", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}),
		)
		st := "false"
		if stream {
			st = "true"
		}
		resp, b := h.do("POST", "/v1/responses", `{"model":"gpt-5","stream":`+st+`,"reasoning":{"effort":"low"},"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],"input":"weather in Paris, and make me a pdf of it"}`, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		reqs := h.up.Requests()
		if len(reqs) != 2 {
			t.Fatalf("stream %v: %d upstream requests, want 2", stream, len(reqs))
		}
		var types []string
		reasoningBeforeCall := false
		for _, it := range reqs[1].InputItems() {
			typ, _ := it["type"].(string)
			if it["name"] != nil {
				typ += ":" + it["name"].(string)
			}
			types = append(types, typ)
			if typ == "function_call:load_skill" {
				reasoningBeforeCall = len(types) > 1 && types[len(types)-2] == "reasoning"
			}
		}
		if !reasoningBeforeCall {
			t.Errorf("stream %v: the follow-up sends the load_skill call (id fc_…) without the reasoning item that preceded it in the response, which the API refuses (\"provided without its required 'reasoning' item\"); follow-up input: %v", stream, types)
		}
	}
}

// Review agents15: the proxy deletes a hidden round's stored response
// (review resp15) even when the client was shown items of it: the
// round's preamble message (gpt-5's "I'll load the PDF skill first"), a
// web_search_call, reasoning with encrypted_content. The Agents SDK's
// default multi-turn (a Session, or result.to_input_list(), store left
// true) resends those items next turn with their ids, and the API
// resolves input item ids against what it stored: a deleted one gives 404
// "Item with id '…' not found." (openai/openai-agents-python#2020, whose
// workaround PR #4013 strips rs_/fc_/msg_ ids for exactly this). Before
// the deletion a client's next turn worked; after it, it fails.
// HiddenPath keeps a response whose reasoning the follow-up sends by id,
// but not one whose items the client got.
func TestReviewAgents15HiddenResponseKeptWhenClientGotItsItems(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		thinking   *fakeai.Thinking
	}{
		{"preamble message", `{"model":"gpt-5","input":"make me a pdf"}`, nil},
		{"reasoning with encrypted_content before the preamble", `{"model":"gpt-5","include":["reasoning.encrypted_content"],"input":"make me a pdf"}`,
			&fakeai.Thinking{Text: "the user wants a pdf"}},
	} {
		h := newHarness(t, nil)
		h.up.Script(
			fakeai.Reply(fakeai.Turn{Thinking: tc.thinking, Content: "I'll load the PDF skill first.",
				ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
			fakeai.Reply(fakeai.Turn{Content: "final answer"}),
		)
		resp, b := h.do("POST", "/v1/responses", tc.body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", tc.name, resp.StatusCode, b)
		}
		var ids []string
		for _, it := range gjson.GetBytes(b, "output").Array() {
			ids = append(ids, it.Get("id").Str)
		}
		if len(ids) < 2 || !strings.HasPrefix(ids[0], "rs_fake_1_") && !strings.HasPrefix(ids[0], "msg_fake_1_") {
			t.Fatalf("%s: client output ids %v, want the first round's items first", tc.name, ids)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = h.srv.Finish(ctx) // the background deletion is over
		cancel()
		for _, d := range h.up.Deletes() {
			if strings.HasSuffix(d.Path, "/resp_fake_1") {
				t.Errorf("%s: the proxy deleted resp_fake_1, whose items the client got in its output %v: the Agents SDK resends them by id next turn and the API answers 404 \"Item with id '%s' not found.\"", tc.name, ids, ids[0])
			}
		}
	}
}
