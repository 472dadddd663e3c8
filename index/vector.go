package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	chromem "github.com/philippgille/chromem-go"
)

// Part is one piece of a document's text with its weight in the document's
// vector. A skill is embedded as a few parts (name and description; the start
// of the body) whose vectors are summed with these weights, so the body adds
// context without drowning what the skill is for.
type Part struct {
	Text   string
	Weight float64
}

// VectorDoc is one skill as the vector index sees it.
type VectorDoc struct {
	ID    string
	Name  string
	Parts []Part
}

// Hash identifies a document's embedded content: equal hashes under the same
// model mean the stored vector can be reused.
func (d VectorDoc) Hash() string {
	h := sha256.New()
	for _, p := range d.Parts {
		fmt.Fprintf(h, "%d:%s\x00%g\x00", len(p.Text), p.Text, p.Weight)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// EmbedFunc embeds document texts; the vectors come back in order.
type EmbedFunc func(ctx context.Context, texts []string) ([][]float32, error)

// Vectors is an immutable vector index over one library for one embedding
// model, held in a chromem-go collection. A new library builds a new Vectors
// (reusing unchanged vectors from the previous one) and the caller swaps it
// in, so queries never wait on writes.
type Vectors struct {
	model string
	db    *chromem.DB
	col   *chromem.Collection
	n     int
}

// BuildStats says what a build reused and what it had to embed.
type BuildStats struct {
	Reused, Embedded, Removed int
}

const (
	collectionPrefix = "skills:"
	metaHash         = "hash"
	metaName         = "name"
	metaID           = "id"
)

// BuildVectors indexes docs for model. Documents whose content hash matches
// one in prev (built for the same model) keep their vector; the rest are
// embedded in one call to embed. prev may be nil.
func BuildVectors(ctx context.Context, docs []VectorDoc, model string, embed EmbedFunc, prev *Vectors) (*Vectors, BuildStats, error) {
	var st BuildStats
	db := chromem.NewDB()
	// chromem has no accessor for collection metadata; the model goes into
	// the collection's name so a loaded index knows what made it.
	col, err := db.CreateCollection(collectionPrefix+model, nil, nil)
	if err != nil {
		return nil, st, err
	}
	if prev != nil && prev.model != model {
		prev = nil
	}
	hashes := make([]string, len(docs))
	vecs := make([][]float32, len(docs))
	var texts []string
	type span struct{ doc, start int }
	var spans []span
	for i, d := range docs {
		hashes[i] = d.Hash()
		if prev != nil {
			if old, err := prev.col.GetByID(ctx, d.ID); err == nil && old.Metadata[metaHash] == hashes[i] && len(old.Embedding) > 0 {
				vecs[i] = old.Embedding
				st.Reused++
				continue
			}
		}
		spans = append(spans, span{i, len(texts)})
		for _, p := range d.Parts {
			texts = append(texts, p.Text)
		}
	}
	if len(texts) > 0 {
		out, err := embed(ctx, texts)
		if err != nil {
			return nil, st, err
		}
		if len(out) != len(texts) {
			return nil, st, fmt.Errorf("embedder returned %d vectors for %d texts", len(out), len(texts))
		}
		for _, s := range spans {
			v, err := combine(docs[s.doc].Parts, out[s.start:s.start+len(docs[s.doc].Parts)])
			if err != nil {
				return nil, st, fmt.Errorf("skill %s: %w", docs[s.doc].ID, err)
			}
			vecs[s.doc] = v
			st.Embedded++
		}
	}
	if prev != nil {
		st.Removed = prev.n - st.Reused
	}
	if len(docs) > 0 {
		cdocs := make([]chromem.Document, len(docs))
		for i, d := range docs {
			cdocs[i] = chromem.Document{
				ID:        d.ID,
				Metadata:  map[string]string{metaID: d.ID, metaName: d.Name, metaHash: hashes[i]},
				Embedding: vecs[i],
				// Content is what chromem would embed; vectors are given,
				// so it only needs to be non-empty.
				Content: d.Name + " ",
			}
		}
		if err := col.AddDocuments(ctx, cdocs, 4); err != nil {
			return nil, st, err
		}
	}
	return &Vectors{model: model, db: db, col: col, n: len(docs)}, st, nil
}

// combine sums the parts' vectors with their weights and normalizes.
func combine(parts []Part, vecs [][]float32) ([]float32, error) {
	if len(vecs) == 0 {
		return nil, errors.New("no vectors")
	}
	dim := len(vecs[0])
	if dim == 0 {
		return nil, errors.New("empty vector")
	}
	if len(vecs) == 1 {
		return unit(append([]float32(nil), vecs[0]...)), nil
	}
	sum := make([]float32, dim)
	for i, v := range vecs {
		if len(v) != dim {
			return nil, fmt.Errorf("vectors of %d and %d dimensions", dim, len(v))
		}
		w := float32(parts[i].Weight)
		for j, x := range v {
			sum[j] += w * x
		}
	}
	return unit(sum), nil
}

func unit(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		// chromem divides by the norm; a text with no features (only stop
		// words) gets a tiny constant vector instead of NaNs.
		v[0] = 1
		return v
	}
	k := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= k
	}
	return v
}

// Model is the embedding model the vectors were made with.
func (v *Vectors) Model() string { return v.model }

// Len is the number of documents.
func (v *Vectors) Len() int { return v.n }

// Hit is one document's cosine similarity to a query.
type Hit struct {
	ID         string
	Similarity float64
}

// Query returns up to n documents most similar to the unit vector q, best
// first. n is clamped to the document count (chromem rejects larger n).
func (v *Vectors) Query(ctx context.Context, q []float32, n int) ([]Hit, error) {
	if n > v.n {
		n = v.n
	}
	if n <= 0 {
		return nil, nil
	}
	res, err := v.col.QueryEmbedding(ctx, q, n, nil, nil)
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, len(res))
	for i, r := range res {
		hits[i] = Hit{ID: r.ID, Similarity: float64(r.Similarity)}
	}
	return hits, nil
}

// Save writes the index to path atomically (chromem's gzip'd gob export
// into a temporary file, then a rename).
func (v *Vectors) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := v.db.ExportToWriter(&buf, true, "", v.col.Name); err != nil {
		return fmt.Errorf("export vector index: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(buf.Bytes())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return werr
	}
	return nil
}

// LoadVectors reads an index saved with Save. A missing, unreadable or
// foreign file is an error the caller treats as "no previous index".
func LoadVectors(path string) (*Vectors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	db := chromem.NewDB()
	if err := db.ImportFromReader(f, ""); err != nil {
		return nil, fmt.Errorf("import vector index %s: %w", path, err)
	}
	cols := db.ListCollections()
	if len(cols) != 1 {
		return nil, fmt.Errorf("vector index %s: %d collections, want 1", path, len(cols))
	}
	for name, col := range cols {
		model, ok := strings.CutPrefix(name, collectionPrefix)
		if !ok || model == "" {
			return nil, fmt.Errorf("vector index %s: unexpected collection %q", path, name)
		}
		return &Vectors{model: model, db: db, col: col, n: col.Count()}, nil
	}
	panic("unreachable")
}

// FileName is the index file name for a provider, so indexes of different
// providers sit side by side in one directory.
func FileName(provider string) string {
	b := []byte(provider)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return "vectors-" + string(b) + ".gob.gz"
}
