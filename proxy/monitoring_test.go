package proxy

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// streamAPIs are the three client APIs with a streamed request each and
// how their error event looks.
var streamAPIs = []struct {
	name, path, body string
	errorEvent       string // what starts the API's error event in the body
	hdr              map[string]string
}{
	{"chat", "/v1/chat/completions", streamChat(""), `data: {"error":`, nil},
	{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`, "event: error\ndata: ", nil},
	{"messages", "/v1/messages", `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"make me a pdf"}]}`, "event: error\ndata: ", map[string]string{"x-api-key": "client-key", "anthropic-version": "2023-06-01"}},
}

// TestBrokenStreamsAreReported (issue 14, repro 6): a stream that breaks
// after it started (connection cut, malformed event) ends with the API's
// error event, is logged at WARN with its cause and counted with outcome
// stream_error; with and without the proxy's tool loop.
func TestBrokenStreamsAreReported(t *testing.T) {
	faults := []struct {
		name  string
		turn  fakeai.Turn
		cause string
	}{
		{"cut", fakeai.Turn{Content: "one two three four", CutAfter: 3}, "closed the connection before the end of its response"},
		{"malformed", fakeai.Turn{Content: "one two three four", Inject: "data: [1,2,\n\n", InjectAfter: 3}, "upstream sent an event whose data is not JSON"},
	}
	for _, api := range streamAPIs {
		for _, f := range faults {
			for _, relayOnly := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/relay-only=%v", api.name, f.name, relayOnly), func(t *testing.T) {
					var ended []string // Config.Ended: what tracing records
					var mu sync.Mutex
					h := newHarness(t, func(c *Config) {
						c.Ended = func(_ context.Context, outcome string) { mu.Lock(); ended = append(ended, outcome); mu.Unlock() }
					})
					h.rw.noTools = relayOnly
					h.up.Script(fakeai.Reply(f.turn))
					resp, b := h.do("POST", api.path, api.body, api.hdr)
					body := string(b)
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %s", resp.StatusCode, body)
					}
					i := strings.LastIndex(body, api.errorEvent)
					if i < 0 || !strings.Contains(body[i:], f.cause) {
						t.Fatalf("no error event with the cause %q at the end:\n%s", f.cause, body)
					}
					if strings.Contains(body, "data: [1,2,") || strings.Contains(body, "[DONE]") || strings.Contains(body, "message_stop") ||
						strings.Contains(body, "response.completed") {
						t.Fatalf("malformed event relayed or stream ended as if complete:\n%s", body)
					}
					if api.name == "responses" && relayOnly {
						// The error event follows on the relayed events' numbering.
						evs := strings.Split(strings.TrimSpace(body), "\n\n")
						last := gjson.Get(strings.TrimPrefix(evs[len(evs)-1][strings.Index(evs[len(evs)-1], "data: "):], "data: "), "sequence_number").Int()
						prev := gjson.Get(strings.TrimPrefix(evs[len(evs)-2][strings.Index(evs[len(evs)-2], "data: "):], "data: "), "sequence_number").Int()
						if last != prev+1 {
							t.Errorf("error event sequence_number %d after %d", last, prev)
						}
					}
					logs := h.logText()
					line := logLine(t, logs, api.path)
					if !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, `"outcome":"stream_error"`) ||
						!strings.Contains(line, f.cause) {
						t.Errorf("log line: %s", line)
					}
					_, m := h.do("GET", "/metrics", "", nil)
					mustContain(t, string(m), `skillrouter_requests_total{arm="default",method="POST",outcome="stream_error",path="`+api.path+`",status="200"} 1`)
					mu.Lock()
					if !slices.Equal(ended, []string{"stream_error"}) {
						t.Errorf("Config.Ended got %q, want the stream_error alone", ended)
					}
					mu.Unlock()
				})
			}
		}
	}
}

// TestUpstreamErrorEventsAreReported: an upstream's own error event (an
// overloaded Anthropic stream, a failed response) is relayed to the client
// and the request is logged at WARN and counted as stream_error, not as
// complete; a Responses error event is followed by the upstream's
// response.failed, which Codex reads the failure's code from.
func TestUpstreamErrorEventsAreReported(t *testing.T) {
	inject := map[string]string{
		"chat":      `data: {"error":{"message":"overloaded now","type":"server_error"}}` + "\n\n",
		"responses": "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"overloaded now\",\"sequence_number\":9}\n\n" + "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":10,\"response\":{\"id\":\"resp_f\",\"object\":\"response\",\"status\":\"failed\",\"output\":[],\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"overloaded now\"}}}\n\n",
		"messages":  "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"overloaded now\"}}\n\n",
	}
	for _, api := range streamAPIs {
		for _, relayOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/relay-only=%v", api.name, relayOnly), func(t *testing.T) {
				h := newHarness(t, nil)
				h.rw.noTools = relayOnly
				h.up.Script(fakeai.Reply(fakeai.Turn{Content: "one two three four", Inject: inject[api.name], InjectAfter: 3, EndAtInject: true}))
				resp, b := h.do("POST", api.path, api.body, api.hdr)
				body := string(b)
				if resp.StatusCode != 200 || !strings.Contains(body, "overloaded now") {
					t.Fatalf("status %d, no upstream error relayed:\n%s", resp.StatusCode, body)
				}
				if api.name == "responses" && !strings.Contains(body, "context_length_exceeded") {
					t.Errorf("response.failed after the error event not relayed:\n%s", body)
				}
				line := logLine(t, h.logText(), api.path)
				if !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, `"outcome":"stream_error"`) || !strings.Contains(line, "overloaded now") {
					t.Errorf("log line: %s", line)
				}
				_, m := h.do("GET", "/metrics", "", nil)
				mustContain(t, string(m), `skillrouter_requests_total{arm="default",method="POST",outcome="stream_error",path="`+api.path+`",status="200"} 1`)
				mustContain(t, string(m), `skillrouter_upstream_errors_total{kind="upstream_error_event"} 1`)
			})
		}
	}
}

// An upstream that keeps its connection open after its error event: the
// proxy stops reading there, for every API (an SDK client raises the error
// and hangs up; the request is still the upstream's failure, not a client
// that went away), rather than waiting for the idle timeout.
func TestUpstreamErrorEventEndsTheStream(t *testing.T) {
	inject := map[string]string{
		"chat":      `data: {"error":{"message":"overloaded now","type":"server_error"}}` + "\n\n",
		"responses": "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"overloaded now\",\"sequence_number\":9}\n\nevent: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":10,\"response\":{\"id\":\"resp_f\",\"object\":\"response\",\"status\":\"failed\",\"output\":[],\"error\":{\"code\":\"server_error\",\"message\":\"overloaded now\"}}}\n\n",
		"messages":  "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"overloaded now\"}}\n\n",
	}
	// A Responses error event without the response.failed after it: the
	// rest gets a short grace (finalGrace), not the idle timeout.
	inject["responses-bare"] = "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"overloaded now\",\"sequence_number\":9}\n\n"
	defer func(g time.Duration) { finalGrace = g }(finalGrace)
	finalGrace = 100 * time.Millisecond
	apis := append(streamAPIs[:len(streamAPIs):len(streamAPIs)], streamAPIs[1])
	apis[len(apis)-1].name = "responses-bare"
	for _, api := range apis {
		for _, relayOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/relay-only=%v", api.name, relayOnly), func(t *testing.T) {
				h := newHarness(t, func(c *Config) { c.IdleTimeout = 3 * time.Second })
				h.rw.noTools = relayOnly
				never := make(chan struct{})
				h.up.Script(fakeai.Reply(fakeai.Turn{Content: "one two three four five", Inject: inject[api.name], InjectAfter: 2, Hold: never, HoldAfter: 3}))
				_, b := h.do("POST", api.path, api.body, api.hdr)
				if !strings.Contains(string(b), "overloaded now") || strings.Contains(string(b), "sent nothing more") {
					t.Errorf("want the upstream's error and no idle timeout after it:\n%s", b)
				}
				line := logLine(t, h.logText(), api.path)
				if !strings.Contains(line, `"outcome":"stream_error"`) || !strings.Contains(line, "upstream error event") {
					t.Errorf("log line: %s", line)
				}
			})
		}
	}
}

// TestStrayLinesAreDropped: lines of an upstream stream that are not SSE
// never reach the client and are counted; the stream completes.
func TestStrayLinesAreDropped(t *testing.T) {
	for _, api := range streamAPIs {
		for _, relayOnly := range []bool{false, true} {
			h := newHarness(t, nil)
			h.rw.noTools = relayOnly
			h.up.Script(fakeai.Reply(fakeai.Turn{Content: "one two", Inject: "<html>\n<body>Bad Gateway</body>\n\n", InjectAfter: 1}))
			resp, b := h.do("POST", api.path, api.body, api.hdr)
			if resp.StatusCode != 200 || strings.Contains(string(b), "html") || strings.Contains(string(b), api.errorEvent) {
				t.Fatalf("%s relay-only=%v: %d\n%s", api.name, relayOnly, resp.StatusCode, b)
			}
			_, m := h.do("GET", "/metrics", "", nil)
			mustContain(t, string(m), `skillrouter_upstream_sse_lines_dropped_total{api="`+api.name+`"} 2`)
			mustContain(t, string(m), `outcome="complete",path="`+api.path+`",status="200"} 1`)
		}
	}
}

// logLine returns the access log line of path.
func logLine(t *testing.T, logs, path string) string {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"msg":"request"`) && strings.Contains(l, `"path":"`+path+`"`) {
			return l
		}
	}
	t.Fatalf("no log line for %s:\n%s", path, logs)
	return ""
}

// The access log names the upstream's id for its answer (OpenAI's
// x-request-id, Anthropic's request-id): what a provider's support asks for.
func TestUpstreamRequestIDLogged(t *testing.T) {
	for _, tc := range []struct{ header, path, body string }{
		{"X-Request-Id", "/v1/chat/completions", simpleChat},
		{"Request-Id", "/v1/messages", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		h := newHarness(t, nil)
		reply := fakeai.Reply(fakeai.Turn{Content: "ok"})
		h.up.Script(func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
			w.Header().Set(tc.header, "req_upstream_123")
			reply(w, r, rec)
		})
		resp, _ := h.do("POST", tc.path, tc.body, map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
		id := resp.Header.Get(tc.header) // the fake's Messages replies set their own
		if line := logLine(t, h.logText(), tc.path); id == "" || !strings.Contains(line, `"upstream_request_id":"`+id+`"`) {
			t.Errorf("%s %q: %s", tc.header, id, line)
		}
	}
}
