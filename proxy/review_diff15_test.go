package proxy

// Review of the 15200a0..HEAD diff: failing tests for defects found.

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// Mistral, Gemini's OpenAI endpoint and others put a streamed answer's
// usage on the chunk that carries finish_reason, not on a separate
// choices-less chunk. The chat stream checks the client's output cap
// (Request.fits) only on a choices-less usage chunk, so a round that spent
// the cap loops anyway; FollowUp then answers wire.ErrBudgetSpent, which
// proxy/stream.go turns into a tool_loop_failed error event: the client
// gets an error instead of an answer ended "length" (as the JSON path and
// the separate-usage-chunk stream give it).
func TestDiff15ChatStreamBudgetSpentUsageOnFinishChunk(t *testing.T) {
	var calls atomic.Int32
	h := rel15Harness(t, func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"demo/pdf\"}"}}]}}]}`+"\n\n")
			fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":500,"completion_tokens":100,"total_tokens":600}}`+"\n\n")
		} else {
			fmt.Fprint(w, `data: {"id":"c2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"final"},"finish_reason":"stop"}],"usage":{"prompt_tokens":600,"completion_tokens":5,"total_tokens":605}}`+"\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}, nil)
	resp, b := h.chat(streamChat(`,"max_tokens":100`), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if strings.Contains(string(b), "tool_loop_failed") || strings.Contains(string(b), `"error"`) {
		t.Errorf("the spent cap ends the stream with an error instead of finish_reason length:\n%s", b)
	}
	if !strings.Contains(string(b), `"finish_reason":"length"`) {
		t.Errorf("no finish_reason length:\n%s", b)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d upstream requests, want 1", n)
	}
}

// A streamed request to an upstream that ignores stream:true and answers
// JSON with a Content-Type other than application/json (text/plain, as
// some gateways and self-hosted servers send) was relayed as is (stream.go:
// "an upstream that ignored stream:true: relay as is"); notAnAnswer now
// makes it a 502 without looking at the body, although the non-streaming
// path accepts the very same answer (it checks the body is JSON).
func TestDiff15StreamAnsweredWithTextPlainJSONNotA502(t *testing.T) {
	h := rel15Harness(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}, nil)
	resp, b := h.chat(simpleChat, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("non-streamed: status %d: %s", resp.StatusCode, b)
	}
	resp, b = h.chat(streamChat(""), nil)
	if resp.StatusCode != 200 {
		t.Errorf("streamed request answered with the same JSON: status %d (non-streamed got 200): %s", resp.StatusCode, b)
	}
}
