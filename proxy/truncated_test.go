package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/wire"
)

// truncCase is one client API, JSON or streamed, for the truncation tests.
type truncCase struct {
	name, path, body string
	hdr              map[string]string
	api              wire.API
	stream           bool
	stop             string // the truncation signal the client must keep
}

func truncCases() []truncCase {
	anthropic := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	return []truncCase{
		{"chat", "/v1/chat/completions", simpleChat, nil, wire.APIChat, false, "length"},
		{"chat stream", "/v1/chat/completions", streamChat(`,"stream_options":{"include_usage":true}`), nil, wire.APIChat, true, "length"},
		{"responses", "/v1/responses", `{"model":"m","max_output_tokens":64,"input":"make me a pdf"}`, nil, wire.APIResponses, false, "incomplete/max_output_tokens"},
		{"responses stream", "/v1/responses", `{"model":"m","max_output_tokens":64,"stream":true,"input":"make me a pdf"}`, nil, wire.APIResponses, true, "incomplete/max_output_tokens"},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"make me a pdf"}]}`, anthropic, wire.APIMessages, false, "max_tokens"},
		{"messages stream", "/v1/messages", msgStream, anthropic, wire.APIMessages, true, "max_tokens"},
	}
}

// answerView is what a client (its SDK) makes of an answer, in any API.
type answerView struct {
	text    string
	calls   []string // names of the tool calls it got
	stop    string   // finish_reason; Responses status/incomplete_details.reason; stop_reason
	in, out float64  // usage
	ended   bool     // a stream ended as its API ends one, without an error
}

func viewAnswer(t *testing.T, tc truncCase, b []byte) answerView {
	t.Helper()
	var v answerView
	if !tc.stream {
		m := decodeJSON(t, b)
		u, _ := m["usage"].(map[string]any)
		switch tc.api {
		case wire.APIChat:
			ch := m["choices"].([]any)[0].(map[string]any)
			msg := ch["message"].(map[string]any)
			v.text, _ = msg["content"].(string)
			for _, c := range asList(msg["tool_calls"]) {
				v.calls = append(v.calls, c.(map[string]any)["function"].(map[string]any)["name"].(string))
			}
			v.stop, _ = ch["finish_reason"].(string)
			v.in, v.out = num(u["prompt_tokens"]), num(u["completion_tokens"])
		case wire.APIResponses:
			v.text, v.calls, v.stop = responseView(m)
			v.in, v.out = num(u["input_tokens"]), num(u["output_tokens"])
		case wire.APIMessages:
			for _, c := range asList(m["content"]) {
				blk := c.(map[string]any)
				switch blk["type"] {
				case "text":
					v.text += blk["text"].(string)
				case "tool_use":
					v.calls = append(v.calls, blk["name"].(string))
				}
			}
			v.stop, _ = m["stop_reason"].(string)
			v.in, v.out = num(u["input_tokens"]), num(u["output_tokens"])
		}
		return v
	}
	if tc.api == wire.APIChat {
		a := assemble(t, b)
		v.text = a.Content
		for _, c := range a.ToolCalls {
			v.calls = append(v.calls, c.Function.Name)
		}
		if len(a.FinishReason) > 0 {
			v.stop = a.FinishReason[len(a.FinishReason)-1]
		}
		if len(a.Usage) > 0 {
			u := a.Usage[len(a.Usage)-1]
			v.in, v.out = num(u["prompt_tokens"]), num(u["completion_tokens"])
		}
		v.ended = a.Done == 1 && len(a.Errors) == 0 && len(a.FinishReason) == 1
		return v
	}
	evs := namedEvents(t, b)
	last := ""
	for i, ev := range evs {
		last = ev.name
		switch ev.name {
		case "response.output_text.delta":
			v.text += ev.data["delta"].(string)
		case "response.output_item.added":
			if it := ev.data["item"].(map[string]any); it["type"] == "function_call" {
				v.calls = append(v.calls, it["name"].(string))
			}
		case "response.completed", "response.incomplete", "response.failed":
			resp := ev.data["response"].(map[string]any)
			_, calls, stop := responseView(resp)
			if len(calls) != len(v.calls) {
				t.Errorf("the final event lists calls %v, the stream showed %v", calls, v.calls)
			}
			v.stop = stop
			u, _ := resp["usage"].(map[string]any)
			v.in, v.out = num(u["input_tokens"]), num(u["output_tokens"])
		case "content_block_start":
			if cb := ev.data["content_block"].(map[string]any); cb["type"] == "tool_use" {
				v.calls = append(v.calls, cb["name"].(string))
			}
		case "content_block_delta":
			if d := ev.data["delta"].(map[string]any); d["type"] == "text_delta" {
				v.text += d["text"].(string)
			}
		case "message_delta":
			v.stop, _ = ev.data["delta"].(map[string]any)["stop_reason"].(string)
			u, _ := ev.data["usage"].(map[string]any)
			v.in, v.out = num(u["input_tokens"]), num(u["output_tokens"])
		}
		if sn, ok := ev.data["sequence_number"]; ok && num(sn) != float64(i) {
			t.Errorf("event %d has sequence_number %v", i, sn)
		}
	}
	v.ended = last == "message_stop" || last == "response.completed" || last == "response.incomplete"
	return v
}

// responseView reads a Responses response object: text, calls and status.
func responseView(m map[string]any) (text string, calls []string, stop string) {
	for _, it := range asList(m["output"]) {
		item := it.(map[string]any)
		switch item["type"] {
		case "message":
			for _, p := range asList(item["content"]) {
				if s, ok := p.(map[string]any)["text"].(string); ok {
					text += s
				}
			}
		case "function_call":
			calls = append(calls, item["name"].(string))
		}
	}
	stop, _ = m["status"].(string)
	if d, ok := m["incomplete_details"].(map[string]any); ok {
		stop += "/" + d["reason"].(string)
	}
	return text, calls, stop
}

type namedEvent struct {
	name string
	data map[string]any
}

// namedEvents reads a Responses or Messages stream.
func namedEvents(t *testing.T, b []byte) []namedEvent {
	t.Helper()
	var out []namedEvent
	var name string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("bad event data %q", d)
			}
			out = append(out, namedEvent{name, m})
		}
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// sessionCalls lists the calls the proxy answered, in every session.
func sessionCalls(h *harness) []string {
	h.rw.mu.Lock()
	defer h.rw.mu.Unlock()
	var out []string
	for _, s := range h.rw.sessions {
		s.mu.Lock()
		out = append(out, s.calls...)
		s.mu.Unlock()
	}
	return out
}

// roundHeader reads X-Skillrouter-Tool-Rounds (a trailer for streams) and
// whether the round limit was reported hit.
func roundHeader(resp *http.Response) (rounds string, exhausted bool) {
	rounds = resp.Header.Get(HeaderToolRounds)
	if rounds == "" {
		rounds = resp.Trailer.Get(HeaderToolRounds)
	}
	return rounds, resp.Header.Get(HeaderRoundsExceeded) == "true" || resp.Trailer.Get(HeaderRoundsExceeded) == "true"
}

// An answer cut off by the output-token limit while the model was writing
// a call to a proxy tool is the client's answer: the proxy runs no hidden
// round on it (the call's arguments are cut, and the next round would hit
// the same limit), drops its own call from it, and keeps the API's
// truncation signal.
func TestTruncatedProxyCallRunsNoRound(t *testing.T) {
	for _, tc := range truncCases() {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(
				fakeai.Reply(fakeai.Turn{Truncated: true, ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"demo/p`}}}),
				fakeai.Reply(fakeai.Turn{Content: "second round answer"}),
			)
			resp, b := h.do("POST", tc.path, tc.body, tc.hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if n := len(h.up.Requests()); n != 1 {
				t.Errorf("upstream got %d requests for an answer cut at the token limit, want 1", n)
			}
			if calls := sessionCalls(h); len(calls) > 0 {
				t.Errorf("the proxy ran the cut call(s) %v", calls)
			}
			v := viewAnswer(t, tc, b)
			if v.stop != tc.stop {
				t.Errorf("the client got stop %q, want the upstream's %q:\n%s", v.stop, tc.stop, b)
			}
			if len(v.calls) > 0 {
				t.Errorf("the proxy's cut call reached the client: %v\n%s", v.calls, b)
			}
			if tc.stream && !v.ended {
				t.Errorf("the stream does not end as its API ends one:\n%s", b)
			}
			if strings.Contains(string(b), "second round") {
				t.Errorf("a second round's answer reached the client:\n%s", b)
			}
			// Chat and Messages refuse an assistant turn with no content in
			// the client's next request (see wire.EmptyAnswerText).
			if tc.api != wire.APIResponses && !strings.Contains(v.text, "stopped short") {
				t.Errorf("the answer left without the proxy's call has text %q, want one that says it was cut at the output-token limit", v.text)
			}
			if rounds, exhausted := roundHeader(resp); rounds != "0" || exhausted {
				t.Errorf("tool rounds %q, exhausted %v; want 0, false", rounds, exhausted)
			}
			checkTruncatedLog(t, h, tc.path)
		})
	}
}

// A cut answer after hidden rounds: the client gets it with the text the
// model wrote, the proxy's calls dropped, the truncation signal kept and
// the usage of every round summed. A complete call of the proxy's before
// the cut one is not run either: the answer stopped at the limit, and a
// further round would only hit it again.
func TestTruncatedAnswerAfterRounds(t *testing.T) {
	for _, tc := range truncCases() {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
					Usage: &fakeai.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}}),
				fakeai.Reply(fakeai.Turn{Truncated: true, Content: "Here is the plan, then I load two more skills",
					ToolCalls: []fakeai.Call{
						{Name: "load_skill", Arguments: `{"skill_id":"demo/xlsx"}`},
						{Name: "load_skill", Arguments: `{"skill_id":"demo/d`}},
					Usage: &fakeai.Usage{PromptTokens: 200, CompletionTokens: 20, TotalTokens: 220}}),
				fakeai.Reply(fakeai.Turn{Content: "third round answer"}),
			)
			resp, b := h.do("POST", tc.path, tc.body, tc.hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if n := len(h.up.Requests()); n != 2 {
				t.Errorf("upstream got %d requests, want 2 (no round after the cut answer)", n)
			}
			if calls := sessionCalls(h); len(calls) != 1 || !strings.Contains(calls[0], "demo/pdf") {
				t.Errorf("the proxy ran %v, want only the first round's call", calls)
			}
			v := viewAnswer(t, tc, b)
			if v.stop != tc.stop || len(v.calls) > 0 || v.text != "Here is the plan, then I load two more skills" {
				t.Errorf("client got stop %q, calls %v, text %q:\n%s", v.stop, v.calls, v.text, b)
			}
			if v.in != 200 || v.out != 20 {
				t.Errorf("usage in %v out %v, want the last round's 200, 20:\n%s", v.in, v.out, b)
			}
			if tc.stream && !v.ended {
				t.Errorf("the stream does not end as its API ends one:\n%s", b)
			}
			if rounds, exhausted := roundHeader(resp); rounds != "1" || exhausted {
				t.Errorf("tool rounds %q, exhausted %v; want 1, false", rounds, exhausted)
			}
			checkTruncatedLog(t, h, tc.path)
		})
	}
}

// checkTruncatedLog asserts the request's log line says its answer was cut
// at the output-token limit (and not that the round limit was hit).
func checkTruncatedLog(t *testing.T, h *harness, path string) {
	t.Helper()
	waitFor(t, func() bool { return strings.Contains(h.logText(), `"msg":"request"`) })
	if line := logLine(t, h.logText(), path); !strings.Contains(line, `"stopped_short":true`) ||
		strings.Contains(line, "tool_rounds_exhausted") {
		t.Errorf("the log line does not say the answer was cut at the token limit: %s", line)
	}
}

// A cut answer in the last round the limit allows: the round limit is
// reported as before, but the client keeps the truncation signal (a Chat
// "length" finish is not turned into "stop") and the text it gets says
// why the answer is empty.
func TestTruncatedAnswerAtRoundLimit(t *testing.T) {
	for _, tc := range truncCases() {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxToolRounds = 1 })
			h.up.Script(
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
				fakeai.Reply(fakeai.Turn{Truncated: true, ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"demo/x`}}}),
			)
			resp, b := h.do("POST", tc.path, tc.body, tc.hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			v := viewAnswer(t, tc, b)
			if v.stop != tc.stop || len(v.calls) > 0 {
				t.Errorf("client got stop %q, calls %v; want %q and none:\n%s", v.stop, v.calls, tc.stop, b)
			}
			if tc.api != wire.APIResponses && !strings.Contains(v.text, "stopped short") {
				t.Errorf("text %q does not say the answer was cut at the output-token limit", v.text)
			}
			if rounds, exhausted := roundHeader(resp); rounds != "1" || !exhausted {
				t.Errorf("tool rounds %q, exhausted %v; want 1, true", rounds, exhausted)
			}
			waitFor(t, func() bool { return strings.Contains(h.logText(), `"msg":"request"`) })
			if line := logLine(t, h.logText(), tc.path); !strings.Contains(line, `"stopped_short":true`) {
				t.Errorf("the log line does not say the answer was cut at the token limit: %s", line)
			}
		})
	}
}
