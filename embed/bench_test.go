package embed

import (
	"context"
	"testing"
)

// BenchmarkBuiltinEmbedQuery embeds one chat-sized query with a fitted
// builtin embedder (the per-request cost of the default embedder).
func BenchmarkBuiltinEmbedQuery(b *testing.B) {
	corpus := []string{
		"sql-query-tuning\nDiagnose and speed up slow SQL queries in PostgreSQL or MySQL.",
		"regex-builder\nBuild, explain, debug and test regular expressions.",
		"dockerfile-hardening\nReview and harden Dockerfiles and container images.",
	}
	e := NewBuiltin(Config{}).Fit(corpus)
	ctx := context.Background()
	texts := []string{"My Postgres query on the orders table takes 9 seconds; how do I speed it up with an index?"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}
