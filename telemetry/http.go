package telemetry

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillrouter/skillrouter/internal/redact"
	"github.com/skillrouter/skillrouter/internal/statuswriter"
	"github.com/skillrouter/skillrouter/wire"
)

// PeerKey names what an outgoing request went to: "upstream" (the model)
// or "embedder".
const PeerKey = attribute.Key("skillrouter.peer")

// Handler wraps next with a server span per request, a child of the trace
// the client's traceparent header names (a new trace without one). route
// gives the span name's path part: a label of bounded cardinality such as
// "/v1/chat/completions"; nil uses the request path.
//
// Probes and scrapes (/healthz, /readyz, /metrics) get no span: with every
// request sampled, a pod's probes alone made about 18 traces a minute.
func (p *Provider) Handler(next http.Handler, route func(*http.Request) string) http.Handler {
	if !p.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			next.ServeHTTP(w, r)
			return
		}
		ctx := p.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		// The client chooses the path and its length: clipped as the
		// proxy clips what it quotes from a request.
		urlPath := wire.Clip(r.URL.Path)
		path := urlPath
		if route != nil {
			path = route(r)
		}
		attrs := []attribute.KeyValue{
			method(r.Method),
			semconv.URLPath(urlPath),
			semconv.HTTPRoute(path),
			semconv.URLScheme(scheme(r)),
			semconv.NetworkProtocolVersion(strconv.Itoa(r.ProtoMajor) + "." + strconv.Itoa(r.ProtoMinor)),
		}
		if host, port, err := net.SplitHostPort(r.Host); err == nil {
			attrs = append(attrs, semconv.ServerAddress(host))
			if n, err := strconv.Atoi(port); err == nil {
				attrs = append(attrs, semconv.ServerPort(n))
			}
		} else if r.Host != "" {
			attrs = append(attrs, semconv.ServerAddress(r.Host))
		}
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			attrs = append(attrs, semconv.ClientAddress(host))
		}
		if ua := r.UserAgent(); ua != "" {
			attrs = append(attrs, semconv.UserAgentOriginal(ua))
		}
		ctx, span := p.tracer.Start(ctx, r.Method+" "+path,
			trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		sw := &statuswriter.Writer{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				// A handler that ends a request without an answer (its
				// client went away: http.ErrAbortHandler) has no status
				// to record; any panic goes on as it came.
				if v == http.ErrAbortHandler && sw.Status == 0 {
					span.SetAttributes(semconv.ErrorTypeKey.String("client_closed"))
				} else {
					span.SetStatus(codes.Error, fmt.Sprint(v))
				}
				span.End()
				panic(v)
			}
			status := sw.Status
			if status == 0 {
				status = http.StatusOK
			}
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// method is the http.request.method attribute: known methods as they are,
// anything else _OTHER (semantic conventions: a client must not mint
// attribute values at will).
func method(m string) attribute.KeyValue {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return semconv.HTTPRequestMethodKey.String(m)
	}
	return semconv.HTTPRequestMethodKey.String("_OTHER")
}

// Transport wraps base (nil: http.DefaultTransport) so every request is a
// client span named "peer METHOD", a child of the span in the request's
// context, and carries that span's traceparent to the server. The span
// ends when the response body is read to its end or closed, so a stream
// is timed whole.
func (p *Provider) Transport(base http.RoundTripper, peer string) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if !p.Enabled() {
		return base
	}
	return &transport{base: base, p: p, peer: peer}
}

type transport struct {
	base http.RoundTripper
	p    *Provider
	peer string
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	attrs := []attribute.KeyValue{
		PeerKey.String(t.peer),
		method(req.Method),
		semconv.URLFull(redactedURL(req)),
		semconv.ServerAddress(req.URL.Hostname()),
	}
	if port := req.URL.Port(); port != "" {
		if n, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, semconv.ServerPort(n))
		}
	}
	ctx, span := t.p.tracer.Start(req.Context(), t.peer+" "+req.Method,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	// A RoundTripper must not change the caller's request: inject into a copy.
	out := req.Clone(ctx)
	t.p.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return nil, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
	}
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		span.End() // nothing to time, or a body that is a connection (websocket)
		return resp, nil
	}
	resp.Body = &spanBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// redactedURL is the request URL without credentials or query (which may
// hold keys), clipped: a request passed through has the client's path.
func redactedURL(req *http.Request) string { return wire.Clip(redact.Stripped(req.URL)) }

// spanBody ends its span at EOF, on a read error or on Close, whichever
// comes first.
type spanBody struct {
	io.ReadCloser
	span trace.Span
	once sync.Once
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end(err)
	}
	return n, err
}

func (b *spanBody) Close() error {
	err := b.ReadCloser.Close()
	b.end(nil)
	return err
}

func (b *spanBody) end(err error) {
	b.once.Do(func() {
		if err != nil && err != io.EOF {
			b.span.RecordError(err)
			b.span.SetStatus(codes.Error, err.Error())
		}
		b.span.End()
	})
}
