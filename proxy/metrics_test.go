package proxy

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
)

func TestMetricsExposition(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"a"}`}, {Name: "search_skills", Arguments: `{"query":"pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "done"}),
	)
	h.chat(simpleChat, nil)
	h.rw.err = errBoom
	h.chat(simpleChat, nil)
	h.chat(`{"bad`, nil)
	h.do("GET", "/v1/models", "", nil)
	h.do("GET", "/v1/models/some-model", "", nil)
	// A stored-completions list shares the chat path; a method no client
	// sends is one label, whatever its name.
	h.do("GET", "/v1/chat/completions", "", nil)
	h.do("BREW", "/v1/models", "", nil)

	resp, body := h.do("GET", "/metrics", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// The exposition parses as Prometheus text.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	for _, name := range []string{
		"skillrouter_requests_total", "skillrouter_request_duration_seconds", "skillrouter_routing_duration_seconds",
		"skillrouter_upstream_duration_seconds", "skillrouter_selected_skills", "skillrouter_prompt_tokens_added",
		"skillrouter_tool_calls_total", "skillrouter_tool_rounds", "skillrouter_rewrite_errors_total",
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if fams[name] == nil {
			t.Errorf("metric %s missing", name)
		}
	}
	for _, line := range []string{
		`skillrouter_requests_total{arm="default",method="POST",outcome="complete",path="/v1/chat/completions",status="200"} 2`,
		`skillrouter_requests_total{arm="default",method="POST",outcome="complete",path="/v1/chat/completions",status="400"} 1`,
		`skillrouter_requests_total{arm="default",method="GET",outcome="complete",path="/v1/models",status="200"} 1`,
		`skillrouter_requests_total{arm="default",method="GET",outcome="complete",path="/v1/models",status="404"} 1`,
		`skillrouter_requests_total{arm="default",method="GET",outcome="complete",path="/v1/chat/completions",status="400"} 1`, // the fake upstream answers no GET
		`skillrouter_requests_total{arm="default",method="other",outcome="complete",path="/v1/models",status="405"} 1`,
		`skillrouter_request_duration_seconds_count{arm="default",method="GET",path="/v1/chat/completions"} 1`,
		`skillrouter_tool_calls_total{api="chat",arm="default",tool="load_skill"} 1`,
		`skillrouter_tool_calls_total{api="chat",arm="default",tool="search_skills"} 1`,
		`skillrouter_rewrite_errors_total{api="chat",arm="default"} 1`,
		`skillrouter_prompt_tokens_added_sum{api="chat",arm="default"} 84`,
		`skillrouter_selected_skills_sum{api="chat",arm="default"} 1`,
		`skillrouter_tool_rounds_sum{api="chat",arm="default"} 1`,
		`skillrouter_routing_duration_seconds_count{api="chat",arm="default",strategy="hybrid"} 1`,
		`skillrouter_upstream_duration_seconds_count{arm="default",path="/v1/chat/completions"} 4`, // three POST exchanges and the GET
	} {
		mustContain(t, string(body), line)
	}
}

// A ranking served from the router's cache is counted and logged.
func TestRankingCacheHitsObserved(t *testing.T) {
	h := newHarness(t, nil)
	h.chat(simpleChat, nil)
	h.rw.mu.Lock()
	h.rw.cached = true
	h.rw.mu.Unlock()
	h.chat(simpleChat, nil)
	h.chat(simpleChat, nil)
	_, body := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(body), `skillrouter_routing_cache_hits_total{arm="default"} 2`)
	logs := h.logText()
	mustContain(t, logs, `"ranking_cached":true`)
	mustContain(t, logs, `"ranking_cached":false`)
}

func TestMetricPathCardinality(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/chat/completions":                     "/v1/chat/completions",
		"/v1/chat/completions/chatcmpl-1":          "/v1/chat/completions",
		"/v1/chat/completions/chatcmpl-1/messages": "/v1/chat/completions",
		"/v1/chat/other":                           "/v1/other",
		"/v1/chat":                                 "/v1/other",
		"/v1/models/gpt-4o-mini":                   "/v1/models",
		"/v1/models":                               "/v1/models",
		"/v1/files/file-abc/x":                     "/v1/files",
		"/v1/responses/resp_1/input_items":         "/v1/responses",
		"/v1/fine_tuning/jobs/ftjob-1/events":      "/v1/fine_tuning",
		"/v1/vector_stores/vs_1/files":             "/v1/vector_stores",
		"/v1/audio/speech":                         "/v1/audio",
		"/v1/images/generations":                   "/v1/images",
		"/v1/embeddings":                           "/v1/embeddings",
		"/v1/skills":                               "/v1/skills",
		"/v1/skills/route":                         "/v1/skills/route",
		"/v1/skills/reload":                        "/v1/skills/reload",
		"/v1/skills/skill_123":                     "/v1/skills",
		"/v1/abc":                                  "/v1/other",
		"/v1/xyz/models":                           "/v1/other",
		"/v1/Models":                               "/v1/other",
		"/v1/":                                     "/v1/other",
		"/v1//models":                              "/v1/other",
		"/v1/%7Bweird%7D":                          "/v1/other",
		"/v1/" + strings.Repeat("a", 40):           "/v1/other",
		"/v1":                                      "other",
		"/elsewhere":                               "other",
		"/healthz":                                 "/healthz",
		"/healthz/x":                               "other",
		"/metrics":                                 "/metrics",
	} {
		if got := metricPath(in); got != want {
			t.Errorf("metricPath(%q) = %q, want %q", in, got, want)
		}
	}
	// Span names take the path as sent: merged as the proxy routes it.
	for in, want := range map[string]string{"/v1//chat/completions": "/v1/chat/completions", "/v1/messages/": "/v1/messages"} {
		if got := RouteLabel(in); got != want {
			t.Errorf("RouteLabel(%q) = %q, want %q", in, got, want)
		}
	}

	// Made-up paths sent to the server add no series: they all count as /v1/other.
	h := newHarness(t, nil)
	for i := range 50 {
		h.do("GET", fmt.Sprintf("/v1/made-up-%d/x", i), "", nil)
	}
	_, body := h.do("GET", "/metrics", "", nil)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]float64{}
	for _, m := range fams["skillrouter_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "path" {
				paths[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	if len(paths) != 1 || paths["/v1/other"] != 50 {
		t.Errorf("request series by path = %v, want only /v1/other: 50", paths)
	}
}

// Per-arm counters exist at 0 from the start, fallbacks for every reason
// code, so dashboards show 0 instead of "no data" before the first event.
func TestMetricsPresetAtZero(t *testing.T) {
	tests := []struct {
		name   string
		ab     *ABConfig
		arms   []string
		absent string // an arm label that must have no series
	}{
		{"no split", nil, []string{"default"}, "explicit"},
		{"split", &ABConfig{Arms: []Arm{{Name: "control", Percent: 50}, {Name: "bm25", Percent: 50, Strategy: router.StrategyBM25}}},
			[]string{"control", "bm25"}, "default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.AB = tc.ab })
			_, body := h.do("GET", "/metrics", "", nil)
			m := string(body)
			for _, arm := range tc.arms {
				for _, code := range router.FallbackCodes {
					mustContain(t, m, `skillrouter_routing_fallbacks_total{arm="`+arm+`",reason="`+string(code)+`"} 0`)
				}
				for _, name := range []string{"routing_cache_hits_total", "tool_rounds_exhausted_total", "tool_calls_dropped_total"} {
					mustContain(t, m, `skillrouter_`+name+`{arm="`+arm+`"} 0`)
				}
				for _, a := range []string{"chat", "responses", "messages"} {
					mustContain(t, m, `skillrouter_rewrite_errors_total{api="`+a+`",arm="`+arm+`"} 0`)
				}
			}
			if strings.Contains(m, `arm="`+tc.absent+`"`) {
				t.Errorf("series for arm %q, which serves no request", tc.absent)
			}

			h.rw.mu.Lock()
			h.rw.fallback, h.rw.reason = router.FallbackEmbedderTimeout, "embedder ollama exceeded its 250ms latency budget"
			h.rw.mu.Unlock()
			arm := tc.arms[0]
			var hdr map[string]string
			if tc.ab != nil {
				hdr = map[string]string{HeaderArmIn: arm}
			}
			if resp, b := h.chat(simpleChat, hdr); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			_, body = h.do("GET", "/metrics", "", nil)
			mustContain(t, string(body), `skillrouter_routing_fallbacks_total{arm="`+arm+`",reason="embedder_timeout"} 1`)
			mustContain(t, string(body), `skillrouter_routing_fallbacks_total{arm="`+arm+`",reason="embedder_unavailable"} 0`)
		})
	}
}

func TestLogsNeverCarrySecretsOrContent(t *testing.T) {
	h := newHarness(t, nil)
	h.chat(`{"model":"m","messages":[{"role":"user","content":"my secret plan"}]}`, map[string]string{"Authorization": "Bearer sk-top-secret"})
	logs := h.logText()
	if strings.Contains(logs, "sk-top-secret") || strings.Contains(logs, "my secret plan") {
		t.Fatalf("log leaks: %s", logs)
	}
	for _, k := range []string{`"strategy":"hybrid"`, `"selected":"demo/pdf"`, `"fallback":false`, `"tokens_added":84`,
		`"routing_ms":`, `"status":200`, `"rounds":0`} {
		mustContain(t, logs, k)
	}
}

// Every answer carries the id its log line has: a front end's X-Request-Id
// when it is a plain token, else a new one per request.
func TestRequestID(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		name, sent string
		keep       bool
	}{
		{"new", "", false},
		{"front end's", "7f3a9c2e-41d2-4b8e-9a1c-5d6e7f8a9b0c", true},
		{"not a plain token", `a"b<c>`, false},
		{"too long", strings.Repeat("a", 129), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.sent != "" {
				hdr["X-Request-Id"] = tc.sent
			}
			resp, _ := h.do("POST", "/v1/chat/completions", simpleChat, hdr)
			id := resp.Header.Get(HeaderRequestID)
			if tc.keep && id != tc.sent || !tc.keep && !strings.HasPrefix(id, "req_") {
				t.Fatalf("id %q for X-Request-Id %q", id, tc.sent)
			}
			if n := strings.Count(h.logText(), `"request_id":"`+id+`"`); n != 1 {
				t.Errorf("%d log lines name %s:\n%s", n, id, h.logText())
			}
			var line string
			for _, l := range strings.Split(h.logText(), "\n") {
				if strings.Contains(l, `"request_id":"`+id+`"`) {
					line = l
				}
			}
			for _, want := range []string{`"client_addr":"127.0.0.1"`, `"user_agent":"Go-http-client/1.1"`, `"model":"`} {
				if !strings.Contains(line, want) {
					t.Errorf("the log line lacks %s: %s", want, line)
				}
			}
		})
	}
	a, _ := h.do("GET", "/v1/models", "", nil)
	b, _ := h.do("GET", "/v1/models", "", nil)
	if a.Header.Get(HeaderRequestID) == b.Header.Get(HeaderRequestID) {
		t.Error("two requests, one id")
	}
}

// With client keys, each key's requests are logged with that key's client
// id (taken before the guard drops the key), and two keys' differ.
func TestAccessLogClientPerKey(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Access.APIKeys = []string{"sk-a", "sk-b"} })
	ids := map[string]string{}
	for _, k := range []string{"sk-a", "sk-b"} {
		resp, _ := h.do("POST", "/v1/chat/completions", simpleChat, map[string]string{"Authorization": "Bearer " + k})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", k, resp.StatusCode)
		}
		rid := resp.Header.Get(HeaderRequestID)
		for _, l := range strings.Split(h.logText(), "\n") {
			if strings.Contains(l, `"request_id":"`+rid+`"`) {
				_, rest, _ := strings.Cut(l, `"client":"`)
				ids[k], _, _ = strings.Cut(rest, `"`)
			}
		}
	}
	if ids["sk-a"] == "" || ids["sk-a"] == ids["sk-b"] {
		t.Errorf("client ids %v: want one per key", ids)
	}
}

// The client id is keyed by auth.client_id_secret: two servers with the
// same secret name a key alike (replicas, restarts), servers without one
// each draw their own, so a log reader cannot test guesses of a short key
// against its id.
func TestClientIDSecret(t *testing.T) {
	idOf := func(secret string) string {
		h := newHarness(t, func(c *Config) {
			c.Access.APIKeys = []string{"sk-team-1"}
			c.Access.ClientIDSecret = secret
		})
		r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
		r.Header.Set("Authorization", "Bearer sk-team-1")
		id := h.srv.clientIDOf(r)
		if id == "" || strings.Contains(id, "sk-team-1") {
			t.Fatalf("client id %q", id)
		}
		return id
	}
	for _, tt := range []struct {
		name     string
		a, b     string
		wantSame bool
	}{
		{"same secret", "s3cret-shared-by-replicas", "s3cret-shared-by-replicas", true},
		{"other secret", "s3cret-shared-by-replicas", "another-secret", false},
		{"no secret: one per process", "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := idOf(tt.a), idOf(tt.b); (a == b) != tt.wantSame {
				t.Errorf("ids %s and %s, want same %v", a, b, tt.wantSame)
			}
		})
	}
}
