package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// TestDrainEndsRequestsInTheirAPIsFormat (issue 14, repro 5): at the end
// of the shutdown grace, Drain gives each open stream a final error event
// in its API's format and a request still waiting on the upstream a 503 in
// its envelope; they are logged and counted with outcome shutdown, not as
// 499.
func TestDrainEndsRequestsInTheirAPIsFormat(t *testing.T) {
	h := newHarness(t, nil)
	never := make(chan struct{})
	type result struct {
		name   string
		status int
		body   string
	}
	results := make(chan result, len(streamAPIs)+2)
	var wg sync.WaitGroup
	send := func(name, path, body string, hdr map[string]string, headers chan<- struct{}) {
		defer wg.Done()
		req, _ := http.NewRequest("POST", h.ts.URL+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := h.ts.Client().Do(req)
		close(headers)
		if err != nil {
			results <- result{name: name, body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		results <- result{name, resp.StatusCode, string(b)}
	}
	for _, api := range streamAPIs {
		// Held after the answer began: a stream shows nothing (not its headers)
		// until then.
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "one two three", Hold: never, HoldAfter: 3}))
		wg.Add(1)
		started := make(chan struct{})
		go send(api.name, api.path, api.body, api.hdr, started)
		<-started // the stream is open: its headers came
	}
	h.up.Script(fakeai.Hang())
	wg.Add(1)
	go send("waiting", "/v1/chat/completions", simpleChat, nil, make(chan struct{}))
	waitFor(t, func() bool { return len(h.up.Requests()) == len(streamAPIs)+1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(results)
	for r := range results {
		switch r.name {
		case "waiting":
			if r.status != 503 || !strings.Contains(r.body, `"code":"server_shutdown"`) || !strings.Contains(r.body, `"type":"server_error"`) {
				t.Errorf("waiting request: %d %s", r.status, r.body)
			}
		default:
			var want string
			for _, api := range streamAPIs {
				if api.name == r.name {
					want = api.errorEvent
				}
			}
			i := strings.LastIndex(r.body, want)
			if r.status != 200 || i < 0 || !strings.Contains(r.body[i:], "shutting down") {
				t.Errorf("%s: %d, no final shutdown error event:\n%s", r.name, r.status, r.body)
			}
		}
	}
	logs := h.logText()
	if n := strings.Count(logs, `"outcome":"shutdown"`); n != len(streamAPIs)+1 {
		t.Errorf("%d requests logged with outcome shutdown, want %d:\n%s", n, len(streamAPIs)+1, logs)
	}
	if strings.Contains(logs, `"status":499`) {
		t.Errorf("logged as 499:\n%s", logs)
	}
	_, m := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), `skillrouter_requests_total{arm="default",method="POST",outcome="shutdown",path="/v1/chat/completions",status="503"} 1`)
	mustContain(t, string(m), `skillrouter_requests_total{arm="default",method="POST",outcome="shutdown",path="/v1/messages",status="200"} 1`)
}

// waitFor polls cond until it holds (or fails the test after 10 s).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
