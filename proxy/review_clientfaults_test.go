package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// TestOverLimitBodyAnsweredAtOnce: a body declared larger than BodyLimit
// is refused 413 as soon as the headers are read, without waiting for
// the body: a client that asked "Expect: 100-continue" (curl for bodies
// over 1 MiB, .NET, Java clients) never has to send it, and one that
// sends slowly does not wait for server.body_timeout. net/http does this
// itself for the bodies it knows; the body deadline's wrapper hid the
// body from it, so it read the body first, until the body deadline.
func TestOverLimitBodyAnsweredAtOnce(t *testing.T) {
	tests := []struct {
		name, path, expect string
		envelope           string // a part of the error body in the API's envelope
	}{
		{"chat, Expect 100-continue", "/v1/chat/completions", "Expect: 100-continue\r\n", `"code":"request_too_large"`},
		{"responses, Expect 100-continue", "/v1/responses", "Expect: 100-continue\r\n", `"code":"request_too_large"`},
		{"messages, Expect 100-continue", "/v1/messages", "Expect: 100-continue\r\n", `"type":"request_too_large"`},
		{"chat, body not sent yet", "/v1/chat/completions", "", `"code":"request_too_large"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.BodyLimit = 1024
				c.Access.BodyTimeout = 5 * time.Second
			})
			addr := strings.TrimPrefix(h.ts.URL, "http://")
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "POST "+tc.path+" HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\n"+tc.expect+
				"Content-Length: "+strconv.Itoa(1<<20)+"\r\n\r\n")
			// The body deadline is 5 s: an answer within 2 s did not wait for it.
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			start := time.Now()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer after %v: %v", time.Since(start).Round(time.Millisecond), err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), tc.envelope) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if !resp.Close {
				t.Errorf("the connection is kept open with an unread body behind it")
			}
			if n := len(h.up.Requests()); n != 0 {
				t.Errorf("%d requests reached the upstream", n)
			}
		})
	}
}

// TestStalledClientIsDisconnected: a client that stops reading (a
// suspended process, an SDK stream abandoned without being closed) is
// disconnected once a write has waited WriteTimeout, streamed, JSON or
// passed through: the upstream request is cancelled instead of being held
// for nobody, and the log says 499 and why. Without the bound, the proxy
// blocked in the write forever and the upstream idle timeout never ran
// (it counts only time spent waiting for the upstream).
func TestStalledClientIsDisconnected(t *testing.T) {
	big := strings.Repeat("x", 12<<20) // more than the socket buffers hold
	anth := "x-api-key: k\r\nanthropic-version: 2023-06-01\r\n"
	tests := []struct {
		name, path, hdr, body string
		passThrough           bool
	}{
		{name: "chat stream", path: "/v1/chat/completions", body: streamChat("")},
		{name: "chat JSON", path: "/v1/chat/completions", body: simpleChat},
		{name: "responses stream", path: "/v1/responses", body: `{"model":"m","stream":true,"input":"make me a pdf"}`},
		{name: "messages stream", path: "/v1/messages", hdr: anth, body: `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"make me a pdf"}]}`},
		{name: "pass-through", path: "/v1/files/file-1/content", passThrough: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Access.WriteTimeout = 300 * time.Millisecond })
			upstreamDone := make(chan struct{})
			reply := fakeai.Reply(fakeai.Turn{Content: big, ContentChunks: 48})
			if tc.passThrough {
				reply = fakeai.Raw(200, "application/octet-stream", big)
			}
			watch := func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
				defer close(upstreamDone)
				reply(w, r, rec)
			}
			if tc.passThrough {
				h.up.Handle(tc.path, watch)
			} else {
				h.up.Script(watch)
			}
			method := "POST"
			if tc.passThrough {
				method = "GET"
			}
			sendRaw(t, h, method, tc.path, tc.hdr, tc.body)
			// ... and the client reads nothing.
			select {
			case <-upstreamDone:
			case <-time.After(10 * time.Second): // liveness guard
				t.Fatal("the upstream request is still held for a client that reads nothing")
			}
			var line string
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if line = findLogLine(h.logText(), tc.path); line != "" {
					break
				}
			}
			if !strings.Contains(line, `"status":499`) || !strings.Contains(line, `"outcome":"client_closed"`) || !strings.Contains(line, "server.write_timeout") {
				t.Fatalf("log line %q, want 499, client_closed and the cause", line)
			}
			_, m := h.do("GET", "/metrics", "", nil)
			if strings.Contains(string(m), `kind="upstream_`) {
				t.Errorf("a stalled client counted as an upstream error:\n%s", grepLines(string(m), "upstream_errors_total"))
			}
		})
	}
}

// TestSlowReaderIsNotCut: WriteTimeout bounds each write, not the
// response: a stream longer than it whose client keeps reading runs to its
// end, and the connection, idle for longer than it, serves the next
// request, 100 Continue included.
func TestSlowReaderIsNotCut(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Access.WriteTimeout = 200 * time.Millisecond })
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "a b c d e f", Interval: 100 * time.Millisecond}))
	addr := strings.TrimPrefix(h.ts.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	send := func(body, extra string) *http.Response {
		t.Helper()
		io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\n"+extra+
			"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n")
		if extra != "" {
			line, err := br.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
				t.Fatalf("no 100 Continue: %q %v", line, err)
			}
			br.ReadString('\n')
		}
		io.WriteString(c, body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := send(streamChat(""), "")
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if a := assemble(t, b); a.Content != "a b c d e f" || a.Done != 1 {
		t.Fatalf("%+v", a)
	}
	time.Sleep(500 * time.Millisecond) // idle past the last write's deadline
	resp = send(simpleChat, "Expect: 100-continue\r\n")
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// findLogLine is the request log line of path, or "".
// requestLine waits for the access-log line of a request to path: the line
// is written once the handler returns, which may be after the client has
// read the answer.
func (h *harness) requestLine(path string) string {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if l := findLogLine(h.logText(), path); l != "" || time.Now().After(deadline) {
			return l
		}
	}
}

func findLogLine(logs, path string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"msg":"request"`) && strings.Contains(l, `"path":"`+path+`"`) {
			return l
		}
	}
	return ""
}

// TestHalfClosedClientGetsNoEmptySuccess: a client that half-closes its
// side once the request is sent (shutdown(SHUT_WR): socat, some scripted
// clients; legal HTTP/1.1) looks gone to net/http, which cancels the
// request's context; the proxy cancels the upstream request and, having
// written nothing, let net/http answer "200 OK" with an empty body and
// the X-Skillrouter decision headers, while the log said 499. The client
// must get either its answer or a connection closed without a status:
// the proxy closes it.
func TestHalfClosedClientGetsNoEmptySuccess(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Delay(100*time.Millisecond, fakeai.Reply(fakeai.Turn{Content: "ok"})))
	addr := strings.TrimPrefix(h.ts.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\n"+
		"Content-Length: "+strconv.Itoa(len(simpleChat))+"\r\n\r\n"+simpleChat)
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return // closed without an answer
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 && len(b) == 0 {
		t.Fatalf("an empty 200 to a client that is still reading")
	}
}

// TestClientGoneMidBody: a client that goes away while uploading its body
// (closes, half-closes or resets the connection after half of a declared
// Content-Length) is logged and counted 499 client_closed, and sent
// nothing, on every endpoint that reads a body; it was logged 400
// invalid_body and answered, as if the body were malformed. A body that
// is malformed, or cut short by its own Content-Length, is still a 400.
func TestClientGoneMidBody(t *testing.T) {
	anth := "x-api-key: k\r\nanthropic-version: 2023-06-01\r\n"
	body := `{"model":"m","messages":[{"role":"user","content":"make me a pdf, please"}]}`
	type ending int
	const (
		closeConn ending = iota // close(): FIN
		halfClose               // shutdown(SHUT_WR): the client could still read an answer
		reset                   // SO_LINGER 0: RST
		complete                // the whole request is sent
	)
	tests := []struct {
		name, path, hdr string
		send            string // what follows the headers
		length          int    // the declared Content-Length; 0: chunked
		end             ending
		status          int // 499: nothing may be sent
	}{
		{"chat, closed", "/v1/chat/completions", "", body[:len(body)/2], len(body), closeConn, 499},
		{"chat, half-closed", "/v1/chat/completions", "", body[:len(body)/2], len(body), halfClose, 499},
		{"chat, reset", "/v1/chat/completions", "", body[:len(body)/2], len(body), reset, 499},
		{"responses, half-closed", "/v1/responses", "", body[:len(body)/2], len(body), halfClose, 499},
		{"messages, half-closed", "/v1/messages", anth, body[:len(body)/2], len(body), halfClose, 499},
		{"route, half-closed", "/v1/skills/route", "", body[:len(body)/2], len(body), halfClose, 499},
		{"chunked, half-closed mid-chunk", "/v1/chat/completions", "", "40\r\n" + body[:10], 0, halfClose, 499},
		// The client is still there: its request is wrong.
		{"cut short by Content-Length", "/v1/chat/completions", "", body, len(body) / 2, complete, 400},
		{"malformed chunked encoding", "/v1/chat/completions", "", "zz\r\n" + body + "\r\n0\r\n\r\n", 0, complete, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			addr := strings.TrimPrefix(h.ts.URL, "http://")
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			framing := "Content-Length: " + strconv.Itoa(tc.length) + "\r\n"
			if tc.length == 0 {
				framing = "Transfer-Encoding: chunked\r\n"
			}
			io.WriteString(c, "POST "+tc.path+" HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\n"+tc.hdr+framing+"\r\n"+tc.send)
			tcp := c.(*net.TCPConn)
			switch tc.end {
			case closeConn:
				c.Close()
			case halfClose:
				tcp.CloseWrite()
			case reset:
				tcp.SetLinger(0)
				c.Close()
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second)) // liveness guard
			switch tc.end {
			case halfClose:
				if got, _ := io.ReadAll(c); len(got) > 0 {
					t.Errorf("a client gone mid-body was sent %q", got)
				}
			case complete:
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil || resp.StatusCode != tc.status {
					t.Fatalf("want a %d answer, got %v (%v)", tc.status, resp, err)
				}
			}
			var line string
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if line = findLogLine(h.logText(), tc.path); line != "" {
					break
				}
			}
			if !strings.Contains(line, `"status":`+strconv.Itoa(tc.status)+`,`) {
				t.Fatalf("log line %q, want status %d", line, tc.status)
			}
			if tc.status == statusClientClosed && !strings.Contains(line, `"outcome":"client_closed"`) {
				t.Errorf("log line %q, want outcome client_closed", line)
			}
			_, m := h.do("GET", "/metrics", "", nil)
			want := `path="` + tc.path + `",status="` + strconv.Itoa(tc.status) + `"`
			if !strings.Contains(grepLines(string(m), "skillrouter_requests_total"), want) {
				t.Errorf("no request counted with %s:\n%s", want, grepLines(string(m), "skillrouter_requests_total"))
			}
			if n := len(h.up.Requests()); n != 0 {
				t.Errorf("%d requests reached the upstream", n)
			}
		})
	}
}
