package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
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

// TestBodyMemorySlowUpload: a client that declares a large body and sends
// it a few bytes at a time holds what it sent plus a step of the budget,
// not its Content-Length, so other routed requests are not kept waiting
// by it (five such clients held 128 MiB for server.body_timeout).
func TestBodyMemorySlowUpload(t *testing.T) {
	const limit = 1 << 20
	h := newHarness(t, func(c *Config) { c.BodyLimit, c.BodyMemory = limit, limit })
	h.srv.bodies.wait.Store(int64(100 * time.Millisecond))
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "ok"}))

	conn, err := net.Dial("tcp", strings.TrimPrefix(h.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const sent = `{"model":"m","messages":[{"role":"user","content":"`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", conn.RemoteAddr(), limit, sent)
	waitHeld(t, h, int64(len(sent)))
	if held := h.srv.bodies.held.Load(); held > int64(len(sent))+heldStep {
		t.Fatalf("a slow upload of %d bytes holds %d bytes of the budget, want at most %d", len(sent), held, len(sent)+heldStep)
	}
	if resp, b := h.chat(chatOf(3000), nil); resp.StatusCode != 200 {
		t.Fatalf("a request beside the slow upload: %d %s", resp.StatusCode, b)
	}
	conn.Close()
	for deadline := time.Now().Add(5 * time.Second); h.srv.bodies.held.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still held after the slow client went away", h.srv.bodies.held.Load())
		}
	}
}

// TestHeldReader: the hold runs a step ahead of the bytes read, never past
// a declared length, and ends at the body's size.
func TestHeldReader(t *testing.T) {
	for _, tt := range []struct {
		name      string
		body      int
		size      int64 // Content-Length, -1 chunked
		wantAfter int64 // the hold after the first 10 bytes
	}{
		{"small, declared", 3000, 3000, 3000},
		{"large, declared", 1 << 20, 1 << 20, 10 + heldStep},
		{"chunked", 3000, -1, 10 + heldStep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBodyBudget(4 << 20)
			h := &bodyHold{b: b}
			r := &heldReader{Reader: strings.NewReader(strings.Repeat("x", tt.body)), ctx: context.Background(), h: h, size: tt.size}
			if _, err := io.ReadFull(r, make([]byte, 10)); err != nil {
				t.Fatal(err)
			}
			if h.n != tt.wantAfter || b.held.Load() != tt.wantAfter {
				t.Errorf("after 10 bytes the hold is %d (budget %d), want %d", h.n, b.held.Load(), tt.wantAfter)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatal(err)
			}
			if h.n < int64(tt.body) {
				t.Errorf("after the body the hold is %d, want at least %d", h.n, tt.body)
			}
			if tt.size >= 0 && h.n != tt.size {
				t.Errorf("a declared body's hold ends at %d, want %d", h.n, tt.size)
			}
			h.release()
			if b.held.Load() != 0 {
				t.Errorf("%d held after release", b.held.Load())
			}
		})
	}
}

// TestBodyMemoryFullBeforeContinue: a request that finds no room in the
// budget is answered 503 before net/http sends a client waiting with
// Expect: 100-continue its go-ahead, so the client does not upload a body
// that is refused (the hold taken as bytes arrive sent 100 Continue first).
func TestBodyMemoryFullBeforeContinue(t *testing.T) {
	const limit = 1 << 20
	h := newHarness(t, func(c *Config) { c.BodyLimit, c.BodyMemory = limit, limit })
	h.srv.bodies.wait.Store(int64(100 * time.Millisecond))
	if err := h.srv.bodies.sem.Acquire(context.Background(), limit); err != nil {
		t.Fatal(err)
	}
	defer h.srv.bodies.sem.Release(limit)

	conn, err := net.Dial("tcp", strings.TrimPrefix(h.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", conn.RemoteAddr(), limit/2)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "HTTP/1.1 503 ") {
		t.Fatalf("the answer to a request the budget has no room for starts %q, want 503 before any 100 Continue", line)
	}
}
