package proxy

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

const msgStream = `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"make me a pdf"}]}`

// An upstream Messages stream that fails with an error event while the
// model is calling load_skill must end the client's stream there: no
// further tool round after the error event the client already got.
func TestStreamErrorEventEndsToolLoopMessages(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "toolu_1", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}},
			Fail: &fakeai.Failure{After: 4, Type: "overloaded_error", Message: "Overloaded"}}),
		fakeai.Reply(fakeai.Turn{Content: "second round answer"}),
	)
	resp, b := h.do("POST", "/v1/messages", msgStream, map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
	body := string(b)
	t.Logf("status %d\n%s", resp.StatusCode, body)
	if n := len(h.up.Requests()); n != 1 {
		t.Errorf("upstream got %d requests after a mid-stream error, want 1", n)
	}
	i := strings.Index(body, "event: error")
	if i < 0 {
		t.Fatalf("no error event")
	}
	if rest := strings.TrimSpace(body[i:]); strings.Count(rest, "event:") > 1 {
		t.Errorf("events after the error event:\n%s", rest)
	}
}

// The same for Chat: an upstream that reports an error chunk mid-stream
// (vLLM, LiteLLM: data: {"error":...} then data: [DONE]) while a
// load_skill call was streaming, or right after the round's finish, must
// not be looped on.
func TestStreamErrorChunkEndsToolLoopChat(t *testing.T) {
	const (
		role  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}` + "\n\n"
		call  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"demo/xlsx\"}"}}]},"finish_reason":null}]}` + "\n\n"
		half  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill"}}]},"finish_reason":null}]}` + "\n\n"
		fin   = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n"
		fault = `data: {"error":{"message":"backend overloaded","type":"server_error","code":"overloaded"}}` + "\n\n"
		done  = "data: [DONE]\n\n"
	)
	for _, tc := range []struct{ name, sse string }{
		{"during the call", role + half + fault + done},
		{"after the finish", role + call + fin + fault + done},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(fakeai.Raw(200, "text/event-stream", tc.sse), fakeai.Reply(fakeai.Turn{Content: "second round answer"}))
			_, b := h.chat(streamChat(""), nil)
			body := string(b)
			if n := len(h.up.Requests()); n != 1 {
				t.Errorf("upstream got %d requests after a mid-stream error, want 1", n)
			}
			if strings.Contains(body, "second round") || !strings.Contains(body, "backend overloaded") {
				t.Errorf("want the error chunk and no second round:\n%s", body)
			}
		})
	}
}

// Codex CLI (its enable_request_compression feature) sends /v1/responses
// bodies zstd-compressed with Content-Encoding: zstd, and other clients
// gzip them; upstreams accept such bodies. The proxy
// must decode them (or pass them on), not answer 400 "not a JSON object".
func TestCompressedRequestBody(t *testing.T) {
	for _, enc := range []string{"gzip", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			h := newHarness(t, nil)
			plain := `{"model":"m","input":"make me a pdf"}`
			var buf bytes.Buffer
			switch enc {
			case "gzip":
				zw := gzip.NewWriter(&buf)
				zw.Write([]byte(plain))
				zw.Close()
			case "zstd":
				zw, _ := zstd.NewWriter(&buf)
				zw.Write([]byte(plain))
				zw.Close()
			}
			resp, b := h.do("POST", "/v1/responses", buf.String(), map[string]string{"Content-Encoding": enc, "Content-Type": "application/json"})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			reqs := h.up.Requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream got %d requests", len(reqs))
			}
			if ce := reqs[0].Header.Get("Content-Encoding"); ce != "" {
				t.Errorf("upstream got Content-Encoding %q with a plain body", ce)
			}
			if !strings.Contains(string(reqs[0].Body), "make me a pdf") || !strings.Contains(string(reqs[0].Body), "CATALOG") {
				t.Errorf("upstream body not the rewritten request: %.200s", reqs[0].Body)
			}
		})
	}
}

// Content-Encoding edge cases: a list of codings (or two fields) is not
// undone, so it is a 415, not a misleading "not JSON" 400; an empty body
// with a coding is reported as empty, like one without.
func TestCompressedRequestBodyEdges(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"model":"m","input":"hi"}`))
	zw.Close()
	for _, tc := range []struct {
		name, body string
		enc        []string
		status     int
		text       string
	}{
		{"two fields", gz.String(), []string{"gzip", "gzip"}, 415, "unsupported_content_encoding"},
		{"a list", gz.String(), []string{"gzip, zstd"}, 415, "unsupported_content_encoding"},
		{"brotli", gz.String(), []string{"br"}, 415, "unsupported_content_encoding"},
		{"empty gzip", "", []string{"gzip"}, 400, "empty"},
		{"not gzip", "plain text", []string{"gzip"}, 400, "not valid gzip data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			req, _ := http.NewRequest("POST", h.ts.URL+"/v1/responses", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			for _, e := range tc.enc {
				req.Header.Add("Content-Encoding", e)
			}
			resp, err := h.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.text) {
				t.Errorf("status %d, body %s; want %d mentioning %q", resp.StatusCode, b, tc.status, tc.text)
			}
			if n := len(h.up.Requests()); n != 0 {
				t.Errorf("forwarded %d requests", n)
			}
		})
	}
}

// metadata.user_id of the wrong type: the 400 must name it, not say
// "'metadata' must be an object, got an object".
func TestMessagesMetadataUserIDType(t *testing.T) {
	h := newHarness(t, nil)
	resp, b := h.do("POST", "/v1/messages", `{"model":"m","max_tokens":5,"metadata":{"user_id":5},"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
	if resp.StatusCode != 400 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if strings.Contains(string(b), "got an object") || !strings.Contains(string(b), "user_id") {
		t.Errorf("misleading error: %s", b)
	}
}

// docs/proxy.md ("Streams that break"): an upstream that closes a stream
// cleanly before its final event gets upstream_stream_incomplete, and "this
// holds for streams the proxy relays untouched too (routing disabled or
// failed)"; a stream that did end is relayed with nothing added.
func TestRelayedStreamIncomplete(t *testing.T) {
	anthropic := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	apis := []struct {
		name, path, body string
		hdr              map[string]string
		cut              string // a stream cut before its final event
	}{
		{"chat", "/v1/chat/completions", streamChat(""), nil,
			`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"half an ans"},"finish_reason":null}]}` + "\n\n"},
		{"responses", "/v1/responses", `{"model":"m","input":"make me a pdf","stream":true}`, nil,
			"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"half\"}\n\n"},
		{"messages", "/v1/messages", msgStream, anthropic,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"},
	}
	for _, api := range apis {
		for _, routing := range []string{"routed", "routing disabled"} {
			for _, cut := range []bool{true, false} {
				name := api.name + "/" + routing + "/complete"
				if cut {
					name = api.name + "/" + routing + "/cut"
				}
				t.Run(name, func(t *testing.T) {
					h := newHarness(t, nil)
					if cut {
						h.up.Script(fakeai.Raw(200, "text/event-stream", api.cut))
					} else {
						h.up.Script(fakeai.Reply(fakeai.Turn{Content: "a whole answer"}))
					}
					hdr := map[string]string{}
					for k, v := range api.hdr {
						hdr[k] = v
					}
					if routing == "routing disabled" {
						hdr[HeaderDisable] = "true"
					}
					resp, b := h.do("POST", api.path, api.body, hdr)
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %s", resp.StatusCode, b)
					}
					// Anthropic's error envelope has no code, only the message.
					if got := strings.Contains(string(b), "ended before its final event"); got != cut {
						t.Errorf("incomplete stream reported: %v, want %v:\n%s", got, cut, b)
					}
				})
			}
		}
	}
}

// An upstream that reports usage in every chunk, cumulatively for its
// round (vLLM with stream_options.continuous_usage_stats), through a tool
// loop: the usage the client reads last is the two rounds' final figures
// added, not every chunk's.
func TestStreamCumulativeUsageAcrossRounds(t *testing.T) {
	chunk := func(id, choices, usage string) string {
		return `data: {"id":"` + id + `","object":"chat.completion.chunk","created":1,"model":"m","choices":` + choices + `,"usage":` + usage + "}\n\n"
	}
	round0 := chunk("c0", `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`, `{"prompt_tokens":100,"completion_tokens":0,"total_tokens":100}`) +
		chunk("c0", `[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"demo/xlsx\"}"}}]},"finish_reason":null}]`, `{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105}`) +
		chunk("c0", `[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`, `{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}`) +
		chunk("c0", `[]`, `{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}`) + "data: [DONE]\n\n"
	round1 := chunk("c1", `[{"index":0,"delta":{"role":"assistant","content":"Here"},"finish_reason":null}]`, `{"prompt_tokens":400,"completion_tokens":1,"total_tokens":401}`) +
		chunk("c1", `[{"index":0,"delta":{},"finish_reason":"stop"}]`, `{"prompt_tokens":400,"completion_tokens":5,"total_tokens":405}`) +
		chunk("c1", `[]`, `{"prompt_tokens":400,"completion_tokens":5,"total_tokens":405}`) + "data: [DONE]\n\n"
	h := newHarness(t, nil)
	h.up.Script(fakeai.Raw(200, "text/event-stream", round0), fakeai.Raw(200, "text/event-stream", round1))
	_, b := h.chat(streamChat(`,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`), nil)
	if n := len(h.up.Requests()); n != 2 {
		t.Fatalf("upstream got %d requests, want 2 (one tool round)", n)
	}
	a := assemble(t, b)
	if len(a.Usage) == 0 {
		t.Fatalf("no usage:\n%s", b)
	}
	last := a.Usage[len(a.Usage)-1]
	if last["prompt_tokens"] != 400.0 || last["completion_tokens"] != 5.0 || last["total_tokens"] != 405.0 {
		t.Errorf("last usage %v, want the last round's, prompt 400, completion 5, total 405:\n%s", last, b)
	}
}

// A relayed stream of several answers (n=2 goes through the tool loop's
// relay) is complete once every answer finished, or at [DONE]: a stream
// cut after the first answer's finish is incomplete.
func TestRelayedStreamIncompleteSeveralAnswers(t *testing.T) {
	choice := func(i int, delta, finish string) string {
		return fmt.Sprintf(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":%d,"delta":%s,"finish_reason":%s}]}`+"\n\n", i, delta, finish)
	}
	start := choice(0, `{"role":"assistant","content":"a"}`, "null") + choice(1, `{"role":"assistant","content":"b"}`, "null")
	for _, tc := range []struct {
		name, sse string
		cut       bool
	}{
		{"cut after one answer", start + choice(0, `{}`, `"stop"`), true},
		{"both answers finished", start + choice(0, `{}`, `"stop"`) + choice(1, `{}`, `"stop"`), false},
		{"done", start + choice(0, `{}`, `"stop"`) + "data: [DONE]\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.up.Script(fakeai.Raw(200, "text/event-stream", tc.sse))
			_, b := h.do("POST", "/v1/chat/completions", `{"model":"m","n":2,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
			if got := strings.Contains(string(b), "ended before its final event"); got != tc.cut {
				t.Errorf("incomplete stream reported: %v, want %v:\n%s", got, tc.cut, b)
			}
		})
	}
}
