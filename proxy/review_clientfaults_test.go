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
