package proxy

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// Every test of the package must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestClientDisconnectCancelsUpstream: a client that goes away while the
// proxy waits for the upstream (or relays its stream) cancels the upstream
// request, and nothing keeps running afterwards.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		// midStream: the client reads the first event before leaving.
		midStream bool
		noTools   bool
	}{
		{name: "chat waiting for headers", method: "POST", path: "/v1/chat/completions", body: simpleChat},
		{name: "stream waiting for headers", method: "POST", path: "/v1/chat/completions", body: streamChat("")},
		{name: "stream mid-relay with tool loop", method: "POST", path: "/v1/chat/completions", body: streamChat(""), midStream: true},
		{name: "stream mid-relay plain", method: "POST", path: "/v1/chat/completions", body: streamChat(""), midStream: true, noTools: true},
		{name: "pass-through", method: "POST", path: "/v1/embeddings", body: `{"input":"x"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t) }) // runs after the servers are closed
			h := newHarness(t, nil)
			h.rw.noTools = tc.noTools
			upstreamGone := make(chan struct{})
			var inner fakeai.Responder = fakeai.Hang()
			if tc.midStream {
				inner = fakeai.Reply(fakeai.Turn{Content: strings.Repeat("word ", 2000), Interval: 2 * time.Millisecond})
			}
			watch := func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
				defer close(upstreamGone)
				inner(w, r, rec)
			}
			if tc.path == "/v1/chat/completions" {
				h.up.Script(watch)
			} else {
				h.up.Handle(tc.path, watch)
			}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, tc.method, h.ts.URL+tc.path, strings.NewReader(tc.body))
			clientDone := make(chan struct{})
			go func() {
				defer close(clientDone)
				resp, err := h.ts.Client().Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				br := bufio.NewReader(resp.Body)
				for {
					if _, err := br.ReadString('\n'); err != nil {
						return
					}
				}
			}()
			// Wait until the upstream has the request (and, mid-stream, a few events are out).
			deadline := time.Now().Add(10 * time.Second)
			for len(h.up.Requests()) == 0 && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
			if tc.midStream {
				time.Sleep(30 * time.Millisecond)
			}
			cancel()
			select {
			case <-upstreamGone:
			case <-time.After(10 * time.Second): // liveness guard
				t.Fatal("the upstream request was not cancelled when the client left")
			}
			<-clientDone
			// The access log is written when the handler returns.
			for !strings.Contains(h.logText(), `"status":499`) && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
			mustContain(t, h.logText(), `"status":499`)
		})
	}
}
