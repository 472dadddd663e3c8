package mcpserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/internal/syncbuf"
)

// Past MaxSessions every new session is refused with a 503 and a WARN line
// of its own ("mcp: new session refused: too many open"), and nothing else
// records it: /mcp is outside the proxy's access log and
// skillrouter_requests_total, and no metric counts the refusals or the
// open sessions. The cap exists for a client opening sessions in a loop
// (TestHTTPSessionsBounded: ~1,400 a second), so at the cap the log gets
// one WARN per attempt — the flood moves from memory to the log. The
// connection cap it parallels (server.max_connections, cmd/router
// server.go) logs the first refusal and then at most one line per 10 s
// with a count, and counts skillrouter_connections_refused_total.
func TestObs15SessionRefusalsDoNotFloodTheLog(t *testing.T) {
	f := newFixture(t, false)
	var buf syncbuf.Buffer
	srv, err := New(Config{MaxSessions: 1, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv.Sync(f.reg.Snapshot())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ts := httptest.NewServer(srv.Handler(ctx, nil))
	defer ts.Close()
	defer http.DefaultClient.CloseIdleConnections()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`
	const attempts = 200
	refused := 0
	var ids []string
	for i := 0; i < attempts; i++ {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			refused++
		} else if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", id)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	if refused < attempts-1 {
		t.Fatalf("control: %d of %d refused", refused, attempts)
	}
	if n := strings.Count(buf.String(), "new session refused"); n > 5 {
		t.Errorf("%d refusals in a burst logged %d WARN lines (one per attempt): want the first, then a periodic count", refused, n)
	}
}
