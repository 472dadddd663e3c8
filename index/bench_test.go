package index_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/index"
	"github.com/skillrouter/skillrouter/skills"
)

const benchQuery = "My Postgres query on the orders table takes 9 seconds; how do I speed it up with an index?"

// benchLibrary loads the 407-skill library from ../shared/bench (beside the
// repository), skipping when it is absent.
func benchLibrary(b *testing.B) []*skills.Skill {
	b.Helper()
	root := filepath.Join("..", "..", "shared", "bench", "skills")
	snap := skills.Load(context.Background(), []string{root}, skills.Options{})
	list := snap.Skills()
	if len(list) == 0 {
		b.Skipf("no bench library at %s", root)
	}
	return list
}

// BenchmarkBM25Query scores one query against the 407-skill library.
func BenchmarkBM25Query(b *testing.B) {
	list := benchLibrary(b)
	docs := make([]index.Doc, len(list))
	for i, s := range list {
		docs[i] = index.Doc{ID: s.ID, Fields: [index.NumFields]string{s.Name, s.Description, s.Body()}}
	}
	ix := index.NewBM25(docs, index.DefaultBM25Params)
	scores := make([]float64, ix.Len())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		q := index.QueryTerms(nil, benchQuery, 1)
		ix.Score(q, scores)
	}
}

// BenchmarkVectorQuery runs one nearest-neighbour query (builtin vectors) over
// the 407-skill library in the chromem-go index; the query is embedded once.
func BenchmarkVectorQuery(b *testing.B) {
	list := benchLibrary(b)
	ctx := context.Background()
	corpus := make([]string, len(list))
	docs := make([]index.VectorDoc, len(list))
	for i, s := range list {
		corpus[i] = s.Name + "\n" + s.Description
		docs[i] = index.VectorDoc{ID: s.ID, Name: s.Name, Parts: []index.Part{{Text: s.Name + "\n" + s.Description, Weight: 1}}}
	}
	emb := embed.NewBuiltin(embed.Config{}).Fit(corpus)
	v, _, err := index.BuildVectors(ctx, docs, emb.Model(), emb.Embed, nil)
	if err != nil {
		b.Fatal(err)
	}
	qv, err := emb.Embed(ctx, []string{benchQuery})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := v.Query(ctx, qv[0], 10); err != nil {
			b.Fatal(err)
		}
	}
}
