package embed

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/skillrouter/skillrouter/internal/atomicfile"
)

// CacheDir resolves Config.CacheDir: "-" disables the cache (returns ""),
// "" means $XDG_CACHE_HOME/skillrouter, falling back to the OS cache
// directory (os.UserCacheDir). The default folder is made this user's own
// (see privateDefault); a folder configured is left as it is.
func CacheDir(dir string) (string, error) {
	switch dir {
	case "-":
		return "", nil
	case "":
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			var err error
			if base, err = os.UserCacheDir(); err != nil {
				return "", misconfigured("cache", fmt.Errorf("no cache directory (set cache_dir, or \"-\" to disable): %w", err))
			}
		}
		dir = filepath.Join(base, "skillrouter")
		privateDefault(dir)
		return dir, nil
	default:
		return dir, nil
	}
}

// privateDefault creates the default cache folder 0700, and closes one an
// older build created 0755: it holds the library's vectors, the kept
// routing index (the library's vocabulary) and the unpacked example
// library, which other local users should neither read nor replace.
// Failures are left to the writes that follow (a read-only home).
func privateDefault(dir string) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && fi.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(dir, 0o700)
	}
}

// Cache wraps an embedder with an on-disk cache of document vectors keyed by
// (provider, model, requested dimensions, sha256 of the text), so a restart
// or a library reload only embeds skills whose text changed.
//
// Only EmbedDocuments is cached. Embed (queries) passes straight through:
// chat messages are unbounded in number and private, and a disk write per
// request would be the wrong trade.
//
// Entries are written atomically (temp file + rename); an entry that is
// truncated, of the wrong size or fails its checksum is ignored and
// rewritten, never fatal. A cache that cannot be written degrades to no
// cache.
type Cache struct {
	inner Embedder
	dir   string    // directory of this provider/model/dimension
	clean sync.Once // removeStale
}

// NewCache caches inner's document vectors under root. dims is the requested
// dimension (0 = the model's own); it is part of the key because the same
// model truncated to different sizes gives different vectors.
func NewCache(inner Embedder, root string, dims int) *Cache {
	model := inner.Model()
	return &Cache{
		inner: inner,
		dir: filepath.Join(root, "embeddings", safeName(inner.Name()),
			safeName(model)+"-"+shortHash(model)+"-"+strconv.Itoa(dims)),
	}
}

// Name implements the router's Embedder.
func (c *Cache) Name() string { return c.inner.Name() }

// Model implements the router's Embedder.
func (c *Cache) Model() string { return c.inner.Model() }

// Dimensions implements the router's Embedder.
func (c *Cache) Dimensions() int { return c.inner.Dimensions() }

// Dir is the directory holding this embedder's entries.
func (c *Cache) Dir() string { return c.dir }

// Embed embeds queries without caching.
func (c *Cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return c.inner.Embed(ctx, texts)
}

// EmbedDocuments returns cached vectors and embeds only the misses (each
// distinct text once), in one batched call to the provider.
//
// The key holds the requested size (0 = the model's own), not the size the
// model answers with: the model behind a name may change its size (another
// variant pulled under the same tag, a gateway alias moved). Once the inner
// embedder's size is known (from its first answer, maybe to this call's
// misses), entries of another size are misses too, and are replaced.
func (c *Cache) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	keys := make([]string, len(texts))
	for i, t := range texts {
		keys[i] = textKey(t)
		out[i] = c.read(keys[i])
	}
	size := c.inner.Dimensions() // 0 until a remote embedder's first answer
	// At most three rounds: the misses; the entries of an old size the
	// first answer revealed; an embedder whose size is still unsettled
	// after that gets what it answered.
	for range 3 {
		miss := misses(out, size)
		if len(miss) == 0 {
			break
		}
		got, err := c.embedMisses(ctx, texts, keys, miss, out)
		if err != nil {
			return nil, err
		}
		if size = c.inner.Dimensions(); size == 0 {
			size = got
		}
	}
	return out, nil
}

// misses are the positions of out to embed: those not cached, those of
// another size than size (when known), and while it is not, one of entries
// of two sizes, whose answer tells which is current.
func misses(out [][]float32, size int) []int {
	var miss []int
	mixed := false
	for i, v := range out {
		if v == nil || size > 0 && len(v) != size {
			miss = append(miss, i)
		}
		mixed = mixed || v != nil && len(v) != len(out[0])
	}
	if len(miss) == 0 && size == 0 && mixed {
		miss = []int{0}
	}
	return miss
}

// embedMisses embeds texts[i] for every i in miss (each distinct text
// once), caches the vectors and puts them in out; it returns their size.
func (c *Cache) embedMisses(ctx context.Context, texts, keys []string, miss []int, out [][]float32) (int, error) {
	var missTexts []string
	missAt := map[string][]int{}
	for _, i := range miss {
		if _, ok := missAt[keys[i]]; !ok {
			missTexts = append(missTexts, texts[i])
		}
		missAt[keys[i]] = append(missAt[keys[i]], i)
	}
	// In parts, each cached as it comes: a library of thousands of skills
	// whose embedder fails part way keeps what it embedded, and the retry
	// embeds the rest only.
	size := 0
	for start := 0; start < len(missTexts); start += cacheChunk {
		part := missTexts[start:min(start+cacheChunk, len(missTexts))]
		var vecs [][]float32
		var err error
		if de, ok := c.inner.(DocumentEmbedder); ok {
			vecs, err = de.EmbedDocuments(ctx, part)
		} else {
			vecs, err = c.inner.Embed(ctx, part)
		}
		if err != nil {
			return 0, err
		}
		if len(vecs) != len(part) {
			return 0, unavailable(c.inner.Name(), fmt.Errorf("%w: %d vectors for %d inputs", ErrMalformedResponse, len(vecs), len(part)))
		}
		for j, t := range part {
			k := textKey(t)
			for _, i := range missAt[k] {
				out[i] = vecs[j]
			}
			_ = c.write(k, vecs[j]) // best effort: a read-only cache still embeds
		}
		size = len(vecs[0])
	}
	return size, nil
}

// cacheChunk is how many texts the cache hands the embedder at a time (a
// remote one batches them further).
const cacheChunk = 256

const cacheMagic = "SRE1"

func (c *Cache) path(key string) string {
	return filepath.Join(c.dir, key[:2], key+".vec")
}

// read returns the cached vector or nil for a miss or a damaged entry.
func (c *Cache) read(key string) []float32 {
	b, err := os.ReadFile(c.path(key))
	if err != nil || len(b) < 12 || string(b[:4]) != cacheMagic {
		return nil
	}
	dim := int(binary.LittleEndian.Uint32(b[4:8]))
	if dim <= 0 || len(b) != 8+4*dim+4 {
		return nil
	}
	body := b[:8+4*dim]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(b[8+4*dim:]) {
		return nil
	}
	v := make([]float32, dim)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*i:]))
	}
	return v
}

func (c *Cache) write(key string, v []float32) error {
	if len(v) == 0 {
		return errors.New("empty vector")
	}
	dir := filepath.Dir(c.path(key))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b := make([]byte, 8+4*len(v)+4)
	copy(b, cacheMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(v)))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[8+4*i:], math.Float32bits(x))
	}
	binary.LittleEndian.PutUint32(b[8+4*len(v):], crc32.ChecksumIEEE(b[:8+4*len(v)]))
	c.clean.Do(c.removeStale)
	// Unsynced: an entry carries its checksum, and a sync per entry would
	// cost more than embedding again the few a crash loses.
	return atomicfile.WriteUnsynced(c.path(key), func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// removeStale deletes the temporary files writes that never finished (the
// process killed) left in the cache's folders (atomicfile.RemoveStale says
// which); it runs before the first write of a process, and nothing else
// would ever remove them.
func (c *Cache) removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(c.dir, "??"))
	for _, d := range dirs {
		atomicfile.RemoveStale(d)
	}
}

func textKey(t string) string {
	h := sha256.Sum256([]byte(t))
	return hex.EncodeToString(h[:])
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}

// safeName keeps a provider or model name readable as a path element
// ("nomic-embed-text:latest" -> "nomic-embed-text_latest"); shortHash keeps
// names that map to the same safe form apart.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	if b.Len() > 80 {
		return b.String()[:80]
	}
	return b.String()
}
