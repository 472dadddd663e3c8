package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/telemetry"
)

// headerLog records one header of every request a test server gets.
type headerLog struct {
	mu  sync.Mutex
	got []string
}

func (h *headerLog) add(v string) {
	h.mu.Lock()
	h.got = append(h.got, v)
	h.mu.Unlock()
}

func (h *headerLog) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// fakeEmbeddings is an OpenAI-compatible POST /v1/embeddings answering
// 8-dimensional vectors made from each input's bytes.
func fakeEmbeddings(t *testing.T, parents *headerLog) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parents.add(r.Header.Get("traceparent"))
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: "fake"}
		for i, text := range req.Input {
			v := make([]float32, 8)
			for j := 0; j < len(text); j++ {
				v[int(text[j])%8] += 1
			}
			v[0] += 0.5
			out.Data = append(out.Data, item{"embedding", i, v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestServeTracing: one chat request with a client traceparent gives one
// trace: the server span, the routing span with the decision's
// attributes, the query embedding and its HTTP call to the embedder, both
// upstream calls of a tool round and the load_skill call between them; the
// upstream and the embedder receive the trace, and the access log names it.
func TestServeTracing(t *testing.T) {
	var upParents, embParents headerLog
	var calls int
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upParents.add(r.Header.Get("traceparent"))
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			io.WriteString(w, `{"id":"a","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{\"name\":\"regex-builder\"}"}}]}}]}`)
			return
		}
		io.WriteString(w, `{"id":"b","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done"}}]}`)
	}))
	defer up.Close()
	emb := fakeEmbeddings(t, &embParents)

	cfg, err := loadFor(t, []string{"--upstream", up.URL + "/v1", "--skills", filepath.Join("..", "..", "examples", "skills"), "--watch=false"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Embedder = embed.Config{Provider: embed.ProviderOpenAI, BaseURL: emb.URL + "/v1", Model: "fake", CacheDir: "-"}
	cfg.Routing.EmbedTimeout = time.Minute // no fallback on a loaded machine
	cfg.Routing.IndexDir = t.TempDir()

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tel := telemetry.New(tp)
	var logs syncbuf.Buffer // the routers' background work logs too
	log := slog.New(tel.LogHandler(slog.NewJSONHandler(&logs, nil)))
	sv, err := buildServer(context.Background(), cfg, cfg.Skills, log, false, tel)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.lib.close() // before the index folder goes: its write finishes
	srv, build := sv.srv, sv.build
	if err := build(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(tel.Handler(srv, func(r *http.Request) string { return proxy.RouteLabel(r.URL.Path) }))
	defer ts.Close()

	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"write a regex that matches ISO dates"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+clientSpan+"-01")
	req.Header.Set("X-Skillrouter-Top-K", "0") // nothing auto-loaded: the model's load_skill loads it
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "done") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}

	// The spans of this request's trace, by name.
	var spans []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() == traceID {
			spans = append(spans, s)
		}
	}
	named := func(name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.Name() == name {
				out = append(out, s)
			}
		}
		return out
	}
	one := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		got := named(name)
		if len(got) != 1 {
			var all []string
			for _, s := range spans {
				all = append(all, s.Name())
			}
			t.Fatalf("%d spans %q in the trace, want 1 (trace: %v)", len(got), name, all)
		}
		return got[0]
	}
	childOf := func(child, parent sdktrace.ReadOnlySpan) {
		t.Helper()
		if child.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s", child.Name(), parent.Name())
		}
	}
	server := one("POST /v1/chat/completions")
	if server.Parent().SpanID().String() != clientSpan {
		t.Errorf("server span's parent %s, want the client's %s", server.Parent().SpanID(), clientSpan)
	}
	childOf(one("skillrouter.parse"), server)
	route := one("skillrouter.route")
	childOf(route, server)
	if attrs := route.Attributes(); !slices.ContainsFunc(attrs, func(a attribute.KeyValue) bool { return a.Key == "skillrouter.api" && a.Value.Emit() == "chat" }) {
		t.Errorf("route span has no api: %v", attrs)
	}
	attrs := map[string]string{}
	for _, a := range route.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	for k, want := range map[string]string{"skillrouter.strategy": "hybrid", "skillrouter.embedder": "openai", "skillrouter.fallback": "false"} {
		if attrs[k] != want {
			t.Errorf("route span %s = %q, want %q (all: %v)", k, attrs[k], want, attrs)
		}
	}
	if _, ok := attrs["skillrouter.selected"]; !ok {
		t.Errorf("route span has no selected ids: %v", attrs)
	}
	embedSpan := one("skillrouter.embed")
	childOf(embedSpan, route)
	embedHTTP := one("embedder POST")
	childOf(embedHTTP, embedSpan)
	ups := named("upstream POST")
	if len(ups) != 2 {
		t.Fatalf("%d upstream spans, want 2 (one per tool round)", len(ups))
	}
	for _, u := range ups {
		childOf(u, server)
	}
	tool := one("skillrouter.tool load_skill")
	childOf(tool, server)
	if !slices.ContainsFunc(tool.Attributes(), func(a attribute.KeyValue) bool {
		return a.Key == "skillrouter.skill" && a.Value.Emit() == "regex-builder"
	}) {
		t.Errorf("the tool span does not name the skill: %v", tool.Attributes())
	}

	// The upstream and the embedder were told the trace, each with its own
	// client span as the parent.
	wantUp := map[string]bool{}
	for _, u := range ups {
		wantUp["00-"+traceID+"-"+u.SpanContext().SpanID().String()+"-01"] = true
	}
	for _, p := range upParents.all() {
		if !wantUp[p] {
			t.Errorf("upstream got traceparent %q, want one of %v", p, wantUp)
		}
	}
	wantEmb := "00-" + traceID + "-" + embedHTTP.SpanContext().SpanID().String() + "-01"
	found := false
	for _, p := range embParents.all() {
		found = found || p == wantEmb
	}
	if !found {
		t.Errorf("embedder never got traceparent %q (got %v)", wantEmb, embParents.all())
	}

	// The access log line carries the trace id.
	var accessLogged bool
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "request" || rec["path"] != "/v1/chat/completions" {
			continue
		}
		accessLogged = true
		if rec["trace_id"] != traceID || rec["span_id"] != server.SpanContext().SpanID().String() {
			t.Errorf("access log line without the trace: %s", line)
		}
		// The traced session still tells the proxy what the model loaded:
		// the turn memory and the presence memory read it (tracing on had
		// switched both off).
		if rec["loaded"] != "regex-builder" {
			t.Errorf("access log line without what the model loaded: %s", line)
		}
	}
	if !accessLogged {
		t.Errorf("no access log line:\n%s", logs.String())
	}
}

// TestTraceEnded: a request that ended otherwise than complete records its
// outcome on its span; a stream that failed or was cut by the shutdown
// after its 200 is an error, a client that left is not.
func TestTraceEnded(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tel := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	ended := traceEnded(tel)
	for _, outcome := range []string{"stream_error", "shutdown", "client_closed"} {
		ctx, span := tel.Tracer().Start(context.Background(), outcome)
		ended(ctx, outcome)
		span.End()
	}
	for _, s := range rec.Ended() {
		errType := ""
		for _, a := range s.Attributes() {
			if a.Key == "error.type" {
				errType = a.Value.AsString()
			}
		}
		wantError := s.Name() != "client_closed"
		if errType != s.Name() || (s.Status().Code == codes.Error) != wantError {
			t.Errorf("%s: error.type %q, status %v", s.Name(), errType, s.Status())
		}
	}
	if traceEnded(nil) != nil {
		t.Error("tracing off: want no hook")
	}
}
