package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Embedder is the method set of the router's embedders.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Name() string
	Model() string
	Dimensions() int
}

// Span attributes of embedding calls.
const (
	EmbedderKey   = attribute.Key("skillrouter.embedder")
	EmbedModelKey = attribute.Key("skillrouter.embed.model")
	EmbedTextsKey = attribute.Key("skillrouter.embed.texts")
	EmbedKindKey  = attribute.Key("skillrouter.embed.kind") // query or documents
)

// Embedder wraps e so every call is a span "skillrouter.embed" (a child of
// the routing span for a query; a root span when the library is indexed).
// The wrapper keeps what the router asks of embedders besides the method
// set: Offline (no latency budget), EmbedDocuments and EmbedTerms. A
// disabled provider returns e.
func (p *Provider) Embedder(e Embedder) Embedder {
	if !p.Enabled() || e == nil {
		return e
	}
	return &tracedEmbedder{Embedder: e, tracer: p.tracer}
}

type tracedEmbedder struct {
	Embedder
	tracer trace.Tracer
}

type documentEmbedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
}

type offlineEmbedder interface{ Offline() bool }

type termEmbedder interface {
	EmbedTerms(ctx context.Context, texts []string, terms func(int, []string)) ([][]float32, error)
}

// Offline is the wrapped embedder's answer (false when it has none, which
// is what the router assumes of embedders without the method).
func (t *tracedEmbedder) Offline() bool {
	o, ok := t.Embedder.(offlineEmbedder)
	return ok && o.Offline()
}

func (t *tracedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return t.traced(ctx, "query", texts, t.Embedder.Embed)
}

// EmbedTerms is the wrapped embedder's (the builtin's: it hands the router
// the query's BM25 terms as it embeds it), traced as a query; without one,
// Embed, and no terms are handed over (the router then analyses the query
// itself).
func (t *tracedEmbedder) EmbedTerms(ctx context.Context, texts []string, terms func(int, []string)) ([][]float32, error) {
	te, ok := t.Embedder.(termEmbedder)
	if !ok {
		return t.Embed(ctx, texts)
	}
	return t.traced(ctx, "query", texts, func(ctx context.Context, texts []string) ([][]float32, error) {
		return te.EmbedTerms(ctx, texts, terms)
	})
}

func (t *tracedEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	f := t.Embedder.Embed
	if d, ok := t.Embedder.(documentEmbedder); ok {
		f = d.EmbedDocuments
	}
	return t.traced(ctx, "documents", texts, f)
}

func (t *tracedEmbedder) traced(ctx context.Context, kind string, texts []string, f func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	ctx, span := t.tracer.Start(ctx, "skillrouter.embed", trace.WithAttributes(
		EmbedderKey.String(t.Name()), EmbedModelKey.String(t.Model()),
		EmbedTextsKey.Int(len(texts)), EmbedKindKey.String(kind)))
	defer span.End()
	v, err := f(ctx, texts)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return v, err
}
