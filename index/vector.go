package index

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	chromem "github.com/philippgille/chromem-go"

	"github.com/skillrouter/skillrouter/internal/atomicfile"
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
	// Known is the document's Hash when the caller already knows it (the
	// text is the one a previous index was built from); "" computes it.
	Known string
}

// Hash identifies a document's embedded content: equal hashes under the same
// model mean the stored vector can be reused.
func (d VectorDoc) Hash() string {
	if d.Known != "" {
		return d.Known
	}
	// The bytes of fmt's "%d:%s\x00%g\x00" for each part, written without
	// fmt, which copied each text through its buffer (at 10,000 skills
	// ~110 MB on every start); the text is hashed in place.
	h := sha256.New()
	var num []byte
	for _, p := range d.Parts {
		num = append(strconv.AppendInt(num[:0], int64(len(p.Text)), 10), ':')
		h.Write(num)
		h.Write(unsafe.Slice(unsafe.StringData(p.Text), len(p.Text)))
		num = append(strconv.AppendFloat(append(num[:0], 0), p.Weight, 'g', -1, 64), 0)
		h.Write(num)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// EmbedFunc embeds document texts; the vectors come back in order.
type EmbedFunc func(ctx context.Context, texts []string) ([][]float32, error)

// Vectors is an immutable vector index over one library for one embedding
// model. Queries score from two copies of the vectors: the exact float32
// rows, and a column-major int8 copy (each row scaled by its own largest
// component) that a query scans in one pass of contiguous memory, a quarter
// of the bytes of float32 columns (see Prepared: the scan finds the few rows
// that can rank near the top, which are then scored exactly from the rows,
// so results are the exact ones).
// chromem-go is the storage format: Save writes a chromem collection (one
// document per skill, its content hash and name as metadata) and
// LoadVectors reads one back. chromem's own Query fans out goroutines and
// heap-sorts per call (~0.5 ms for 407 skills, most of a request's routing
// cost), and keeping its copy of every vector beside these doubled the
// index's memory, so it is built only to save. A new library builds a new
// Vectors, reusing the rows of unchanged skills from the previous one, and
// the caller swaps it in, so queries never wait on writes.
type Vectors struct {
	model  string
	ids    []string // document ids, sorted; row i
	names  []string // by row
	hashes []string // content hashes (VectorDoc.Hash), by row
	n      int
	dim    int       // vector dimension
	rows   []float32 // n×dim, row-major: rows[i*dim+j] is component j of document i
	quant            // the int8 columns (quant.go)
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
// embedded, all parts of up to 512 documents per call to embed. prev may be nil. Of documents with equal
// ids the last counts.
func BuildVectors(ctx context.Context, docs []VectorDoc, model string, embed EmbedFunc, prev *Vectors) (*Vectors, BuildStats, error) {
	var st BuildStats
	if prev != nil && prev.model != model {
		prev = nil
	}
	docs = lastByID(docs)
	n := len(docs)
	v := &Vectors{model: model, ids: make([]string, n), names: make([]string, n), hashes: make([]string, n), n: n}
	from := make([]int, n) // row in prev to reuse; -1 = embed
	var fresh []int
	for i, d := range docs {
		v.ids[i], v.names[i], v.hashes[i] = d.ID, d.Name, d.Hash()
		from[i] = prev.row(d.ID)
		if from[i] < 0 || prev.hashes[from[i]] != v.hashes[i] {
			from[i] = -1
			fresh = append(fresh, i)
		}
	}
	reused := n - len(fresh)
	if prev != nil && reused == n && prev.n == n && sameRows(from) {
		// Every row is prev's, in prev's order (a warm start, a rebuild
		// with nothing changed): prev's rows and int8 columns serve as they
		// are, both immutable, instead of a copy of the rows quantized
		// again (~0.1 s of CPU and 40 MB at 10,000 skills).
		v.dim, v.rows, v.quant = prev.dim, prev.rows, prev.quant
		v.hashes = packStrings(v.hashes)
		st.Reused = n
		return v, st, nil
	}
	if reused > 0 {
		v.dim = prev.dim
		v.rows = make([]float32, n*v.dim)
	}
	// Vectors go straight into the rows as chunks are embedded.
	put := func(i int, vec []float32) error {
		if v.rows == nil {
			v.dim = len(vec)
			v.rows = make([]float32, n*v.dim)
		}
		if len(vec) != v.dim {
			if reused > 0 && from[i] < 0 {
				return errDimension
			}
			return fmt.Errorf("vector index: document %s has %d dimensions, want %d", v.ids[i], len(vec), v.dim)
		}
		copy(v.rows[i*v.dim:], vec)
		return nil
	}
	err := embedDocs(ctx, docs, fresh, embed, put)
	if errors.Is(err, errDimension) {
		// The model now answers with another dimension (a remote provider
		// learns it from its first response): nothing old can be mixed in.
		fresh, reused, v.rows = make([]int, n), 0, nil
		for i := range fresh {
			fresh[i], from[i] = i, -1
		}
		err = embedDocs(ctx, docs, fresh, embed, put)
	}
	if err != nil {
		return nil, st, err
	}
	for i, row := range from {
		if row >= 0 {
			copy(v.rows[i*v.dim:(i+1)*v.dim], prev.rows[row*prev.dim:(row+1)*prev.dim])
		}
	}
	st.Embedded, st.Reused = len(fresh), reused
	if prev != nil {
		st.Removed = prev.n - st.Reused
	}
	v.hashes = packStrings(v.hashes)
	v.quant = quantize(v.rows, v.n, v.dim)
	return v, st, nil
}

// sameRows reports whether each document takes the row at its own index.
func sameRows(from []int) bool {
	for i, row := range from {
		if row != i {
			return false
		}
	}
	return true
}

// HashOf returns the content hash stored for document id ("" when there is
// none), to pass as VectorDoc.Known for an unchanged document.
func (v *Vectors) HashOf(id string) string {
	if i := v.row(id); i >= 0 {
		return v.hashes[i]
	}
	return ""
}

// packStrings returns ss as substrings of one string: thousands of small
// strings made among a build's garbage would each keep a page alive.
func packStrings(ss []string) []string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s)
	}
	all, out := b.String(), make([]string, len(ss))
	off := 0
	for i, s := range ss {
		out[i] = all[off : off+len(s)]
		off += len(s)
	}
	return out
}

// errDimension: a fresh vector's dimension differs from the reused ones'.
var errDimension = errors.New("vector dimension changed")

// embedDocs embeds the documents docs[i] for i in which, all the parts of
// up to embedChunk documents per call, and hands each document's combined
// vector to put. Chunks bound what a build holds at once: a 10,000-skill
// library's part vectors alone are 80 MB.
func embedDocs(ctx context.Context, docs []VectorDoc, which []int, embed EmbedFunc, put func(i int, vec []float32) error) error {
	for len(which) > 0 {
		n := min(len(which), embedChunk)
		if err := embedChunkDocs(ctx, docs, which[:n], embed, put); err != nil {
			return err
		}
		which = which[n:]
	}
	return nil
}

const embedChunk = 512

func embedChunkDocs(ctx context.Context, docs []VectorDoc, which []int, embed EmbedFunc, put func(i int, vec []float32) error) error {
	var texts []string
	for _, i := range which {
		for _, p := range docs[i].Parts {
			texts = append(texts, p.Text)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	out, err := embed(ctx, texts)
	if err != nil {
		return err
	}
	if len(out) != len(texts) {
		return fmt.Errorf("embedder returned %d vectors for %d texts", len(out), len(texts))
	}
	for _, i := range which {
		n := len(docs[i].Parts)
		vec, err := combine(docs[i].Parts, out[:n])
		if err != nil {
			return fmt.Errorf("skill %s: %w", docs[i].ID, err)
		}
		if err := put(i, vec); err != nil {
			return err
		}
		out = out[n:]
	}
	return nil
}

// lastByID sorts docs by id, keeping the last of equal ids.
func lastByID(docs []VectorDoc) []VectorDoc {
	out := slices.Clone(docs)
	slices.SortStableFunc(out, func(a, b VectorDoc) int { return strings.Compare(a.ID, b.ID) })
	k := 0
	for i := range out {
		if i+1 < len(out) && out[i+1].ID == out[i].ID {
			continue
		}
		out[k] = out[i]
		k++
	}
	return out[:k]
}

// pack fills the rows from vectors given in id order (ids sorted and
// distinct), so equal scores rank the same way on every run, and quantizes
// them for scanning.
func (v *Vectors) pack(ids, names, hashes []string, vecs [][]float32) error {
	v.ids, v.names, v.hashes, v.n, v.dim, v.rows = ids, names, hashes, len(ids), 0, nil
	for i, vec := range vecs {
		if i == 0 {
			v.dim = len(vec)
			v.rows = make([]float32, v.dim*v.n)
		}
		if len(vec) != v.dim {
			return fmt.Errorf("vector index: document %s has %d dimensions, want %d", ids[i], len(vec), v.dim)
		}
		copy(v.rows[i*v.dim:], vec)
	}
	v.quant = quantize(v.rows, v.n, v.dim)
	return nil
}

// row returns the matrix row of document id, or -1 (also for a nil index).
func (v *Vectors) row(id string) int {
	if v == nil {
		return -1
	}
	if i, ok := slices.BinarySearch(v.ids, id); ok {
		return i
	}
	return -1
}

// vector returns a copy of row i's vector.
func (v *Vectors) vector(i int) []float32 {
	return slices.Clone(v.rows[i*v.dim : (i+1)*v.dim])
}

// combine sums the parts' vectors with their weights and normalizes.
//
// A part's vector shorter than unit length (the builtin embedder's, for a
// text with words its fit does not know: their share of the length is in
// no component) keeps that share hidden in the sum too: the result is
// normalized as if the missing length were there, orthogonal to every
// query, so that a skill written after the fit does not score as if its
// few known words were all it said. Unit and zero vectors hide nothing,
// so everything else combines exactly as before.
func combine(parts []Part, vecs [][]float32) ([]float32, error) {
	if len(vecs) == 0 {
		return nil, errors.New("no vectors")
	}
	dim := len(vecs[0])
	if dim == 0 {
		return nil, errors.New("empty vector")
	}
	if len(vecs) == 1 {
		v := append([]float32(nil), vecs[0]...)
		if hiddenShare(v) > 0 {
			return v, nil // already scaled within its whole length
		}
		return unit(v), nil
	}
	sum := make([]float32, dim)
	var hidden float64
	for i, v := range vecs {
		if len(v) != dim {
			return nil, fmt.Errorf("vectors of %d and %d dimensions", dim, len(v))
		}
		w := float32(parts[i].Weight)
		for j, x := range v {
			sum[j] += w * x
		}
		hidden += float64(w) * float64(w) * hiddenShare(v)
	}
	if hidden == 0 {
		return unit(sum), nil
	}
	var s float64
	for _, x := range sum {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return unit(sum), nil
	}
	k := float32(1 / math.Sqrt(s+hidden))
	for i := range sum {
		sum[i] *= k
	}
	return sum, nil
}

// hiddenShare is the share of a vector's squared length it does not hold
// (see combine): 1 − |v|² for a non-zero vector clearly shorter than unit
// length, else 0.
func hiddenShare(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 || s > 1-1e-4 {
		return 0
	}
	return 1 - s
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

// WithModel returns the index under another model name (the same rows).
func (v *Vectors) WithModel(model string) *Vectors {
	c := *v
	c.model = model
	return &c
}

// Len is the number of documents.
func (v *Vectors) Len() int { return v.n }

// Dim is the size of the vectors (0 when there are none).
func (v *Vectors) Dim() int {
	if v.n == 0 {
		return 0
	}
	return v.dim
}

// Hit is one document's cosine similarity to a query.
type Hit struct {
	ID         string
	Similarity float64
}

// IDs are the document ids in the order Similarities reports them (sorted).
// The slice is shared; do not modify it.
func (v *Vectors) IDs() []string { return v.ids }

// Similarities writes every document's dot product with q into dst (len
// Len(), in IDs order); for unit vectors that is the cosine similarity.
// Each is the float32 sum, in ascending component order, of q's non-zero
// components times the document's (see Prepared.Exact). Prepared finds the
// best few without scoring every row exactly.
func (v *Vectors) Similarities(q []float32, dst []float64) error {
	if len(dst) != v.n {
		return fmt.Errorf("destination holds %d scores, index has %d documents", len(dst), v.n)
	}
	p, err := v.Prepare(q)
	if err != nil {
		return err
	}
	for i := range dst {
		dst[i] = p.Exact(i)
	}
	return nil
}

// Query returns up to n documents most similar to the unit vector q, best
// first, equal similarities by id.
func (v *Vectors) Query(ctx context.Context, q []float32, n int) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n > v.n {
		n = v.n
	}
	if n <= 0 {
		return nil, nil
	}
	p, err := v.Prepare(q)
	if err != nil {
		return nil, err
	}
	sims := make([]float64, v.n)
	var rows []int
	if n < v.n/2 && p.Approximate(sims) {
		rows = p.Candidates(sims, n, nil)
	} else {
		rows = make([]int, v.n)
		for i := range rows {
			rows[i] = i
		}
	}
	hits := make([]Hit, len(rows))
	for k, i := range rows {
		hits[k] = Hit{ID: v.ids[i], Similarity: p.Exact(i)}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Similarity, a.Similarity); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return hits[:n], nil
}

// Save writes the index to path atomically: a chromem-go collection,
// exported gzip'd into a temporary file, then renamed. The gzip is ours,
// Huffman coding only: float components barely repeat, so chromem's own
// gzip (default level) spent 2.7 s of CPU on 10,000 vectors for a file 5%
// smaller than Huffman's in 0.7 s; chromem's import reads any gzip stream.
func (v *Vectors) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	db, col, err := v.chromem()
	if err != nil {
		return fmt.Errorf("export vector index: %w", err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.HuffmanOnly) // a valid level: no error
	if err := db.ExportToWriter(zw, false, "", col.Name); err != nil {
		return fmt.Errorf("export vector index: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("export vector index: %w", err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}

// chromem builds the chromem-go collection Save exports. chromem has no
// accessor for collection metadata nor a way to list ids, so the dimension
// and model go into the collection's name and LoadVectors probes for the
// documents.
func (v *Vectors) chromem() (*chromem.DB, *chromem.Collection, error) {
	db := chromem.NewDB()
	col, err := db.CreateCollection(collectionName(v.dim, v.model), nil, nil)
	if err != nil {
		return nil, nil, err
	}
	if v.n == 0 {
		return db, col, nil
	}
	docs := make([]chromem.Document, v.n)
	for i, id := range v.ids {
		docs[i] = chromem.Document{
			ID:        id,
			Metadata:  map[string]string{metaID: id, metaName: v.names[i], metaHash: v.hashes[i]},
			Embedding: v.vector(i),
			// Content is what chromem would embed; vectors are given, so
			// it only needs to be non-empty.
			Content: v.names[i] + " ",
		}
	}
	if err := col.AddDocuments(context.Background(), docs, 4); err != nil {
		return nil, nil, err
	}
	return db, col, nil
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
		dim, model, ok := parseCollectionName(name)
		if !ok {
			return nil, fmt.Errorf("vector index %s: unexpected collection %q", path, name)
		}
		ids, err := storedIDs(col, dim)
		if err != nil {
			return nil, fmt.Errorf("vector index %s: %w", path, err)
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		names, hashes := make([]string, len(ids)), make([]string, len(ids))
		vecs := make([][]float32, len(ids))
		for i, id := range ids {
			doc, err := col.GetByID(context.Background(), id)
			if err != nil {
				return nil, fmt.Errorf("vector index %s: %w", path, err)
			}
			names[i], hashes[i], vecs[i] = doc.Metadata[metaName], doc.Metadata[metaHash], doc.Embedding
		}
		v := &Vectors{model: model}
		if err := v.pack(ids, names, hashes, vecs); err != nil {
			return nil, fmt.Errorf("vector index %s: %w", path, err)
		}
		if v.n > 0 && v.dim != dim {
			return nil, fmt.Errorf("vector index %s: vectors of %d dimensions in a collection named for %d", path, v.dim, dim)
		}
		return v, nil
	}
	panic("unreachable")
}

// storedIDs lists a collection's document ids. chromem has no listing call;
// a query for every document returns them all (once per load).
func storedIDs(col *chromem.Collection, dim int) ([]string, error) {
	n := col.Count()
	if n == 0 {
		return nil, nil
	}
	if dim <= 0 {
		return nil, fmt.Errorf("%d documents in a collection named for %d dimensions", n, dim)
	}
	probe := make([]float32, dim)
	probe[0] = 1
	res, err := col.QueryEmbedding(context.Background(), probe, n, nil, nil)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids, nil
}

func collectionName(dim int, model string) string {
	return collectionPrefix + strconv.Itoa(dim) + ":" + model
}

func parseCollectionName(name string) (dim int, model string, ok bool) {
	rest, ok := strings.CutPrefix(name, collectionPrefix)
	if !ok {
		return 0, "", false
	}
	d, model, ok := strings.Cut(rest, ":")
	dim, err := strconv.Atoi(d)
	if !ok || err != nil || dim < 0 || model == "" { // 0: an empty index
		return 0, "", false
	}
	return dim, model, true
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
