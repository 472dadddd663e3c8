package embed

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

// The fitted state of a Builtin (options, IDF table, vocabulary) saved with
// MarshalBinary and loaded with RestoreBuiltin, so a prebuilt routing index
// can skip Fit: at start-up a replica restores the state instead of reading
// every skill again. Restored and freshly fitted embedders give the same
// vectors, bit for bit.
//
// Layout, little-endian: magic "SRB1", builtinVersion, options, unseen IDF,
// fingerprint, the IDF table sorted by feature hash, the vocabulary words
// in rank order, then a CRC-32 (IEEE) of everything before it.

const stateMagic = "SRB1"

// MarshalBinary encodes a fitted embedder's state. An unfitted one has
// nothing worth saving: that is an error.
func (b *Builtin) MarshalBinary() ([]byte, error) {
	if b.idf == nil {
		return nil, errors.New("builtin embedder: not fitted")
	}
	w := &stateWriter{b: make([]byte, 0, 64+12*len(b.idf))}
	w.b = append(w.b, stateMagic...)
	w.str(builtinVersion)
	w.u32(uint32(b.opts.Dimensions))
	w.f64(b.opts.Unigram)
	w.f64(b.opts.Bigram)
	w.f64(b.opts.CharGram)
	w.u32(uint32(b.opts.CharMin))
	w.u32(uint32(b.opts.CharMax))
	w.f32(b.unseenIDF)
	w.str(b.fingerprint)
	keys := make([]uint64, 0, len(b.idf))
	for h := range b.idf {
		keys = append(keys, h)
	}
	slices.Sort(keys)
	w.u32(uint32(len(keys)))
	for _, h := range keys {
		w.u64(h)
		w.f32(b.idf[h])
	}
	words := b.vocab.words()
	w.u32(uint32(len(words)))
	for _, word := range words {
		w.str(word)
	}
	w.u32(crc32.ChecksumIEEE(w.b))
	return w.b, nil
}

// RestoreBuiltin decodes a state written by MarshalBinary. A state of
// another feature version, a damaged or truncated one is an error.
func RestoreBuiltin(data []byte) (*Builtin, error) {
	if len(data) < len(stateMagic)+4 || string(data[:len(stateMagic)]) != stateMagic {
		return nil, errors.New("builtin state: not a builtin embedder state")
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, errors.New("builtin state: checksum mismatch (damaged file)")
	}
	r := &stateReader{r: bytes.NewReader(body[len(stateMagic):])}
	if v := r.str(); r.err == nil && v != builtinVersion {
		return nil, fmt.Errorf("builtin state: feature version %q, this build is %q", v, builtinVersion)
	}
	b := &Builtin{}
	b.opts.Dimensions = int(r.u32())
	b.opts.Unigram, b.opts.Bigram, b.opts.CharGram = r.f64(), r.f64(), r.f64()
	b.opts.CharMin, b.opts.CharMax = int(r.u32()), int(r.u32())
	b.unseenIDF = r.f32()
	b.fingerprint = r.str()
	n := r.count(12)
	b.idf = make(map[uint64]float32, n)
	for i := 0; i < n && r.err == nil; i++ {
		h := r.u64()
		b.idf[h] = r.f32()
	}
	nw := r.count(4)
	counts := make(map[string]int, nw)
	for i := 0; i < nw && r.err == nil; i++ {
		// Descending counts reproduce the saved rank order in newVocab.
		counts[r.str()] = nw - i
	}
	if r.err != nil {
		return nil, fmt.Errorf("builtin state: %w", r.err)
	}
	if r.r.Len() != 0 {
		return nil, errors.New("builtin state: trailing bytes")
	}
	if b.opts.Dimensions < 2 || b.opts.Dimensions > 1<<20 || b.opts.CharMin <= 0 || b.opts.CharMax < b.opts.CharMin || b.opts.CharMax > 64 {
		return nil, fmt.Errorf("builtin state: invalid options %+v", b.opts)
	}
	b.vocab = newVocab(counts, len(counts), &b.opts, b.idf)
	return b, nil
}

// words are the vocabulary's words in rank order (most frequent first).
func (v *vocab) words() []string {
	if v == nil {
		return nil
	}
	out := make([]string, len(v.entries))
	for w, i := range v.index {
		out[i] = w
	}
	return out
}

type stateWriter struct{ b []byte }

func (s *stateWriter) u32(x uint32)  { s.b = binary.LittleEndian.AppendUint32(s.b, x) }
func (s *stateWriter) u64(x uint64)  { s.b = binary.LittleEndian.AppendUint64(s.b, x) }
func (s *stateWriter) f32(x float32) { s.u32(math.Float32bits(x)) }
func (s *stateWriter) f64(x float64) { s.u64(math.Float64bits(x)) }
func (s *stateWriter) str(x string) {
	s.u32(uint32(len(x)))
	s.b = append(s.b, x...)
}

// stateReader reads until the first error, then returns zeros.
type stateReader struct {
	r   *bytes.Reader
	err error
}

func (s *stateReader) read(n int) []byte {
	if s.err != nil {
		return make([]byte, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(s.r, b); err != nil {
		s.err = errors.New("truncated")
	}
	return b
}

func (s *stateReader) u32() uint32  { return binary.LittleEndian.Uint32(s.read(4)) }
func (s *stateReader) u64() uint64  { return binary.LittleEndian.Uint64(s.read(8)) }
func (s *stateReader) f32() float32 { return math.Float32frombits(s.u32()) }
func (s *stateReader) f64() float64 { return math.Float64frombits(s.u64()) }

func (s *stateReader) str() string {
	n := s.count(1)
	return string(s.read(n))
}

// count reads a length whose items take at least size bytes each, refusing
// one the rest of the data cannot hold (a damaged length must not allocate
// gigabytes).
func (s *stateReader) count(size int) int {
	n := int(s.u32())
	if s.err == nil && n*size > s.r.Len() {
		s.err = errors.New("truncated")
		return 0
	}
	return n
}
