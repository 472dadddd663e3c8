package proxy

import (
	"strings"
	"testing"
)

// A wrong method on a path the proxy owns is answered by the proxy (405 with
// Allow), never forwarded; other methods on chat completions and on
// /v1/skills (OpenAI's APIs there) still pass through.
func TestProxyPathMethods(t *testing.T) {
	const getAllow, postAllow = "GET, HEAD, OPTIONS", "POST, OPTIONS"
	tests := []struct {
		method, path string
		status       int    // 0: whatever the upstream answered
		allow        string // "" = no Allow header expected
		upstream     int    // requests the upstream must see
	}{
		{"GET", "/v1/skills/route", 405, postAllow, 0},
		{"GET", "/v1/skills/reload", 405, postAllow, 0},
		{"PUT", "/v1/skills/route", 405, postAllow, 0},
		{"DELETE", "/v1/skills/reload", 405, postAllow, 0},
		// Listing is the proxy's; other methods are OpenAI's Skills API
		// (POST creates a skill), passed through.
		{"POST", "/v1/skills", 0, "", 1},
		{"DELETE", "/v1/skills", 0, "", 1},
		{"HEAD", "/v1/skills", 0, "", 0},                 // answered here (404 without a library)
		{"PURGE", "/v1/skills/route", 405, postAllow, 0}, // a method Echo does not route
		{"POST", "/healthz", 405, getAllow, 0},
		{"DELETE", "/readyz", 405, getAllow, 0},
		{"POST", "/metrics", 405, getAllow, 0},
		{"OPTIONS", "/v1/skills/route", 204, postAllow, 0},
		{"OPTIONS", "/healthz", 204, getAllow, 0},
		{"HEAD", "/healthz", 200, "", 0},
		{"HEAD", "/metrics", 200, "", 0},
		{"GET", "/healthz", 200, "", 0},
		// OpenAI's stored completions: not the proxy's.
		{"GET", "/v1/chat/completions", 0, "", 1},
		{"DELETE", "/v1/chat/completions/chatcmpl-1", 0, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			h := newHarness(t, nil)
			resp, b := h.do(tc.method, tc.path, "", nil)
			if tc.status != 0 && resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow = %q, want %q", got, tc.allow)
			}
			// The fake keeps DELETEs of stored objects apart (Deletes).
			if n := len(h.up.Requests()) + len(h.up.Deletes()); n != tc.upstream {
				t.Fatalf("upstream saw %d requests, want %d", n, tc.upstream)
			}
			if tc.status != 405 {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			msg := checkAPIError(t, b, "method_not_allowed")
			if !strings.Contains(msg, tc.method) || !strings.Contains(msg, tc.path) || !strings.Contains(msg, tc.allow) {
				t.Errorf("message %q names neither method, path nor allowed methods", msg)
			}
		})
	}
}
