package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillrouter/skillrouter/wire"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// clientTraceparent is what an instrumented client sends: trace
// 4bf92f3577b34da6a3ce929d0e0e4736, its span 00f067aa0ba902b7, sampled.
const (
	clientTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	clientTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID      = "00f067aa0ba902b7"
)

func newRecorded(t *testing.T) (*Provider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return New(tp), rec
}

func byName(spans []sdktrace.ReadOnlySpan) map[string]sdktrace.ReadOnlySpan {
	m := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		m[s.Name()] = s
	}
	return m
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

// TestHandlerAndTransport: the server span continues the client's trace,
// the upstream request is a client span under it and carries its
// traceparent, and a streamed body ends the client span only when read.
func TestHandlerAndTransport(t *testing.T) {
	p, rec := newRecorded(t)
	var gotParent string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotParent = r.Header.Get("traceparent")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "data: {}\n\n")
		http.NewResponseController(w).Flush()
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer upstream.Close()
	client := &http.Client{Transport: p.Transport(nil, "upstream")}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, upstream.URL+"/v1/chat/completions", strings.NewReader("{}"))
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(http.StatusAccepted)
		io.Copy(w, resp.Body)
		// The handler flushes through the wrapper (streaming relays do).
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the span's writer: %v", err)
		}
	})
	srv := httptest.NewServer(p.Handler(app, func(*http.Request) string { return "/v1/chat/completions" }))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader("{}"))
	req.Header.Set("traceparent", clientTraceparent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	spans := byName(rec.Ended())
	server, ok := spans["POST /v1/chat/completions"]
	if !ok {
		t.Fatalf("no server span; got %v", keys(spans))
	}
	clientSpan, ok := spans["upstream POST"]
	if !ok {
		t.Fatalf("no upstream client span; got %v", keys(spans))
	}
	if server.SpanKind() != trace.SpanKindServer || clientSpan.SpanKind() != trace.SpanKindClient {
		t.Errorf("kinds: server %v, client %v", server.SpanKind(), clientSpan.SpanKind())
	}
	if got := server.SpanContext().TraceID().String(); got != clientTraceID {
		t.Errorf("server span trace %s, want the client's %s", got, clientTraceID)
	}
	if got := server.Parent().SpanID().String(); got != clientSpanID || !server.Parent().IsRemote() {
		t.Errorf("server span parent %s (remote %v), want the client's span %s", got, server.Parent().IsRemote(), clientSpanID)
	}
	if clientSpan.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Errorf("upstream span's parent is not the server span")
	}
	want := "00-" + clientTraceID + "-" + clientSpan.SpanContext().SpanID().String() + "-01"
	if gotParent != want {
		t.Errorf("upstream got traceparent %q, want %q", gotParent, want)
	}
	for k, v := range map[string]string{"http.response.status_code": "202", "http.request.method": "POST", "http.route": "/v1/chat/completions", "url.path": "/v1/chat/completions"} {
		if got := attr(server, k); got != v {
			t.Errorf("server span %s = %q, want %q", k, got, v)
		}
	}
	for k, v := range map[string]string{"http.response.status_code": "200", "skillrouter.peer": "upstream", "url.full": upstream.URL + "/v1/chat/completions"} {
		if got := attr(clientSpan, k); got != v {
			t.Errorf("client span %s = %q, want %q", k, got, v)
		}
	}
	// The client span covers the whole stream: it ended after the body was read.
	if clientSpan.EndTime().Before(clientSpan.StartTime()) || server.EndTime().Before(clientSpan.EndTime()) {
		t.Errorf("client span must end within the server span, after the stream")
	}
}

func keys(m map[string]sdktrace.ReadOnlySpan) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestTransportErrors: a refused connection and a 5xx both mark the client span as failed.
func TestTransportErrors(t *testing.T) {
	p, rec := newRecorded(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String()
	ln.Close()
	c := &http.Client{Transport: p.Transport(nil, "embedder")}
	for _, u := range []string{failing.URL + "/api/embed", closed + "/api/embed"} {
		resp, err := c.Post(u, "application/json", strings.NewReader("{}"))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans, want 2", len(ended))
	}
	for _, s := range ended {
		if s.Status().Code.String() != "Error" {
			t.Errorf("span %s status %v, want Error", s.Name(), s.Status())
		}
		if s.Parent().IsValid() {
			t.Errorf("a request without a span in its context starts a trace")
		}
	}
}

// TestDisabledIsTransparent: a disabled (or nil) provider hands back what it is given.
func TestDisabledIsTransparent(t *testing.T) {
	for _, p := range []*Provider{nil, {}} {
		h := http.NotFoundHandler()
		if got := p.Handler(h, nil); got == nil {
			t.Fatal("nil handler")
		}
		if p.Transport(http.DefaultTransport, "upstream") != http.DefaultTransport {
			t.Error("disabled Transport wrapped the transport")
		}
		base := slog.NewTextHandler(io.Discard, nil)
		if p.LogHandler(base) != slog.Handler(base) {
			t.Error("disabled LogHandler wrapped the handler")
		}
		if p.Enabled() {
			t.Error("enabled")
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
}

func TestSetupFromEnvironment(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		enabled bool
		err     string
	}{
		{"nothing set", nil, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"traces endpoint, grpc", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false, ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"exporter console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, false, "only otlp and none"},
		{"http/json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, "want http/protobuf or grpc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
			p, err := Setup(context.Background(), Options{LookupEnv: lookup})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(context.Background())
			if p.Enabled() != c.enabled {
				t.Errorf("enabled %v, want %v", p.Enabled(), c.enabled)
			}
		})
	}
}

// TestLogHandler: records logged in a span's context carry its ids.
func TestLogHandler(t *testing.T) {
	p, _ := newRecorded(t)
	var buf bytes.Buffer
	log := slog.New(p.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	ctx, span := p.Tracer().Start(context.Background(), "x")
	log.InfoContext(ctx, "request", "status", 200)
	span.End()
	log.Info("no span")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var first, second map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first["trace_id"] != span.SpanContext().TraceID().String() || first["span_id"] != span.SpanContext().SpanID().String() || first["component"] != "test" {
		t.Errorf("log line in a span: %s", lines[0])
	}
	if _, ok := second["trace_id"]; ok {
		t.Errorf("log line without a span has a trace id: %s", lines[1])
	}
}

type fakeEmbedder struct{ calls int }

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.calls++
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}
func (f *fakeEmbedder) Name() string    { return "fake" }
func (f *fakeEmbedder) Model() string   { return "m1" }
func (f *fakeEmbedder) Dimensions() int { return 2 }

type offlineFake struct{ fakeEmbedder }

func (o *offlineFake) Offline() bool { return true }

// termFake hands over each text's words as its terms, as the builtin does.
type termFake struct{ offlineFake }

func (f *termFake) EmbedTerms(ctx context.Context, texts []string, terms func(int, []string)) ([][]float32, error) {
	for i, t := range texts {
		terms(i, strings.Fields(t))
	}
	return f.Embed(ctx, texts)
}

// TestEmbedderTerms: the wrapper hands over the terms of an embedder that
// has them, in a query span, and none for one that has not.
func TestEmbedderTerms(t *testing.T) {
	p, rec := newRecorded(t)
	var got [][]string
	collect := func(i int, terms []string) { got = append(got, terms) }
	e := p.Embedder(&termFake{}).(termEmbedder)
	if v, err := e.EmbedTerms(context.Background(), []string{"a b", "c"}, collect); err != nil || len(v) != 2 {
		t.Fatalf("%v %v", v, err)
	}
	if len(got) != 2 || strings.Join(got[0], " ") != "a b" || strings.Join(got[1], " ") != "c" {
		t.Errorf("terms %q", got)
	}
	if spans := rec.Ended(); len(spans) != 1 || attr(spans[0], "skillrouter.embed.kind") != "query" {
		t.Errorf("spans %v", spans)
	}
	got = nil
	plain := &offlineFake{}
	if v, err := p.Embedder(plain).(termEmbedder).EmbedTerms(context.Background(), []string{"a"}, collect); err != nil || len(v) != 1 || plain.calls != 1 {
		t.Fatalf("without EmbedTerms: %v %v, %d calls", v, err, plain.calls)
	}
	if got != nil {
		t.Errorf("terms %q from an embedder without them", got)
	}
}

func TestEmbedder(t *testing.T) {
	p, rec := newRecorded(t)
	ctx, parent := p.Tracer().Start(context.Background(), "skillrouter.route")
	e := p.Embedder(&fakeEmbedder{})
	if _, err := e.Embed(ctx, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.(documentEmbedder).EmbedDocuments(context.Background(), []string{"doc"}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var embeds []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "skillrouter.embed" {
			embeds = append(embeds, s)
		}
	}
	if len(embeds) != 2 {
		t.Fatalf("%d embed spans, want 2", len(embeds))
	}
	q, d := embeds[0], embeds[1]
	if q.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Error("query embedding is not a child of the routing span")
	}
	if attr(q, "skillrouter.embed.kind") != "query" || attr(q, "skillrouter.embed.texts") != "2" || attr(q, "skillrouter.embedder") != "fake" {
		t.Errorf("query span attributes %v", q.Attributes())
	}
	if attr(d, "skillrouter.embed.kind") != "documents" || d.Parent().IsValid() {
		t.Errorf("document span: kind %q, parent %v", attr(d, "skillrouter.embed.kind"), d.Parent())
	}
	if e.(offlineEmbedder).Offline() {
		t.Error("a remote embedder became offline")
	}
	if !p.Embedder(&offlineFake{}).(offlineEmbedder).Offline() {
		t.Error("the builtin lost Offline")
	}
}

// otlpReceiver collects export requests, decoded.
type otlpReceiver struct {
	mu   sync.Mutex
	reqs []*collectortrace.ExportTraceServiceRequest
}

func (r *otlpReceiver) add(req *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
}

// spans returns "service.name/span name" of every span received.
func (r *otlpReceiver) spans() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, req := range r.reqs {
		for _, rs := range req.GetResourceSpans() {
			svc := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					svc = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					out = append(out, svc+"/"+s.GetName())
				}
			}
		}
	}
	return out
}

// ServeHTTP is OTLP/HTTP's trace endpoint: POST /v1/traces with a binary
// protobuf ExportTraceServiceRequest, answered with an empty response.
func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg)
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

type grpcReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	r *otlpReceiver
}

func (g *grpcReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	g.r.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// TestOTLPExport: spans reach a loopback OTLP receiver over HTTP and over
// gRPC, with the service name from OTEL_SERVICE_NAME.
func TestOTLPExport(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			recv := &otlpReceiver{}
			var endpoint string
			if protocol == "grpc" {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				gs := grpc.NewServer()
				collectortrace.RegisterTraceServiceServer(gs, &grpcReceiver{r: recv})
				go gs.Serve(ln)
				defer gs.Stop()
				endpoint = "http://" + ln.Addr().String()
			} else {
				srv := httptest.NewServer(recv)
				defer srv.Close()
				endpoint = srv.URL
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_SERVICE_NAME", "router-test")
			p, err := Setup(context.Background(), Options{ServiceName: "skillrouter"})
			if err != nil {
				t.Fatal(err)
			}
			if !p.Enabled() || p.Exporter() != "otlp "+protocol {
				t.Fatalf("enabled %v exporter %q", p.Enabled(), p.Exporter())
			}
			h := p.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			}), nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
			// Shutdown flushes the batch: the export has happened when it returns.
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := recv.spans()
			if len(got) != 1 || got[0] != "router-test/GET /v1/models" {
				t.Fatalf("received %v, want [router-test/GET /v1/models]", got)
			}
		})
	}
}

// TestRequestPathsClipped: the client chooses its path's length; the
// spans that carry it (the server span's url.path, its name without a
// route label, the client span's url.full of a request passed through)
// carry it clipped as wire.Clip clips what the proxy quotes.
func TestRequestPathsClipped(t *testing.T) {
	long := "/v1/files/" + strings.Repeat("x", 5000)
	p, rec := newRecorded(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer upstream.Close()
	client := &http.Client{Transport: p.Transport(nil, "upstream")}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, upstream.URL+r.URL.Path, nil)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	srv := httptest.NewServer(p.Handler(app, nil))
	defer srv.Close()
	resp, err := http.Get(srv.URL + long)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans, want 2", len(ended))
	}
	for _, s := range ended {
		vals := map[string]string{"name": s.Name(), "url.path": attr(s, "url.path"), "url.full": attr(s, "url.full")}
		for k, v := range vals {
			if len(v) > len(wire.Clip(long))+len(upstream.URL)+len("GET ") {
				t.Errorf("span %.40s: %s of %d bytes", s.Name(), k, len(v))
			}
		}
	}
	for _, s := range ended {
		if s.SpanKind() == trace.SpanKindServer && attr(s, "url.path") != wire.Clip(long) {
			t.Errorf("url.path %.60q, want the path clipped", attr(s, "url.path"))
		}
	}
}

// TestHandlerAbortedHasNoStatus: a request the handler ends without an
// answer (http.ErrAbortHandler: its client went away) is not recorded as a
// 200; the span ends, names why, and the abort goes on to net/http.
func TestHandlerAbortedHasNoStatus(t *testing.T) {
	p, rec := newRecorded(t)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) })
	srv := httptest.NewServer(p.Handler(app, nil))
	defer srv.Close()
	if resp, err := http.Get(srv.URL + "/v1/chat/completions"); err == nil {
		resp.Body.Close()
		t.Errorf("an aborted request was answered %d", resp.StatusCode)
	}
	var ended []sdktrace.ReadOnlySpan
	for i := 0; i < 200 && len(ended) == 0; i++ { // the span ends in the server's goroutine
		ended = rec.Ended()
		time.Sleep(5 * time.Millisecond)
	}
	if len(ended) != 1 {
		t.Fatalf("%d spans, want 1", len(ended))
	}
	s := ended[0]
	if got := attr(s, "http.response.status_code"); got != "" {
		t.Errorf("an aborted request recorded status %s", got)
	}
	if got := attr(s, "error.type"); got != "client_closed" {
		t.Errorf("error.type %q, want client_closed", got)
	}
}

// Probes and scrapes are served without a span; other requests get theirs.
func TestProbesNotTraced(t *testing.T) {
	p, rec := newRecorded(t)
	srv := httptest.NewServer(p.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), nil))
	defer srv.Close()
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/v1/models"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var ended []sdktrace.ReadOnlySpan
	for i := 0; i < 200 && len(ended) == 0; i++ { // the span ends in the server's goroutine
		ended = rec.Ended()
		time.Sleep(5 * time.Millisecond)
	}
	if len(ended) != 1 || ended[0].Name() != "GET /v1/models" {
		names := []string{}
		for _, s := range ended {
			names = append(names, s.Name())
		}
		t.Errorf("spans %v, want only GET /v1/models", names)
	}
}
