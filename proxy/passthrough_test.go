package proxy

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

func TestPassThroughPaths(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantPath, wantQuery      string
		wantStatus               int
		wantBodyContains         string
	}{
		{"models", "GET", "/v1/models", "", "/v1/models", "", 200, `"fake-model"`},
		{"model by id with query", "GET", "/v1/models/gpt-4o?x=1&y=%2F", "", "/v1/models/gpt-4o", "x=1&y=%2F", 404, "unknown path"},
		{"embeddings", "POST", "/v1/embeddings", `{"model":"e","input":"hi"}`, "/v1/embeddings", "", 200, `"embedding"`},
		{"completions", "POST", "/v1/completions", `{"model":"m","prompt":"hi"}`, "/v1/completions", "", 200, `"hello world"`},
		{"stored response", "GET", "/v1/responses/resp_1", "", "/v1/responses/resp_1", "", 404, "Response with id 'resp_1' not found"},
		{"message batches", "POST", "/v1/messages/batches", `{"requests":[]}`, "/v1/messages/batches", "", 404, "unknown path"},
		{"delete", "DELETE", "/v1/files/file-1", "", "/v1/files/file-1", "", 404, "unknown path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			resp, body := h.do(tc.method, tc.path, tc.body, nil)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			mustContain(t, string(body), tc.wantBodyContains)
			reqs := h.up.Requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream got %d requests", len(reqs))
			}
			got := reqs[0]
			if got.Method != tc.method || got.Path != tc.wantPath || got.RawQuery != tc.wantQuery {
				t.Fatalf("upstream got %s %s?%s", got.Method, got.Path, got.RawQuery)
			}
			if string(got.Body) != tc.body {
				t.Fatalf("upstream body %q, want %q unchanged", got.Body, tc.body)
			}
			if len(h.rw.overrides()) != 0 {
				t.Fatal("pass-through must not route")
			}
		})
	}
}

func TestPassThroughUpstreamUnderBasePath(t *testing.T) {
	// An upstream base with its own prefix (e.g. https://host/openai/v1).
	h := newHarness(t, nil)
	h.srv.openai.base.Path = "/v1/v1" // base /v1/v1: /v1/models → /v1/v1/models
	resp, _ := h.do("GET", "/v1/models", "", nil)
	if resp.StatusCode != 404 || h.up.Requests()[0].Path != "/v1/v1/models" {
		t.Fatalf("status %d path %q", resp.StatusCode, h.up.Requests()[0].Path)
	}
}

// TestPassThroughStreamsByteForByte: streams the proxy does not touch reach
// the client as the upstream sent them: a pass-through path, and a routed
// one whose routing the client turned off.
func TestPassThroughStreamsByteForByte(t *testing.T) {
	for _, path := range []string{"/v1/completions", "/v1/responses"} {
		t.Run(path, func(t *testing.T) {
			h := newHarness(t, nil)
			body := `{"model":"m","stream":true,"input":"hi"}`
			// What the upstream sends when asked directly.
			direct, err := h.up.Client().Post(h.up.BaseURL()+strings.TrimPrefix(path, "/v1"), "application/json",
				strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := io.ReadAll(direct.Body)
			direct.Body.Close()
			resp, got := h.do("POST", path, body, map[string]string{HeaderDisable: "true"})
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("content type %q", ct)
			}
			// ids carry a per-request counter and timestamps the second:
			// compare after normalising both.
			norm := func(b []byte) string {
				s := regexp.MustCompile(`(cmpl-fake-|resp_fake_|msg_fake_)\d+`).ReplaceAllString(string(b), "${1}N")
				return regexp.MustCompile(`"(created_at|completed_at)":\d+`).ReplaceAllString(s, `"$1":T`)
			}
			if norm(got) != norm(want) {
				t.Fatalf("stream changed:\n got %q\nwant %q", got, want)
			}
			if path == "/v1/responses" {
				mustContain(t, string(got), "event: response.output_text.delta\n")
			}
		})
	}
}

func TestHeaderForwarding(t *testing.T) {
	tests := []struct {
		name     string
		apiKey   string
		override bool
		in       map[string]string
		want     map[string]string // "" = must be absent
	}{
		{
			name: "client headers forwarded, hop-by-hop and controls stripped",
			in: map[string]string{
				"Authorization":          "Bearer client-key",
				"OpenAI-Organization":    "org-1",
				"OpenAI-Project":         "proj-1",
				"X-Custom":               "yes",
				"Connection":             "keep-alive, X-Hop",
				"X-Hop":                  "must-not-pass",
				"Keep-Alive":             "timeout=5",
				"Proxy-Authorization":    "Basic secret",
				"Te":                     "trailers",
				"Upgrade":                "h2c",
				"X-Skillrouter-Top-K":    "1",
				"X-Skillrouter-Strategy": "bm25",
			},
			want: map[string]string{
				"Authorization": "Bearer client-key", "Openai-Organization": "org-1", "Openai-Project": "proj-1",
				"X-Custom": "yes", "X-Hop": "", "Keep-Alive": "", "Proxy-Authorization": "", "Te": "",
				"Upgrade": "", "X-Skillrouter-Top-K": "", "X-Skillrouter-Strategy": "",
			},
		},
		{
			name:   "configured key used when the client sends none",
			apiKey: "sk-config",
			in:     map[string]string{"X-Custom": "1"},
			want:   map[string]string{"Authorization": "Bearer sk-config"},
		},
		{
			name:   "client key wins over configured key",
			apiKey: "sk-config",
			in:     map[string]string{"Authorization": "Bearer sk-client"},
			want:   map[string]string{"Authorization": "Bearer sk-client"},
		},
		{
			name:     "override replaces client key",
			apiKey:   "sk-config",
			override: true,
			in:       map[string]string{"Authorization": "Bearer dummy"},
			want:     map[string]string{"Authorization": "Bearer sk-config"},
		},
		{
			name: "no key anywhere",
			in:   map[string]string{},
			want: map[string]string{"Authorization": ""},
		},
	}
	for _, tc := range tests {
		for _, path := range []string{"/v1/models", "/v1/chat/completions"} {
			t.Run(tc.name+" "+path, func(t *testing.T) {
				h := newHarness(t, func(c *Config) { c.APIKey = tc.apiKey; c.OverrideAuth = tc.override })
				method, body := "GET", ""
				if path == "/v1/chat/completions" {
					method, body = "POST", simpleChat
				}
				resp, b := h.do(method, path, body, tc.in)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, b)
				}
				got := h.up.Requests()[0].Header
				for k, v := range tc.want {
					if got.Get(k) != v {
						t.Errorf("upstream header %s = %q, want %q", k, got.Get(k), v)
					}
				}
			})
		}
	}
}

func TestResponseHopHeadersStripped(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Handle("/v1/models", func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
		w.Header().Set("Connection", "X-Secret-Hop")
		w.Header().Set("X-Secret-Hop", "1")
		w.Header().Set("X-Request-Id", "req-42")
		w.Header().Set("Openai-Processing-Ms", "12")
		w.WriteHeader(200)
		io.WriteString(w, `{"object":"list","data":[]}`)
	})
	resp, _ := h.do("GET", "/v1/models", "", nil)
	if resp.Header.Get("X-Secret-Hop") != "" {
		t.Fatal("hop-by-hop response header leaked")
	}
	if resp.Header.Get("X-Request-Id") != "req-42" || resp.Header.Get("Openai-Processing-Ms") != "12" {
		t.Fatalf("end-to-end response headers lost: %v", resp.Header)
	}
}

func TestUpstreamErrorsPassedThrough(t *testing.T) {
	for _, status := range []int{400, 401, 404, 429, 500, 503} {
		for _, path := range []string{"/v1/chat/completions", "/v1/embeddings"} {
			for _, stream := range []bool{false, true} {
				if stream && path != "/v1/chat/completions" {
					continue
				}
				h := newHarness(t, nil)
				errBody := `{"error":{"message":"nope","type":"x","param":null,"code":"c"}}`
				if path == "/v1/chat/completions" {
					h.up.Script(fakeai.Raw(status, "application/json", errBody))
				} else {
					h.up.Handle(path, fakeai.Raw(status, "application/json", errBody))
				}
				body := simpleChat
				if stream {
					body = streamChat("")
				}
				resp, b := h.do("POST", path, body, nil)
				if resp.StatusCode != status || !bytes.Equal(b, []byte(errBody)) {
					t.Fatalf("%s stream=%v: got %d %s, want %d %s", path, stream, resp.StatusCode, b, status, errBody)
				}
			}
		}
	}
}

func TestHooks(t *testing.T) {
	var seen []string
	h := newHarness(t, func(c *Config) {
		c.ModifyRequest = func(r *http.Request) { r.Header.Set("X-Tenant", "t1") }
		c.ModifyResponse = func(r *http.Response) error {
			seen = append(seen, r.Request.URL.Path)
			if r.Request.URL.Path == "/v1/embeddings" {
				return io.ErrUnexpectedEOF
			}
			r.Header.Set("X-Seen", "yes")
			return nil
		}
	})
	resp, _ := h.do("GET", "/v1/models", "", nil)
	if resp.Header.Get("X-Seen") != "yes" || h.up.Requests()[0].Header.Get("X-Tenant") != "t1" {
		t.Fatalf("hooks not applied: %v", resp.Header)
	}
	resp, _ = h.chat(simpleChat, nil)
	if resp.Header.Get("X-Seen") != "yes" {
		t.Fatal("ModifyResponse not applied to chat")
	}
	resp, b := h.do("POST", "/v1/embeddings", `{}`, nil)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("rejected response: %d %s", resp.StatusCode, b)
	}
	checkAPIError(t, b, "upstream_response_rejected")
	if len(seen) != 3 {
		t.Fatalf("ModifyResponse saw %v", seen)
	}
}

// An agent CLI's compaction request (sent because its context is full, for
// a text-only summary) is routed with nothing auto-loaded or carried on its
// prompt (TopK 0, no carried skills), but keeps the catalog and tools every
// turn of the conversation had: its cached prefix.
func TestCompactionRequestNotRouted(t *testing.T) {
	for _, tc := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"m","max_tokens":50,"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"make me a pdf"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"text","text":"CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the conversation so far."}]}]}`},
		{"/v1/responses", `{"model":"m","input":[{"role":"user","content":"make me a pdf"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},{"role":"user","content":"You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary."}]}`},
	} {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "summary"}))
		resp, b := h.do("POST", tc.path, tc.body, map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, b)
		}
		reqs := h.up.Requests()
		withTools := tc.path == "/v1/messages" // the client sent tools: so do the turns before
		if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "CATALOG") || strings.Contains(string(reqs[0].Body), "load_skill") != withTools {
			t.Errorf("%s: the upstream got %s, want the catalog, and the proxy's tools only beside the client's", tc.path, reqs[len(reqs)-1].Body)
		}
		ovs := h.rw.overrides()
		if len(ovs) != 1 || ovs[0].TopK == nil || *ovs[0].TopK != 0 || ovs[0].Carried != nil || ovs[0].Disable {
			t.Errorf("%s: overrides %+v, want TopK 0 and nothing carried", tc.path, ovs)
		}
		// Sent without tools of its own (Codex's): none of the proxy's.
		if got := h.rw.views(); len(got) != 1 || got[0].NoTools != (tc.path == "/v1/responses") {
			t.Errorf("%s: NoTools %v", tc.path, got)
		}
		finish(t, h)
		mustContain(t, logLine(t, h.logText(), tc.path), `"compaction":true`)
	}
}
