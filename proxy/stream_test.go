package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// TestStreamFlushedProgressively: the fake sends the role chunk and the first
// content chunk, then waits until the client has read that content through
// the proxy. A buffering proxy would deadlock here (caught by the guard).
func TestStreamFlushedProgressively(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noTools bool
	}{{"with tool loop", false}, {"plain relay", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.rw.noTools = tc.noTools
			release := make(chan struct{})
			h.up.Script(fakeai.Reply(fakeai.Turn{Content: "first second third", Hold: release, HoldAfter: 2}))
			req, _ := http.NewRequest("POST", h.ts.URL+"/v1/chat/completions", strings.NewReader(streamChat("")))
			gotFirst := make(chan string, 1)
			var resp *http.Response
			go func() {
				var err error
				resp, err = h.ts.Client().Do(req)
				if err != nil {
					gotFirst <- ""
					return
				}
				br := bufio.NewReader(resp.Body)
				for {
					line, err := br.ReadString('\n')
					if strings.Contains(line, `"content":"first"`) {
						gotFirst <- line
						return
					}
					if err != nil {
						gotFirst <- ""
						return
					}
				}
			}()
			select {
			case line := <-gotFirst:
				if line == "" {
					t.Fatal("stream ended before the first content chunk")
				}
			case <-time.After(10 * time.Second): // liveness guard, not a timing assertion
				close(release)
				<-gotFirst
				t.Fatal("first chunk not relayed while the upstream held the rest: the proxy buffers")
			}
			close(release)
			defer resp.Body.Close()
			rest, _ := io.ReadAll(resp.Body)
			mustContain(t, string(rest), "data: [DONE]")
		})
	}
}

func TestStreamToolLoop(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{Content: "Let me load it. ", ToolCalls: []fakeai.Call{{ID: "call_ls", Name: "load_skill", Arguments: `{"skill_id":"demo/xlsx"}`}},
			ArgChunks: 5, Usage: &fakeai.Usage{PromptTokens: 100, CompletionTokens: 7, TotalTokens: 107}}),
		fakeai.Reply(fakeai.Turn{Content: "Here you go.", Usage: &fakeai.Usage{PromptTokens: 400, CompletionTokens: 5, TotalTokens: 405}}),
	)
	resp, b := h.chat(streamChat(`,"stream_options":{"include_usage":true}`), nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %v", resp.StatusCode, resp.Header)
	}
	a := assemble(t, b)
	if a.Content != "Let me load it. Here you go." {
		t.Fatalf("content %q", a.Content)
	}
	if len(a.ToolCalls) != 0 {
		t.Fatalf("the proxy's tool call leaked to the client: %+v", a.ToolCalls[0])
	}
	if len(a.IDs) != 1 || a.Done != 1 || strings.Join(a.FinishReason, ",") != "stop" {
		t.Fatalf("ids %v done %d finish %v", a.IDs, a.Done, a.FinishReason)
	}
	if len(a.Usage) != 1 || a.Usage[0]["prompt_tokens"] != 400.0 || a.Usage[0]["total_tokens"] != 405.0 {
		t.Fatalf("usage %v, want the last round's", a.Usage)
	}
	mustContain(t, h.logText(), `"usage_total":{"completion_tokens":12,"prompt_tokens":500,"total_tokens":512}`)
	if got := resp.Trailer.Get(HeaderUsageTotal); got != `{"completion_tokens":12,"prompt_tokens":500,"total_tokens":512}` {
		t.Errorf("trailer %s %q, want the rounds summed", HeaderUsageTotal, got)
	}
	if resp.Trailer.Get(HeaderToolRounds) != "1" || resp.Trailer.Get(HeaderRoundsExceeded) != "false" {
		t.Fatalf("trailers %v", resp.Trailer)
	}
	reqs := h.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests", len(reqs))
	}
	msgs := reqs[1].Messages()
	asst, tool := msgs[len(msgs)-2], msgs[len(msgs)-1]
	calls := asst["tool_calls"].([]any)
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	if asst["content"] != "Let me load it. " || len(calls) != 1 || fn["arguments"] != `{"skill_id":"demo/xlsx"}` ||
		calls[0].(map[string]any)["id"] != "call_ls" {
		t.Fatalf("assistant message rebuilt wrong from the deltas: %v", asst)
	}
	if tool["tool_call_id"] != "call_ls" {
		t.Fatalf("tool message %v", tool)
	}
	if reqs[1].JSON()["stream"] != true {
		t.Fatal("follow-up must stream too")
	}
}

func TestStreamClientToolsRelayed(t *testing.T) {
	h := newHarness(t, nil)
	args := `{"city":"Oslo","unit":"celsius"}`
	h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{
		{ID: "call_a", Name: "get_weather", Arguments: args},
		{ID: "call_b", Name: "get_time", Arguments: `{"tz":"CET"}`},
	}, ArgChunks: 4}))
	resp, b := h.chat(streamChat(""), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	a := assemble(t, b)
	if len(a.ToolCalls) != 2 || a.ToolCalls[0].ID != "call_a" || a.ToolCalls[0].Function.Name != "get_weather" ||
		a.ToolCalls[0].Function.Arguments != args || a.ToolCalls[1].Function.Name != "get_time" {
		t.Fatalf("tool calls %+v %+v", a.ToolCalls[0], a.ToolCalls[1])
	}
	if strings.Join(a.FinishReason, ",") != "tool_calls" || a.Done != 1 {
		t.Fatalf("finish %v done %d", a.FinishReason, a.Done)
	}
	// Deltas are relayed as they come, not assembled by the proxy.
	n := strings.Count(string(b), `"tool_calls"`)
	if n < 8 {
		t.Fatalf("only %d tool-call chunks relayed: fragments were merged", n)
	}
	if len(h.up.Requests()) != 1 {
		t.Fatal("client tool calls must not loop")
	}
}

func TestStreamMixedTurnProxyFirst(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{
			{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/weather"}`},
			{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
		}}),
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_w2", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}),
	)
	_, b := h.chat(streamChat(""), nil)
	a := assemble(t, b)
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_w2" || a.ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` {
		t.Fatalf("client must see only the next answer's client call: %+v", a.ToolCalls)
	}
	if strings.Join(a.FinishReason, ",") != "tool_calls" || len(a.IDs) != 1 {
		t.Fatalf("finish %v ids %v", a.FinishReason, a.IDs)
	}
	msgs := h.up.Requests()[1].Messages()
	if calls := msgs[len(msgs)-2]["tool_calls"].([]any); len(calls) != 1 {
		t.Fatalf("follow-up carries client calls: %v", calls)
	}
}

func TestStreamLateProxyCallDropped(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{
		{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
		{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/weather"}`},
	}}))
	_, b := h.chat(streamChat(""), nil)
	a := assemble(t, b)
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].Function.Name != "get_weather" {
		t.Fatalf("client calls %+v", a.ToolCalls)
	}
	if strings.Join(a.FinishReason, ",") != "tool_calls" || len(h.up.Requests()) != 1 {
		t.Fatalf("finish %v, %d upstream requests", a.FinishReason, len(h.up.Requests()))
	}
	_, m := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), `skillrouter_tool_calls_dropped_total{arm="default"} 1`)
}

func TestStreamRoundLimit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxToolRounds = 1 })
	for i := 0; i < 2; i++ {
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "thinking ", ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"x"}`}}}))
	}
	resp, b := h.chat(streamChat(""), nil)
	a := assemble(t, b)
	if a.Content != "thinking thinking " || len(a.ToolCalls) != 0 || strings.Join(a.FinishReason, ",") != "stop" || a.Done != 1 {
		t.Fatalf("client got %+v", a)
	}
	mustContain(t, string(b), ": skillrouter: tool rounds exhausted")
	if resp.Trailer.Get(HeaderRoundsExceeded) != "true" || resp.Trailer.Get(HeaderToolRounds) != "1" {
		t.Fatalf("trailers %v", resp.Trailer)
	}
	if n := len(h.up.Requests()); n != 2 {
		t.Fatalf("upstream got %d requests", n)
	}
}

func TestStreamUpstreamErrorInLaterRound(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{Content: "a", ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"x"}`}}}),
		fakeai.Status(503, "overloaded"),
	)
	resp, b := h.chat(streamChat(""), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	a := assemble(t, b)
	if len(a.Errors) != 1 || !strings.Contains(a.Errors[0], "overloaded") || a.Done != 0 {
		t.Fatalf("want one error event and no [DONE]: %+v", a)
	}
}

func TestStreamWithoutSessionIsByteForByte(t *testing.T) {
	h := newHarness(t, nil)
	h.rw.noTools = true
	events := fakeai.Events("chatcmpl-x", fakeai.Turn{Content: "hi there", ToolCalls: []fakeai.Call{{ID: "c", Name: "load_skill", Arguments: `{}`}}, FinishReason: "tool_calls"}, false)
	var want strings.Builder
	for _, e := range events {
		want.WriteString("data: " + string(e) + "\n\n")
	}
	want.WriteString(": keep-alive\n\ndata: [DONE]\n\n")
	h.up.Script(fakeai.Raw(200, "text/event-stream", want.String()))
	_, b := h.chat(streamChat(""), nil)
	if string(b) != want.String() {
		t.Fatalf("relay changed the stream:\n got %q\nwant %q", b, want.String())
	}
}

func TestStreamUsageWithoutLoopUntouched(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "x", Usage: &fakeai.Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4}}))
	_, b := h.chat(streamChat(`,"stream_options":{"include_usage":true}`), nil)
	a := assemble(t, b)
	if len(a.Usage) != 1 || a.Usage[0]["total_tokens"] != 4.0 {
		t.Fatalf("usage %v", a.Usage)
	}
	if !strings.Contains(string(b), `"usage":null`) {
		t.Fatal("usage:null on content chunks must be kept")
	}
}
