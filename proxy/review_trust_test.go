package proxy

import (
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// TestAllowedOriginNotForwarded: the proxy answers a browser's CORS itself
// (server.allowed_origins), so the Origin of an allowed web application
// stays on the browser's hop. Forwarded, it makes the upstream treat the
// proxy's server-side call as a browser's: Anthropic's API answers any
// request carrying Origin 401 authentication_error "CORS requests must set
// 'anthropic-dangerous-direct-browser-access' header" (or refuses it
// outright for organizations that disallow CORS). Every request the proxy
// sends for the client goes without it: routed, hidden rounds, passed
// through.
func TestAllowedOriginNotForwarded(t *testing.T) {
	loadThenAnswer := []fakeai.Responder{
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}),
	}
	tests := []struct {
		name, method, path, body string
		script                   bool
	}{
		{"messages, with a hidden round", "POST", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"make me a pdf"}]}`, true},
		{"messages stream", "POST", "/v1/messages", `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"make me a pdf"}]}`, false},
		{"chat, with a hidden round", "POST", "/v1/chat/completions", simpleChat, true},
		{"responses", "POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, false},
		{"pass-through", "GET", "/v1/models", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Access.AllowedOrigins = []string{"https://chat.example.com"} })
			if tc.script {
				h.up.Script(loadThenAnswer...)
			}
			hdr := map[string]string{"Origin": "https://chat.example.com", "X-Api-Key": "sk-test", "Anthropic-Version": "2023-06-01"}
			resp, b := h.do(tc.method, tc.path, tc.body, hdr)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "https://chat.example.com" {
				t.Errorf("CORS answer lost: %v", resp.Header)
			}
			reqs := h.up.Requests()
			if tc.script && len(reqs) < 2 {
				t.Fatalf("upstream got %d requests, want a hidden round", len(reqs))
			}
			for _, r := range reqs {
				if o := r.Header.Get("Origin"); o != "" {
					t.Errorf("%s %s went upstream with Origin %q", r.Method, r.Path, o)
				}
			}
		})
	}
}
