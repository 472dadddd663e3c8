package proxy

import (
	"strings"
	"testing"
)

// TestOAuthProbesAnswer404: with client keys, the OAuth discovery
// documents MCP hosts ask for after a 401 from /mcp, and /register (where
// they register a client when discovery finds none), answered 401, which
// sent hosts down the OAuth path: Claude Code reported "Dynamic Client
// Registration rejected (HTTP 401)". There is no OAuth: they answer 404
// without a key, saying how the key is sent; nothing else is opened.
func TestOAuthProbesAnswer404(t *testing.T) {
	for _, keys := range []bool{true, false} {
		h := newHarness(t, func(c *Config) {
			if keys {
				c.Access.APIKeys = []string{"sk-a"}
			}
		})
		for _, tt := range []struct {
			method, path string
			status       int
		}{
			{"GET", "/.well-known/oauth-protected-resource", 404},
			{"GET", "/.well-known/oauth-protected-resource/mcp", 404},
			{"GET", "/.well-known/oauth-authorization-server", 404},
			{"GET", "/.well-known/oauth-authorization-server/mcp", 404},
			{"GET", "/.well-known/openid-configuration", 404},
			{"GET", "/.well-known/openid-configuration/mcp", 404},
			{"GET", "/mcp/.well-known/openid-configuration", 404},
			{"POST", "/register", 404},
			// Not OAuth probes: a key is still asked for.
			{"GET", "/.well-known/security.txt", 401},
			{"GET", "/v1/.well-known/openid-configuration", 401},
			{"GET", "/.well-known/oauth-protected-resource-x", 401},
			{"POST", "/v1/chat/completions", 401},
		} {
			if !keys && tt.status == 401 {
				continue
			}
			h.up.Reset()
			resp, b := h.do(tt.method, tt.path, "", nil)
			if resp.StatusCode != tt.status {
				t.Errorf("keys %v: %s %s: %d %s, want %d", keys, tt.method, tt.path, resp.StatusCode, b, tt.status)
				continue
			}
			if tt.status == 404 {
				want := "asks for no key"
				if keys {
					want = `--header \"Authorization: Bearer KEY\"`
				}
				if !strings.Contains(string(b), "has no OAuth") || !strings.Contains(string(b), want) || resp.Header.Get("WWW-Authenticate") != "" {
					t.Errorf("keys %v: %s %s: %v %s", keys, tt.method, tt.path, resp.Header, b)
				}
			}
			if n := len(h.up.Requests()); n != 0 {
				t.Errorf("keys %v: %s %s went upstream", keys, tt.method, tt.path)
			}
		}
	}
}
