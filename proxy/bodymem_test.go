package proxy

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// chatOf is a Chat request whose body is about n bytes.
func chatOf(n int) string {
	return `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", n-70) + `"}]}`
}

// waitHeld waits until the budget holds at least n bytes.
func waitHeld(t *testing.T, h *harness, n int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); h.srv.bodies.held.Load() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("the budget holds %d bytes, want %d", h.srv.bodies.held.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBodyMemory: routed bodies held at once stay within server.body_memory;
// a request that finds no room waits for one to end, and past the wait gets
// 503 server_busy with Retry-After, without reaching the upstream.
func TestBodyMemory(t *testing.T) {
	for _, tt := range []struct {
		name    string
		wait    time.Duration
		status  int
		chunked bool // the second body without Content-Length: held as it arrives
	}{
		{"waits for room", time.Minute, 200, false},
		{"refused past the wait", 100 * time.Millisecond, 503, false},
		{"chunked, waits for room", time.Minute, 200, true},
		{"chunked, refused past the wait", 100 * time.Millisecond, 503, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.BodyLimit, c.BodyMemory = 4096, 4096 })
			h.srv.bodies.wait.Store(int64(tt.wait))
			release := make(chan struct{})
			var once sync.Once
			open := func() { once.Do(func() { close(release) }) }
			defer open() // a failed check must not leave the first request hanging
			h.up.Script(func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
				<-release
				fakeai.Reply(fakeai.Turn{Content: "first"})(w, r, rec)
			})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				if resp, b := h.chat(chatOf(3000), nil); resp.StatusCode != 200 {
					t.Errorf("first request: %d %s", resp.StatusCode, b)
				}
			}()
			waitHeld(t, h, int64(len(chatOf(3000))))
			if tt.status == 200 {
				// The second request waits without reaching the upstream
				// until the first ends.
				time.AfterFunc(200*time.Millisecond, func() {
					if n := len(h.up.Requests()); n != 1 {
						t.Errorf("the upstream got %d requests while the budget was full, want 1", n)
					}
					open()
				})
			}
			var resp *http.Response
			var b []byte
			if tt.chunked {
				req, _ := http.NewRequest("POST", h.ts.URL+"/v1/chat/completions", io.MultiReader(strings.NewReader(chatOf(3000))))
				req.Header.Set("Content-Type", "application/json")
				var err error
				if resp, err = h.ts.Client().Do(req); err != nil {
					t.Fatal(err)
				}
				b, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
			} else {
				resp, b = h.chat(chatOf(3000), nil)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("second request: %d %s", resp.StatusCode, b)
			}
			if tt.status == 503 {
				checkAPIError(t, b, "server_busy")
				if resp.Header.Get("Retry-After") != "1" {
					t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
				}
				if n := len(h.up.Requests()); n != 1 {
					t.Errorf("the upstream got %d requests, want the first alone", n)
				}
				open()
			}
			wg.Wait()
			if n := h.srv.bodies.held.Load(); n != 0 {
				t.Errorf("%d bytes still held after every request ended", n)
			}
		})
	}
}
