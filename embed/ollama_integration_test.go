package embed

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestOllamaIntegration runs against a real Ollama when OLLAMA_HOST is set
// (model: $OLLAMA_EMBED_MODEL, default nomic-embed-text, which must be
// pulled).
func TestOllamaIntegration(t *testing.T) {
	if os.Getenv("OLLAMA_HOST") == "" {
		t.Skip("OLLAMA_HOST not set")
	}
	o, err := NewOllama(Config{Model: os.Getenv("OLLAMA_EMBED_MODEL")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	docs, err := o.EmbedDocuments(ctx, []string{
		"Optimize slow SQL queries with indexes and EXPLAIN plans.",
		"Deploy services to Kubernetes clusters with Helm charts.",
	})
	if err != nil {
		t.Fatal(err)
	}
	q, err := o.Embed(ctx, []string{"my database query takes ten seconds"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append(docs, q...) {
		if !unitLength(v) || len(v) != o.Dimensions() {
			t.Fatalf("vector of %d dimensions (want %d), unit length %v", len(v), o.Dimensions(), unitLength(v))
		}
	}
	if !(cosine(q[0], docs[0]) > cosine(q[0], docs[1])) {
		t.Errorf("the SQL query should be closer to the SQL document: %.3f vs %.3f", cosine(q[0], docs[0]), cosine(q[0], docs[1]))
	}
}
