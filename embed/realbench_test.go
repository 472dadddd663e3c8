package embed

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillrouter/skillrouter/internal/coldcache"
)

// BenchmarkBuiltinEmbedRealQueries embeds the upstream prompts with the
// builtin fitted to the 407 real skills (the per-request cost in the proxy),
// one after another (warm) and with the caches flushed before each (cold).
func BenchmarkBuiltinEmbedRealQueries(b *testing.B) {
	dir := filepath.Join("..", "..", "shared", "bench")
	files, _ := filepath.Glob(filepath.Join(dir, "skills", "*", "*", "SKILL.md"))
	if len(files) == 0 {
		b.Skip("benchmark data not found")
	}
	var corpus []string
	for _, f := range files {
		t, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		corpus = append(corpus, string(t))
	}
	e := NewBuiltin(Config{}).Fit(corpus)
	f, err := os.Open(filepath.Join(dir, "upstream-queries", "queries.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var q struct{ Query string }
		if json.Unmarshal(sc.Bytes(), &q) == nil && q.Query != "" {
			qs = append(qs, q.Query)
		}
	}
	ctx := context.Background()
	// As in the router: the library was embedded through the same scratch
	// pool before the first query.
	if _, err := e.Embed(ctx, corpus); err != nil {
		b.Fatal(err)
	}
	for _, cold := range []bool{false, true} {
		name := "warm"
		var flush *coldcache.Flusher
		if cold {
			name, flush = "cold", coldcache.New()
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				flush.Before(b)
				if _, err := e.Embed(ctx, qs[i%len(qs):i%len(qs)+1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
