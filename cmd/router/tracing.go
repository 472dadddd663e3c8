package main

// Tracing wired around the proxy without changing it: the telemetry
// package's server span (around the whole handler), client spans for
// upstream and embedder requests (their transports), and here a span per
// routing decision and per tool call the proxy answers itself.

import (
	"cmp"
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/telemetry"
	"github.com/skillrouter/skillrouter/wire"
)

// Span attributes of a routing decision.
const (
	attrStrategy     = attribute.Key("skillrouter.strategy")
	attrEmbedder     = attribute.Key("skillrouter.embedder")
	attrFallback     = attribute.Key("skillrouter.fallback")
	attrFallbackCode = attribute.Key("skillrouter.fallback_code")
	attrSelected     = attribute.Key("skillrouter.selected")
	attrPinned       = attribute.Key("skillrouter.pinned")
	attrCached       = attribute.Key("skillrouter.ranking_cached")
	attrAddedTokens  = attribute.Key("skillrouter.tokens_added")
	attrArm          = attribute.Key("skillrouter.arm")
	attrAPI          = attribute.Key("skillrouter.api")
	attrTool         = attribute.Key("skillrouter.tool")
	attrToolCallID   = attribute.Key("skillrouter.tool_call_id")
	attrSkill        = attribute.Key("skillrouter.skill")
)

// tracedRewriters wraps each rewriter with a routing span; a disabled
// provider leaves them as they are.
func traceRewriter(tel *telemetry.Provider, rw proxy.Rewriter, arm string) proxy.Rewriter {
	if !tel.Enabled() {
		return rw
	}
	return &tracedRewriter{inner: rw, tracer: tel.Tracer(), arm: arm}
}

// tracedRewriter puts a span "skillrouter.route" around a rewrite: ranking
// (the embedding call is its child) and planning. Its attributes are the
// decision.
type tracedRewriter struct {
	inner  proxy.Rewriter
	tracer trace.Tracer
	arm    string
}

func (t *tracedRewriter) Ready() bool { return t.inner.Ready() }

// Degraded is the wrapped rewriter's (router.Router.Degraded), "" without one.
func (t *tracedRewriter) Degraded() string { return proxy.Degraded(t.inner) }

func (t *tracedRewriter) Rewrite(ctx context.Context, req *wire.Request, ov router.Overrides) (*proxy.Rewrite, error) {
	ctx, span := t.tracer.Start(ctx, "skillrouter.route")
	defer span.End()
	if t.arm != "" {
		span.SetAttributes(attrArm.String(t.arm))
	}
	span.SetAttributes(attrAPI.String(string(req.API)))
	rw, err := t.inner.Rewrite(ctx, req, ov)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return rw, err
	}
	if rw == nil {
		return rw, nil
	}
	if d := rw.Decision; d != nil {
		span.SetAttributes(decisionAttrs(d)...)
	}
	span.SetAttributes(attrAddedTokens.Int(rw.AddedTokens))
	if rw.Session != nil {
		out := *rw
		out.Session = traceSession(rw.Session, t.tracer)
		rw = &out
	}
	return rw, nil
}

func decisionAttrs(d *router.Decision) []attribute.KeyValue {
	a := []attribute.KeyValue{
		attrStrategy.String(string(d.Strategy)),
		attrEmbedder.String(d.Embedder),
		attrFallback.Bool(d.Fallback),
		attrSelected.StringSlice(d.Selected),
		attrCached.Bool(d.Cached),
	}
	if d.FallbackCode != "" {
		a = append(a, attrFallbackCode.String(string(d.FallbackCode)))
	}
	if len(d.Pinned) > 0 {
		a = append(a, attrPinned.StringSlice(d.Pinned))
	}
	return a
}

func traceSession(s proxy.ToolSession, tracer trace.Tracer) proxy.ToolSession {
	return &tracedSession{ToolSession: s, tracer: tracer}
}

// tracedSession makes each tool call the proxy answers itself (load_skill,
// search_skills, tier-3 tools) a span "skillrouter.tool NAME"; the upstream
// calls between tool rounds are the transport's client spans.
type tracedSession struct {
	proxy.ToolSession
	tracer trace.Tracer
}

func (t *tracedSession) Call(ctx context.Context, callID, name string, args json.RawMessage) wire.ToolResult {
	attrs := []attribute.KeyValue{attrTool.String(name), attrToolCallID.String(callID)}
	// The skill as the model named it (load_skill's aliases too), clipped
	// as text quoted from a request is.
	if v := gjson.GetManyBytes(args, "skill_id", "id", "name"); v[0].Str+v[1].Str+v[2].Str != "" {
		attrs = append(attrs, attrSkill.String(wire.Clip(cmp.Or(v[0].Str, v[1].Str, v[2].Str))))
	}
	ctx, span := t.tracer.Start(ctx, "skillrouter.tool "+name, trace.WithAttributes(attrs...))
	defer span.End()
	return t.ToolSession.Call(ctx, callID, name, args)
}

// Unwrap lets the proxy reach the session's optional methods (the skills it
// loaded, the tools it gated).
func (t *tracedSession) Unwrap() proxy.ToolSession { return t.ToolSession }

// traceEnded records on the request's span how a request ended when it did
// not end complete (proxy.Config.Ended): error.type, and an error status
// for a stream that failed or was cut by the shutdown after its 200 went
// out. A client that left, or a pass-through refused, is no failure of
// the proxy's. nil when tracing is off.
func traceEnded(tel *telemetry.Provider) func(ctx context.Context, outcome string) {
	if !tel.Enabled() {
		return nil
	}
	return func(ctx context.Context, outcome string) {
		span := trace.SpanFromContext(ctx)
		span.SetAttributes(semconv.ErrorTypeKey.String(outcome))
		switch outcome {
		case "stream_error", "shutdown":
			span.SetStatus(codes.Error, outcome)
		}
	}
}

// traceStage makes each stage of a request the proxy reports (parsing the
// body) a span; nil when tracing is off.
func traceStage(tel *telemetry.Provider) func(ctx context.Context, name string) (context.Context, func()) {
	if !tel.Enabled() {
		return nil
	}
	tracer := tel.Tracer()
	return func(ctx context.Context, name string) (context.Context, func()) {
		ctx, span := tracer.Start(ctx, name)
		return ctx, func() { span.End() }
	}
}
