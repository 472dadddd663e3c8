package proxy

// Observability review, round 15: what the access log, the metrics and the
// traces say about the outcomes added this round (upstream redirects,
// hidden rounds' stored responses deleted in the background).

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// An upstream redirect of a routed request is a 502 whose log line keeps
// "where it pointed" (upstream.go, redirected: f.detail = "Location: " +
// loc.Redacted()). url.URL.Redacted masks only a password in the userinfo:
// the query goes to the log whole. Redirects that carry a credential put
// it in the query: a gateway's sign-in redirect (?token=, ?code=), a
// presigned object-store URL (X-Amz-Signature, sig=), an SSO ticket. The
// access log (shipped to a log store that many people read) then holds a
// secret the proxy refuses to show even to the client — the comment says
// relaying it would hand over "any token in it". docs/proxy.md:
// "Authorization is never logged".
func TestObs15RedirectLocationQueryNotLogged(t *testing.T) {
	h := rel15Harness(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://login.internal.example/sso/continue?token=s3cretT0ken&X-Amz-Signature=abcdef0123", http.StatusFound)
	}, nil)
	h.ts.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, body := range []string{simpleChat, streamChat("")} {
		resp, b := h.chat(body, nil)
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d, want 502: %s", resp.StatusCode, b)
		}
		if strings.Contains(string(b), "s3cretT0ken") {
			t.Errorf("the client got the Location's token: %s", b)
		}
	}
	logs := h.logText()
	if !strings.Contains(logs, "upstream_redirect") && !strings.Contains(logs, "a redirect") {
		t.Fatalf("redirect not logged:\n%s", logs)
	}
	for _, secret := range []string{"s3cretT0ken", "abcdef0123"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the access log holds the redirect's query credential %q:\n%s", secret, grepLines(logs, secret))
		}
	}
}

// A hidden round's stored response deleted in the background is an
// upstream exchange like the state read (state.go), which goes out with
// the request's context and so is a child span of the request's trace. The
// deletions run under s.bg.ctx, a context of the server's own: each DELETE
// is a root span of a trace of its own, unlinked from the request that
// left the response (a "failed" counted in
// skillrouter_hidden_responses_deleted_total cannot be followed to its
// request, and a parent-based sampler decides afresh for each). The
// request's span context should go with the work (as parent, or at least
// as a link).
func TestObs15HiddenDeleteInRequestTrace(t *testing.T) {
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	rec := &traceRecorder{}
	h := newHarness(t, func(c *Config) { c.Transport = rec.wrap(NewTransport(0)) })
	// The request as telemetry.Handler hands it on: its context holds the server span.
	inner := h.ts.Config.Handler
	h.ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r.WithContext(trace.ContextWithSpanContext(r.Context(), parent)))
	})
	h.up.Script(
		fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "final answer"}))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	finish(t, h)
	got := rec.all()
	deletes := 0
	for _, e := range got {
		if e.method == http.MethodPost && e.trace != parent.TraceID() {
			t.Fatalf("control: a round's POST is not in the request's trace (%v)", e.trace)
		}
		if e.method == http.MethodDelete {
			deletes++
			if e.trace != parent.TraceID() {
				t.Errorf("DELETE %s runs outside the request's trace (trace id %v, want %v): its span is an orphan root", e.path, e.trace, parent.TraceID())
			}
		}
	}
	if deletes != 1 {
		t.Fatalf("%d DELETEs, want 1: %+v", deletes, got)
	}
}

type traceEntry struct {
	method, path string
	trace        trace.TraceID
}

// traceRecorder notes the trace each upstream request's context is in.
type traceRecorder struct {
	mu  sync.Mutex
	got []traceEntry
}

func (r *traceRecorder) wrap(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.got = append(r.got, traceEntry{req.Method, req.URL.Path, trace.SpanContextFromContext(req.Context()).TraceID()})
		r.mu.Unlock()
		return base.RoundTrip(req)
	})
}

func (r *traceRecorder) all() []traceEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]traceEntry(nil), r.got...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// docs/proxy.md: skillrouter_hidden_responses_deleted_total counts
// "`failed` (logged at warn) and `skipped` (the server was shutting
// down)". When the shutdown grace ends while deletions run, Finish cancels
// them: the one in flight and every one after it in the request's list
// then fail at once on the cancelled context, and each is counted
// "failed" and logged at WARN as a deletion failure ("context canceled"),
// one line per response, although nothing failed upstream: the server was
// shutting down. An operator alerting on failed deletions (an upstream
// refusing them: keys without the permission, a gateway without DELETE)
// is paged by every rolling restart.
func TestObs15HiddenDeletesCutByShutdownAreSkipped(t *testing.T) {
	h := newHarness(t, nil)
	release := make(chan struct{})
	defer close(release)
	hang := func(w http.ResponseWriter, r *http.Request, _ fakeai.Request) {
		select { // bounded: the test's Finish gives up after 200 ms
		case <-r.Context().Done():
		case <-release:
		case <-time.After(10 * time.Second):
		}
	}
	for _, id := range []string{"resp_fake_1", "resp_fake_2", "resp_fake_3"} {
		h.up.Handle("/v1/responses/"+id, hang)
	}
	load := func(skill string) fakeai.Responder {
		return fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_" + skill, Name: "load_skill", Arguments: `{"skill_id":"demo/` + skill + `"}`}}})
	}
	h.up.Script(load("pdf"), load("xlsx"), load("docx"), fakeai.Reply(fakeai.Turn{Content: "final answer"}))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","input":"make me a pdf"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(h.up.Deletes()) == 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if len(h.up.Deletes()) == 0 {
		t.Fatal("no deletion started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := h.srv.Finish(ctx); err == nil {
		t.Fatal("control: Finish did not have to cut the deletions short")
	}
	m := grepLines(metricsText(h), "hidden_responses_deleted_total{")
	if strings.Contains(m, `outcome="failed"`) {
		t.Errorf("deletions cut by the shutdown counted as failed, want skipped:\n%s", m)
	}
	if n := strings.Count(h.logText(), "stored response was not deleted"); n > 0 {
		t.Errorf("%d WARN lines reporting a deletion failure for deletions the shutdown cut:\n%s", n, grepLines(h.logText(), "not deleted"))
	}
}

// skillrouter_upstream_errors_total{kind}'s Help lists its kinds, but not
// the ones this round added (upstream_bad_response, upstream_redirect) nor
// upstream_stream_incomplete; docs/proxy.md lists none. The Help of
// skillrouter_hidden_responses_deleted_total says "(Responses, store not
// false)" though Chat Completions' stored completions are counted there
// too.
func TestObs15MetricHelpNamesNewKinds(t *testing.T) {
	h := newHarness(t, nil)
	help := func(c prometheus.Collector) string {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		return (<-ch).String()
	}
	for _, kind := range []string{"upstream_bad_response", "upstream_redirect", "upstream_stream_incomplete"} {
		if hs := help(h.srv.metrics.upstreamErrors); !strings.Contains(hs, kind) {
			t.Errorf("upstream_errors_total Help does not name kind %s: %s", kind, hs)
		}
	}
	if hd := help(h.srv.metrics.hiddenDeletes); !strings.Contains(strings.ToLower(hd), "chat") {
		t.Errorf("hidden_responses_deleted_total Help names Responses only: %s", hd)
	}
}
