// Package telemetry provides OpenTelemetry tracing for the proxy: setup from
// the standard OTEL_* environment variables (OTLP over HTTP or gRPC, off
// unless an endpoint is configured), a server span per request with the
// client's W3C traceparent as its parent, client spans for outgoing HTTP
// requests (the upstream model, remote embedders) that propagate the trace,
// spans around embedding calls, and trace ids in log records.
//
// A nil or disabled *Provider is valid everywhere and adds nothing: its
// Handler, Transport and LogHandler return what they are given.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span made here.
const ScopeName = "github.com/skillrouter/skillrouter"

// Options configure Setup.
type Options struct {
	// ServiceName is the default service.name (OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override it); default "skillrouter".
	ServiceName    string
	ServiceVersion string
	// Logger receives exporter errors (nil: discarded).
	Logger *slog.Logger
	// LookupEnv reads the environment (nil: os.LookupEnv). The OTLP
	// exporters read their own settings (headers, timeout, TLS) from the
	// process environment.
	LookupEnv func(string) (string, bool)
}

// Provider holds the tracer and propagator; create it with Setup or New.
type Provider struct {
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	shutdown func(context.Context) error
	exporter string // "otlp grpc", "otlp http/protobuf", or "" for New
}

// Setup configures tracing from the environment. Tracing is on when
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set,
// unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none; otherwise
// Setup returns a disabled provider. The protocol comes from
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
// http/protobuf (the default) or grpc. Sampling follows OTEL_TRACES_SAMPLER
// (default: parentbased_always_on) and batching OTEL_BSP_*.
func Setup(ctx context.Context, o Options) (*Provider, error) {
	env := o.LookupEnv
	if env == nil {
		env = os.LookupEnv
	}
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return &Provider{}, nil
	}
	switch e := strings.ToLower(get("OTEL_TRACES_EXPORTER")); e {
	case "", "otlp":
	case "none":
		return &Provider{}, nil
	default:
		return nil, fmt.Errorf("telemetry: OTEL_TRACES_EXPORTER=%q: only otlp and none are supported", e)
	}
	if get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && get("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return &Provider{}, nil
	}
	protocol := get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = get("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "", "http/protobuf":
		protocol = "http/protobuf"
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("telemetry: OTLP protocol %q: want http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP %s exporter: %w", protocol, err)
	}
	name := o.ServiceName
	if name == "" {
		name = "skillrouter"
	}
	attrs := []resource.Option{resource.WithTelemetrySDK(), resource.WithHost()}
	defaults := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(name))
	if o.ServiceVersion != "" {
		defaults = resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(name), semconv.ServiceVersion(o.ServiceVersion))
	}
	// Later detectors win: the environment overrides the defaults.
	fromEnv, err := resource.New(ctx, append(attrs, resource.WithFromEnv())...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	res, err := resource.Merge(defaults, fromEnv)
	if err != nil {
		res = fromEnv // conflicting schema URLs: keep what the environment says
	}
	if o.Logger != nil {
		log := o.Logger
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("opentelemetry", "err", err)
		}))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	p := New(tp)
	p.shutdown = tp.Shutdown
	p.exporter = "otlp " + protocol
	return p, nil
}

// New returns an enabled provider over tp (tests pass one with an
// in-memory exporter), propagating W3C trace context and baggage.
func New(tp trace.TracerProvider) *Provider {
	return &Provider{
		tracer: tp.Tracer(ScopeName),
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
}

// Enabled reports whether spans are recorded and propagated.
func (p *Provider) Enabled() bool { return p != nil && p.tracer != nil }

// Exporter describes the exporter for the start-up log ("" for none).
func (p *Provider) Exporter() string {
	if p == nil {
		return ""
	}
	return p.exporter
}

// Tracer is the provider's tracer; a disabled provider's records nothing.
func (p *Provider) Tracer() trace.Tracer {
	if !p.Enabled() {
		return noopTracer
	}
	return p.tracer
}

var noopTracer = noop.NewTracerProvider().Tracer(ScopeName)

// Shutdown flushes spans not yet exported and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.shutdown == nil {
		return nil
	}
	return p.shutdown(ctx)
}
