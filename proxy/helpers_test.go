package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/wire"
)

// fakeRewriter stands in for package router: it inserts a catalog system
// message, appends one envelope per "selected" skill and adds load_skill.
type fakeRewriter struct {
	mu        sync.Mutex
	err       error
	selected  []string
	catalog   string   // the plan's catalog; "" = CATALOG
	handles   []string // tool names the session answers; nil = load_skill, search_skills
	noTools   bool     // no session at all
	followErr error    // sessions answer with a call id the follow-up cannot match
	cached    bool     // decisions say their ranking came from the cache
	fallback  router.FallbackCode
	reason    string // fallback reason
	search    string // what sessions answer search_skills with; "": an envelope, as load_skill
	ready     bool
	degraded  string // Degraded's answer
	seen      []router.Overrides
	seenViews []wire.Request
	sessions  []*fakeSession
}

func newFakeRewriter() *fakeRewriter {
	return &fakeRewriter{selected: []string{"demo/pdf"}, ready: true}
}

func (f *fakeRewriter) Ready() bool { return f.ready }

func (f *fakeRewriter) Degraded() string { return f.degraded }

func (f *fakeRewriter) Rewrite(ctx context.Context, req *wire.Request, ov router.Overrides) (*Rewrite, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, ov)
	f.seenViews = append(f.seenViews, *req)
	if f.err != nil {
		return nil, f.err
	}
	if ov.Disable { // as the router: the request goes upstream as it is
		return &Rewrite{Decision: &router.Decision{}}, nil
	}
	sel := f.selected
	// As the router: a request that cannot take the proxy's tools
	// (wire.Request.NoTools) gets none, and no session.
	noTools := f.noTools || req.NoTools
	catalog := f.catalog
	if catalog == "" {
		catalog = "CATALOG"
	}
	plan := &wire.Plan{Catalog: catalog, CatalogJSON: wire.Quote(catalog), EnvelopeRole: "user", Changed: true}
	if !req.NoTools {
		plan.Tools = wire.ToolSet{Server: []wire.ToolSpec{fakeLoadSkill}}
	}
	for _, id := range sel {
		text := "<skill_context id=\"" + id + "\">BODY</skill_context>"
		plan.Envelopes = append(plan.Envelopes, wire.Envelope{ID: id, Text: text, JSON: wire.Quote(text)})
	}
	strategy := ov.Strategy
	if strategy == "" {
		strategy = router.StrategyHybrid
	}
	rw := &Rewrite{Plan: plan, AddedTokens: 42 * (len(sel) + 1),
		Decision: &router.Decision{Strategy: strategy, Selected: append([]string{}, sel...), Embedder: "fake", Cached: f.cached,
			Fallback: f.fallback != "", FallbackCode: f.fallback, FallbackReason: f.reason}}
	if !noTools {
		h := f.handles
		if h == nil {
			h = []string{"load_skill", "search_skills"}
		}
		s := &fakeSession{handles: h, fail: f.followErr, active: append(slices.Clone(ov.Present), sel...), search: f.search}
		f.sessions = append(f.sessions, s)
		rw.Session = s
	}
	return rw, nil
}

var fakeLoadSkill = wire.ToolSpec{Name: "load_skill", Parameters: json.RawMessage(`{"type":"object","properties":{"skill_id":{"type":"string"}},"required":["skill_id"]}`)}

// views returns the requests Rewrite was given.
func (f *fakeRewriter) views() []wire.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.Request(nil), f.seenViews...)
}

func (f *fakeRewriter) overrides() []router.Overrides {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]router.Overrides(nil), f.seen...)
}

type fakeSession struct {
	mu      sync.Mutex
	handles []string
	calls   []string // name(args)
	fail    error    // answer with a call id the follow-up cannot match
	active  []string // skills active at the end (router.Session.Active)
	search  string   // fakeRewriter.search
}

func (s *fakeSession) Active() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.active)
}

func (s *fakeSession) Handles(name string) bool {
	for _, h := range s.handles {
		if h == name {
			return true
		}
	}
	return false
}

func (s *fakeSession) Call(ctx context.Context, callID, name string, args json.RawMessage) wire.ToolResult {
	s.mu.Lock()
	s.calls = append(s.calls, name+string(args))
	s.mu.Unlock()
	var a struct {
		SkillID string `json:"skill_id"`
	}
	_ = json.Unmarshal(args, &a)
	if s.fail != nil {
		// A result for a call the answer does not hold: the follow-up fails.
		callID = "no-such-call"
	}
	if name == "search_skills" && s.search != "" {
		return wire.ToolResult{CallID: callID, Name: name, Content: s.search}
	}
	return wire.ToolResult{CallID: callID, Name: name, Content: "<skill_context id=\"" + a.SkillID + "\">LOADED</skill_context>"}
}

func (s *fakeSession) Tools() wire.ToolSet {
	return wire.ToolSet{Server: []wire.ToolSpec{fakeLoadSkill}}
}

// harness is a proxy in front of a fake upstream.
type harness struct {
	t     *testing.T
	up    *fakeai.Server
	rw    *fakeRewriter
	srv   *Server
	ts    *httptest.Server
	logs  *bytes.Buffer
	logMu *sync.Mutex
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	up := fakeai.New()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.BaseURL())
	rw := newFakeRewriter()
	logs, mu := &bytes.Buffer{}, &sync.Mutex{}
	cfg := Config{
		Upstream: u,
		Rewriter: rw,
		Logger:   slog.New(slog.NewJSONHandler(&lockedWriter{w: logs, mu: mu}, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener = ResetStalled(ts.Listener) // as cmd/router serves it
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(func() { // the deletion of hidden rounds' responses (hidden.go)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Finish(ctx); err != nil {
			t.Errorf("background work still running: %v", err)
		}
	})
	t.Cleanup(func() {
		if tr, ok := srv.transport.(*http.Transport); ok {
			tr.CloseIdleConnections()
		}
	})
	return &harness{t: t, up: up, rw: rw, srv: srv, ts: ts, logs: logs, logMu: mu}
}

func (h *harness) logText() string {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return h.logs.String()
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// do sends a request to the proxy and returns the response with its body read.
func (h *harness) do(method, path, body string, hdr map[string]string) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.ts.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body == "" {
		req.Body = http.NoBody
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, b
}

func (h *harness) chat(body string, hdr map[string]string) (*http.Response, []byte) {
	return h.do("POST", "/v1/chat/completions", body, hdr)
}

const simpleChat = `{"model":"m","messages":[{"role":"user","content":"make me a pdf"}]}`

func streamChat(extra string) string {
	return `{"model":"m","stream":true` + extra + `,"messages":[{"role":"user","content":"make me a pdf"}]}`
}

// sseData splits an SSE body into its data payloads.
func sseData(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// toolCall is one complete tool call of a chat answer.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// toolCallDelta is one fragment of a streamed chat tool call.
type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// assembled is what an SDK reconstructs from a chat completion stream.
type assembled struct {
	IDs          map[string]bool
	Content      string
	ToolCalls    map[int]*toolCall
	FinishReason []string
	Usage        []map[string]any
	Done         int
	Errors       []string
}

// assemble accumulates stream chunks the way the OpenAI SDKs do.
func assemble(t *testing.T, body []byte) *assembled {
	t.Helper()
	a := &assembled{IDs: map[string]bool{}, ToolCalls: map[int]*toolCall{}}
	for _, d := range sseData(t, body) {
		if d == "[DONE]" {
			a.Done++
			continue
		}
		var ch struct {
			ID      string `json:"id"`
			Choices []struct {
				Delta struct {
					Content   *string         `json:"content"`
					ToolCalls []toolCallDelta `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any  `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil {
			t.Fatalf("bad chunk %q: %v", d, err)
		}
		if len(ch.Error) > 0 {
			a.Errors = append(a.Errors, string(ch.Error))
			continue
		}
		a.IDs[ch.ID] = true
		if ch.Usage != nil {
			a.Usage = append(a.Usage, ch.Usage)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				a.Content += *c.Delta.Content
			}
			for _, d := range c.Delta.ToolCalls {
				tc := a.ToolCalls[d.Index]
				if tc == nil {
					tc = &toolCall{}
					a.ToolCalls[d.Index] = tc
				}
				if d.ID != "" {
					tc.ID = d.ID
				}
				if d.Function.Name != "" {
					tc.Function.Name = d.Function.Name
				}
				tc.Function.Arguments += d.Function.Arguments
			}
			if c.FinishReason != nil {
				a.FinishReason = append(a.FinishReason, *c.FinishReason)
			}
		}
	}
	return a
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return m
}

// checkAPIError asserts an OpenAI-shaped error body.
func checkAPIError(t *testing.T, b []byte, code string) string {
	t.Helper()
	var e struct {
		Error struct {
			Message *string `json:"message"`
			Type    *string `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body is not JSON: %s", b)
	}
	if e.Error.Message == nil || e.Error.Type == nil || e.Error.Code == nil {
		t.Fatalf("error body lacks message/type/code: %s", b)
	}
	if code != "" && *e.Error.Code != code {
		t.Fatalf("error code = %q, want %q (%s)", *e.Error.Code, code, b)
	}
	return *e.Error.Message
}

var errBoom = errors.New("boom")

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sendRaw sends method path with the extra header lines hdr (each ended by
// CRLF) and body on a raw connection to the harness's proxy that reads
// little (a 4 KB receive buffer), for tests of clients that stop reading.
// The connection is closed when the test ends.
func sendRaw(t *testing.T, h *harness, method, path, hdr, body string) *net.TCPConn {
	t.Helper()
	addr := strings.TrimPrefix(h.ts.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tc := c.(*net.TCPConn)
	tc.SetReadBuffer(4096)
	if _, err := io.WriteString(c, method+" "+path+" HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\n"+hdr+
		"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	return tc
}
