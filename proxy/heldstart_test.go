package proxy

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// A stream's headers and opening events wait until the answer begins, so
// that a hidden round's failure before then reaches the client as an HTTP
// answer: the upstream's own (429 with Retry-After, which SDKs retry on),
// or the proxy's 502 for a broken stream. Once the answer began, the same
// failures end the stream with the API's error event.
func TestStreamHeldUntilTheAnswerBegins(t *testing.T) {
	load := fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}
	limited := func() fakeai.Responder {
		return func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
			w.Header().Set("Retry-After", "7")
			fakeai.Status(429, "Rate limit reached")(w, r, rec)
		}
	}
	for _, api := range streamAPIs {
		t.Run(api.name, func(t *testing.T) {
			// A hidden round, then a rate limit: the client gets the 429.
			h := newHarness(t, nil)
			h.up.Script(fakeai.Reply(load), limited())
			resp, b := h.do("POST", api.path, api.body, api.hdr)
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || !strings.Contains(string(b), "Rate limit reached") ||
				resp.Header.Get("Content-Type") == "text/event-stream" || strings.Contains(string(b), "data:") {
				t.Errorf("hidden round then 429: %d %v %s", resp.StatusCode, resp.Header, b)
			}
			if resp.Header.Get(HeaderSelected) == "" {
				t.Errorf("the decision's headers are gone: %v", resp.Header)
			}
			// A hidden round, then a broken stream: the proxy's 502.
			h = newHarness(t, nil)
			h.up.Script(fakeai.Reply(load), fakeai.Reply(fakeai.Turn{Content: "one two three", CutAfter: 1}))
			resp, b = h.do("POST", api.path, api.body, api.hdr)
			if resp.StatusCode != 502 || strings.Contains(string(b), "data:") {
				t.Errorf("hidden round then a cut stream: %d %s", resp.StatusCode, b)
			}
			// Text shown, then a hidden round, then a rate limit: the
			// stream ends with an error event.
			h = newHarness(t, nil)
			shown := load
			shown.Content = "Loading."
			h.up.Script(fakeai.Reply(shown), limited())
			resp, b = h.do("POST", api.path, api.body, api.hdr)
			if resp.StatusCode != 200 || !strings.Contains(string(b), "Loading.") || !strings.Contains(string(b), api.errorEvent) {
				t.Errorf("text then 429: %d %s", resp.StatusCode, b)
			}
			// An answer streams as before, its opening included.
			h = newHarness(t, nil)
			h.up.Script(fakeai.Reply(load), fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."}))
			resp, b = h.do("POST", api.path, api.body, api.hdr)
			if resp.StatusCode != 200 || !strings.Contains(string(b), "pdf.") {
				t.Fatalf("answer: %d %s", resp.StatusCode, b)
			}
			if api.name == "responses" {
				data := sseData(t, b)
				if len(data) < 3 || gjson.Get(data[0], "type").Str != "response.created" || gjson.Get(data[0], "sequence_number").Int() != 0 {
					t.Errorf("the held opening is not first: %s", b)
				}
				for i, d := range data {
					if n := gjson.Get(d, "sequence_number").Int(); n != int64(i) {
						t.Errorf("event %d numbered %s", i, strconv.FormatInt(n, 10))
					}
				}
			}
		})
	}
}

// Held no longer than the hold limit: past it, the stream starts, and a
// later failure ends it with the API's error event as before.
func TestStreamHoldIsBounded(t *testing.T) {
	load := fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}
	for _, api := range streamAPIs {
		h := newHarness(t, nil)
		h.srv.holdLimit = 0
		// The follow-up's refusal comes after the hold's timer (0) has
		// committed the stream: without the delay, a loaded machine could
		// run the refusal first, and the client got it as an HTTP 429.
		h.up.Script(fakeai.Reply(load), fakeai.Delay(200*time.Millisecond, fakeai.Status(429, "Rate limit reached")))
		resp, b := h.do("POST", api.path, api.body, api.hdr)
		if resp.StatusCode != 200 || !strings.Contains(string(b), api.errorEvent) {
			t.Errorf("%s: %d %s", api.name, resp.StatusCode, b)
		}
	}
}

// The first round's stored response, whose id the held stream never
// showed, is deleted with the hidden ones when the client gets an HTTP
// error instead: nobody has its id.
func TestHeldStreamFailureDeletesFirstRound(t *testing.T) {
	h := newHarness(t, nil)
	load := func(id string) fakeai.Responder {
		return fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: id, Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}})
	}
	h.up.Script(load("call_1"), load("call_2"), fakeai.Status(429, "Rate limit reached"))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`, nil)
	if resp.StatusCode != 429 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	// The client's retry repeats the rounds before the error: it is told.
	if got := resp.Header.Get(HeaderToolRounds); got != "2" {
		t.Errorf("%s on the 429: %q, want 2", HeaderToolRounds, got)
	}
	finish(t, h)
	var deleted []string
	for _, d := range h.up.Deletes() {
		deleted = append(deleted, d.Path)
	}
	got := strings.Join(deleted, " ")
	if !strings.Contains(got, "resp_fake_1") || !strings.Contains(got, "resp_fake_2") {
		t.Errorf("deleted %q, want both hidden rounds' responses", got)
	}
}

// The hold ends on time while nothing comes from the upstream at all (a
// hidden round's follow-up waiting for its headers): the client gets the
// stream's headers, and the answer after them.
func TestStreamHoldEndsWhileUpstreamIsSilent(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.holdLimit = 20 * time.Millisecond
	release := make(chan struct{})
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
			<-release // headers only once the client has its own
			fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."})(w, r, rec)
		})
	req, _ := http.NewRequest("POST", h.ts.URL+"/v1/chat/completions", strings.NewReader(streamChat("")))
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := h.ts.Client().Do(req)
		if err != nil {
			t.Error(err)
			close(release)
			return
		}
		got <- resp
	}()
	var resp *http.Response
	select {
	case resp = <-got:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("no headers while the upstream was silent")
	}
	close(release)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "pdf.") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// A stream the hold committed while its first round was hidden, whose
// next round then failed, opens with that round's response (created,
// in_progress, failed all name it): that id is the client's now, and is
// not deleted with the hidden rounds.
func TestCommittedStreamFailureKeepsTheIdItNamed(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.holdLimit = 0
	h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Delay(200*time.Millisecond, fakeai.Status(400, "context_length_exceeded"))) // after the hold's timer (see TestStreamHoldIsBounded)
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "response.failed") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	seen := map[string]bool{}
	for _, d := range sseData(t, b) {
		if id := gjson.Get(d, "response.id").Str; id != "" {
			seen[id] = true
		}
	}
	if len(seen) != 1 {
		t.Errorf("the stream named %v, want one response", seen)
	}
	finish(t, h)
	for _, d := range h.up.Deletes() {
		if seen[strings.TrimPrefix(d.Path, "/v1/responses/")] {
			t.Errorf("deleted %s, whose id the client got", d.Path)
		}
	}
}

// A committed stream whose next round stays silent gets keep-alive
// comments, which SSE parsers skip, so that an idle timeout in front of the
// proxy does not cut it; the events around them are whole.
func TestStreamKeepAliveWhileHiddenRoundIsSilent(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", streamChat("")},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`},
		{"messages", "/v1/messages", `{"model":"m","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.srv.holdLimit = 0
			h.srv.keepAliveEvery = 20 * time.Millisecond
			h.up.Script(
				fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
				fakeai.Delay(200*time.Millisecond, fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."})))
			resp, b := h.do("POST", tc.path, tc.body, budgetHeaders(tc.path))
			if resp.StatusCode != 200 || !strings.Contains(string(b), "pdf.") {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if !strings.Contains(string(b), "\n\n: keep-alive\n\n") && !strings.HasPrefix(string(b), ": keep-alive\n\n") {
				t.Errorf("no keep-alive comment between whole events during the silent round:\n%s", b)
			}
		})
	}
}
