package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// deadlineRecorder counts the write deadlines set on it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// TestStallWriterArmsOncePerStretch: the write bound does not set the
// connection's deadline on every write and flush of a stream (a
// thousand-event stream paid two deadline updates per event, a tenth of
// the proxy's CPU for it): a deadline set a moment ago still bounds the
// next write, within a second of the limit.
func TestStallWriterArmsOncePerStretch(t *testing.T) {
	tests := []struct {
		limit     time.Duration
		wantArmed int // for 1,000 events written at once
	}{
		{time.Minute, 1},
		{300 * time.Millisecond, 1},
	}
	for _, tc := range tests {
		t.Run(tc.limit.String(), func(t *testing.T) {
			rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			w := (&Server{cfg: Config{Access: Access{WriteTimeout: tc.limit}}}).writeBound(rec).(*stallWriter)
			start := time.Now()
			for range 1000 {
				if _, err := w.Write([]byte("data: {}\n\n")); err != nil {
					t.Fatal(err)
				}
				if err := w.FlushError(); err != nil {
					t.Fatal(err)
				}
			}
			if time.Since(start) > tc.limit/32 {
				t.Skip("the machine is too slow for the measure")
			}
			if len(rec.deadlines) != tc.wantArmed {
				t.Fatalf("%d deadlines set for 1,000 events, want %d", len(rec.deadlines), tc.wantArmed)
			}
			if d := rec.deadlines[0].Sub(start); d < tc.limit || d > tc.limit+time.Second {
				t.Errorf("deadline %v after the first write, want the limit %v", d, tc.limit)
			}
		})
	}
}

// TestStallWriterRearmsAfterAWhile: a write that comes later than the
// re-arm stretch gets a fresh deadline, so the bound stays within a second
// (or a sixteenth of the limit) of WriteTimeout for every write.
func TestStallWriterRearmsAfterAWhile(t *testing.T) {
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	limit := 160 * time.Millisecond
	w := (&Server{cfg: Config{Access: Access{WriteTimeout: limit}}}).writeBound(rec).(*stallWriter)
	w.Write([]byte("a"))
	time.Sleep(limit/16 + 5*time.Millisecond)
	before := time.Now()
	w.Write([]byte("b"))
	if len(rec.deadlines) != 2 {
		t.Fatalf("%d deadlines set, want 2", len(rec.deadlines))
	}
	if d := rec.deadlines[1].Sub(before); d < limit {
		t.Errorf("the second write's deadline is %v away, want at least %v", d, limit)
	}
}

// TestStalledClientConnectionIsReset: the connection of a client cut for
// reading nothing (server.write_timeout) is closed with a reset, so the
// kernel frees it and the unsent data at once: closed as usual, the
// megabytes the client never read stayed queued behind the FIN until TCP
// gave up. The client that resumes reading is told (ECONNRESET) rather
// than getting a cut answer that ends as if whole. A connection closed
// after a whole answer ends as usual (EOF).
func TestStalledClientConnectionIsReset(t *testing.T) {
	big := strings.Repeat("x", 12<<20) // more than the socket buffers hold
	tests := []struct {
		name, path, body string
		passThrough      bool
		stall            bool
	}{
		{name: "chat stream", path: "/v1/chat/completions", body: streamChat(""), stall: true},
		{name: "chat JSON", path: "/v1/chat/completions", body: simpleChat, stall: true},
		{name: "pass-through", path: "/v1/files/file-1/content", passThrough: true, stall: true},
		{name: "read whole, Connection: close", path: "/v1/chat/completions", body: simpleChat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Access.WriteTimeout = 300 * time.Millisecond })
			content := big
			if !tc.stall {
				content = "a short answer"
			}
			reply := fakeai.Reply(fakeai.Turn{Content: content, ContentChunks: 48})
			if tc.passThrough {
				h.up.Handle(tc.path, fakeai.Raw(200, "application/octet-stream", content))
			} else {
				h.up.Script(reply)
			}
			method := "POST"
			if tc.passThrough {
				method = "GET"
			}
			c := sendRaw(t, h, method, tc.path, "Connection: close\r\n", tc.body)
			if tc.stall {
				// The client reads nothing until the proxy has cut it.
				for deadline := time.Now().Add(10 * time.Second); findLogLine(h.logText(), tc.path) == ""; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the stalled client was not cut")
					}
				}
				if line := findLogLine(h.logText(), tc.path); !strings.Contains(line, "server.write_timeout") {
					t.Fatalf("log line %q, want the write timeout", line)
				}
				if st, ok := serverSideTCPState(t, c); ok {
					// Closed with a reset, the server's socket is gone; closed
					// with unsent data, it waits in FIN_WAIT1 (state 04).
					for deadline := time.Now().Add(2 * time.Second); st != "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
						st, _ = serverSideTCPState(t, c)
					}
					if st != "" {
						t.Errorf("the server's side of the cut connection is still there, TCP state %s", st)
					}
				}
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second)) // liveness guard
			n, err := io.Copy(io.Discard, c)
			switch {
			case tc.stall && !errors.Is(err, syscall.ECONNRESET):
				t.Errorf("the client read %d bytes, then %v; want ECONNRESET", n, err)
			case !tc.stall && err != nil:
				t.Errorf("the client read %d bytes, then %v; want EOF", n, err)
			}
		})
	}
}

// serverSideTCPState is the TCP state (hex, as /proc/net/tcp has it) of
// the server's end of client connection c, "" when it has none; ok is
// false where /proc/net/tcp cannot be read.
func serverSideTCPState(t *testing.T, c net.Conn) (state string, ok bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return "", false
	}
	local, remote := c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)
	// The server's end: its local address is the client's remote one.
	want := fmt.Sprintf(":%04X %s:%04X", remote.Port, procAddr(local.IP), local.Port)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1], want[:5]) && strings.HasSuffix(f[1]+" "+f[2], want) {
			return f[3], true
		}
	}
	return "", true
}

// procAddr is an IPv4 address as /proc/net/tcp writes it (little-endian hex).
func procAddr(ip net.IP) string {
	v4 := ip.To4()
	return fmt.Sprintf("%02X%02X%02X%02X", v4[3], v4[2], v4[1], v4[0])
}
