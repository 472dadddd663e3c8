package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestDebugListenerRefusesRebinding: the pprof listener
// (debug.listen, documented as 127.0.0.1:6060) has none of the API
// listener's Host check. A web page that rebinds its own name to 127.0.0.1
// reads its answers same-origin: /debug/pprof/cmdline returns the proxy's
// command line, where `router serve --help` itself suggests passing
// --upstream-api-key. It must refuse a Host that is not loopback/localhost,
// as the API listener does (403 host_not_allowed).
func TestDebugListenerRefusesRebinding(t *testing.T) {
	const secret = "sk-upstream-secret-123"
	saved := os.Args
	os.Args = []string{"router", "serve", "--upstream-api-key", secret}
	defer func() { os.Args = saved }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := serveDebug(ctx, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/debug/pprof/cmdline", nil)
	req.Host = "rebind.attacker.example:6060" // what the browser sends after rebinding
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK || strings.Contains(string(b), secret) {
		t.Fatalf("Host %q served by the debug listener: %d %q", req.Host, resp.StatusCode, b)
	}
}

// A request another web page causes gets no profile: it could not read it,
// but could keep a CPU profile or trace of the whole process running. A
// URL typed into the browser, curl and go tool pprof are served.
func TestDebugListenerRefusesWebPages(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := serveDebug(ctx, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"curl", nil, http.StatusOK},
		{"typed into the browser", map[string]string{"Sec-Fetch-Site": "none"}, http.StatusOK},
		{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{"another site's page", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"a sibling site's page", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"a fetch with an Origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/debug/pprof/", nil)
		for k, v := range tt.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
}
