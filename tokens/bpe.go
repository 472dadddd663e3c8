package tokens

// Byte-pair counting over the codec's own vocabulary. Only counts are
// needed, so a piece costs one table lookup when it is a token (most are)
// and a merge otherwise; nothing is allocated for pieces shorter than
// scanMax.

import (
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// bpe counts tokens for an encoding whose pre-tokenizer is written out in
// split.go.
type bpe struct {
	piece func(string) int // the length of the first piece of a non-empty text
	vocab
}

// vocab maps token bytes to ranks in ~4.4 MB for o200k_base (a Go map
// took 8 MB; tiktoken-go's own map stays in its package either way): the
// tokens' bytes in one string, their offsets, and an
// open-addressing table of ids tagged with hash bits, so that a miss (most
// of a merge's lookups) rarely reads a token's bytes.
type vocab struct {
	arena string
	offs  []uint32 // token id i is arena[offs[i]:offs[i+1]]
	slots []uint32 // tag<<idBits | id+1; 0 is empty
	seed  maphash.Seed
}

const (
	idBits = 18 // ids below 2^18-1: o200k_base has 199,998 tokens
	idMask = 1<<idBits - 1
	noRank = math.MaxUint32
)

// newBPE reads the codec's vocabulary back through Decode (tiktoken-go keeps
// it unexported): every id below the first special token's decodes to its
// token's bytes.
func newBPE(codec tokenizer.Codec, piece func(string) int) (*bpe, error) {
	// A token may hold part of a character: Decode must return its bytes
	// as they are, not replaced or dropped.
	codec.SetErrorMode(tokenizer.ErrorModeNone)
	var all strings.Builder
	offs := []uint32{0}
	for id, misses := uint(0), 0; misses < 64; id++ {
		tok, err := codec.Decode([]uint{id})
		if err != nil {
			misses++ // ids the vocabulary skips; its end is 64 misses in a row
		} else {
			misses = 0
			all.WriteString(tok)
		}
		offs = append(offs, uint32(all.Len()))
	}
	n := len(offs) - 1
	if all.Len() < 256 || n >= idMask {
		return nil, fmt.Errorf("tokens: %s: a vocabulary of %d bytes in %d ids", codec.GetName(), all.Len(), n)
	}
	v := vocab{arena: all.String(), offs: slices.Clip(offs), seed: maphash.MakeSeed()}
	size := 1
	for size < 2*n {
		size <<= 1
	}
	v.slots = make([]uint32, size)
	for id := range n {
		tok := v.arena[offs[id]:offs[id+1]]
		if tok == "" {
			continue
		}
		h := maphash.String(v.seed, tok)
		i := h & uint64(size-1)
		for v.slots[i] != 0 {
			i = (i + 1) & uint64(size-1)
		}
		v.slots[i] = tag(h) | uint32(id+1)
	}
	return &bpe{piece: piece, vocab: v}, nil
}

// tag is the hash bits a slot keeps beside its id.
func tag(h uint64) uint32 { return uint32(h>>(64-(32-idBits))) << idBits }

// rank returns the rank of p, or noRank if p is not a token.
func (v *vocab) rank(p string) uint32 {
	h := maphash.String(v.seed, p)
	t := tag(h)
	mask := uint64(len(v.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := v.slots[i]
		if e == 0 {
			return noRank
		}
		if e&^idMask == t {
			id := e&idMask - 1
			if v.arena[v.offs[id]:v.offs[id+1]] == p {
				return id
			}
		}
	}
}

// count returns the number of tokens in s, as the codec's Count would.
func (b *bpe) count(s string) int {
	if !utf8.ValidString(s) {
		s = runeSafe(s)
	}
	n := 0
	for len(s) > 0 {
		end := b.piece(s)
		if end == 0 {
			_, skip := utf8.DecodeRuneInString(s)
			s = s[skip:]
			continue
		}
		n += b.countPiece(s[:end])
		s = s[end:]
	}
	return n
}

// runeSafe replaces every byte that does not start a valid UTF-8 sequence
// with U+FFFD, as converting the text to runes does before the codec splits
// it (one U+FFFD per byte, unlike strings.ToValidUTF8).
func runeSafe(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// scanMax is the piece length below which merges are found by scanning the
// parts (quadratic, allocation-free); longer pieces use a heap.
const scanMax = 96

func (b *bpe) countPiece(p string) int {
	if b.rank(p) != noRank {
		return 1
	}
	if len(p) < scanMax {
		return b.mergeScan(p)
	}
	return b.mergeHeap(p)
}

// mergeScan merges the leftmost pair of lowest rank until none is a token,
// and returns how many parts are left: tiktoken's byte_pair_merge.
func (b *bpe) mergeScan(p string) int {
	type part struct {
		off  int
		rank uint32
	}
	var buf [scanMax + 1]part
	parts := buf[:len(p)+1]
	for i := range parts {
		parts[i] = part{i, math.MaxUint32}
	}
	// pairRank is the rank of parts i and i+1+skip joined.
	pairRank := func(i, skip int) uint32 {
		if i+skip+2 < len(parts) {
			return b.rank(p[parts[i].off:parts[i+skip+2].off])
		}
		return math.MaxUint32
	}
	for i := 0; i+2 < len(parts); i++ {
		parts[i].rank = pairRank(i, 0)
	}
	for len(parts) > 1 {
		best, min := 0, uint32(math.MaxUint32)
		for i, pt := range parts[:len(parts)-1] {
			if pt.rank < min {
				best, min = i, pt.rank
			}
		}
		if min == math.MaxUint32 {
			break
		}
		parts[best].rank = pairRank(best, 1)
		if best > 0 {
			parts[best-1].rank = pairRank(best-1, 1)
		}
		parts = append(parts[:best+1], parts[best+2:]...)
	}
	return len(parts) - 1
}

// mergeHeap gives mergeScan's count in O(n log n): part boundaries in a
// linked list, candidate merges in a min-heap by (rank, offset), stale
// candidates skipped when popped.
func (b *bpe) mergeHeap(p string) int {
	const none = noRank
	n := int32(len(p))
	type node struct {
		prev, next int32
		rank       uint32
	}
	nodes := make([]node, n+1)
	for i := range nodes {
		nodes[i] = node{prev: int32(i) - 1, next: int32(i) + 1, rank: none}
	}
	nodes[n].next = -1
	rankAt := func(i int32) uint32 {
		j := nodes[i].next
		if j < 0 || nodes[j].next < 0 {
			return none
		}
		return b.rank(p[i:nodes[j].next])
	}
	h := mergeHeap(make([]mergeCand, 0, n))
	for i := int32(0); i+2 <= n; i++ {
		if r := rankAt(i); r != none {
			nodes[i].rank = r
			h = append(h, mergeCand{r, i})
		}
	}
	h.init()
	parts := int(n)
	for len(h) > 0 {
		top := h.pop()
		i := top.off
		if nodes[i].rank != top.rank {
			continue // stale: the pair changed since it was pushed
		}
		j := nodes[i].next
		k := nodes[j].next
		nodes[j].rank = none
		nodes[i].next = k
		if k >= 0 {
			nodes[k].prev = i
		}
		parts--
		for _, at := range [2]int32{i, nodes[i].prev} {
			if at < 0 {
				continue
			}
			nodes[at].rank = rankAt(at)
			if nodes[at].rank != none {
				h.push(mergeCand{nodes[at].rank, at})
			}
		}
	}
	return parts
}

type mergeCand struct {
	rank uint32
	off  int32
}

// mergeHeap is a min-heap of merge candidates by rank, then offset, so that
// among equal ranks the leftmost pair merges first.
type mergeHeap []mergeCand

func (h mergeHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].off < h[b].off
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(c mergeCand) {
	*h = append(*h, c)
	h.up(len(*h) - 1)
}

func (h *mergeHeap) pop() mergeCand {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h mergeHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (h mergeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
