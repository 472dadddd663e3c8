package skills

// A skill's text. In a large library the SKILL.md text is most of the
// memory (10,000 skills hold ~110 MB of it), yet once the router has
// indexed a snapshot the text is read only to render an envelope or answer
// a read, and the router caches those. Snapshot.Pack therefore keeps each
// skill's text zstd-compressed (~2.4× smaller); Content and Body decompress
// it on demand (~10 µs for a 12 KB SKILL.md, BenchmarkUnpack). Packing changes nothing a
// reader can see, so it may run while the snapshot is in use.

import (
	"bytes"
	"context"
	"hash/maphash"
	"strings"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// skillText is one immutable form of a skill's text: plain, or packed.
type skillText struct {
	content string // the whole SKILL.md as read; "" when packed
	body    string // Markdown after the frontmatter; "" when packed
	packed  []byte // zstd frame of content, whose suffix from bodyAt is body
	bodyAt  int
	sum     textSum // of content
	bodySum textSum
}

// textSum identifies a text by its length and two 64-bit hashes, so
// versions can be compared without unpacking them.
type textSum struct {
	n int
	h [2]uint64
}

var textSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func sumOf(text string) textSum {
	return textSum{len(text), [2]uint64{maphash.String(textSeeds[0], text), maphash.String(textSeeds[1], text)}}
}

// SetText sets the skill's text: content is the whole SKILL.md as read
// ("" for skills made in memory, which have no file), body the Markdown
// after its frontmatter. Parsing sets both; use it for skills made in
// memory, before they are shared. It returns s.
func (s *Skill) SetText(content, body string) *Skill {
	s.text.Store(&skillText{content: content, body: body, sum: sumOf(content), bodySum: sumOf(body)})
	return s
}

// form returns the skill's text form; a skill never given one has the
// empty text.
func (s *Skill) form() *skillText {
	if t := s.text.Load(); t != nil {
		return t
	}
	return &emptyText
}

var emptyText = skillText{sum: sumOf(""), bodySum: sumOf("")}

// Content returns the whole SKILL.md as read ("" for skills made in memory).
func (s *Skill) Content() string {
	t := s.form()
	if t.packed == nil {
		return t.content
	}
	return unpack(t)
}

// Body returns the Markdown after the frontmatter.
func (s *Skill) Body() string {
	t := s.form()
	if t.packed == nil {
		return t.body
	}
	return unpack(t)[t.bodyAt:]
}

// Packed reports whether the skill's text is held packed (Snapshot.Pack).
func (s *Skill) Packed() bool { return s.form().packed != nil }

// SameContent reports whether a and b have the same Content, and SameBody
// whether they have the same Body, without unpacking either.
func SameContent(a, b *Skill) bool { return a.form().sum == b.form().sum }

func SameBody(a, b *Skill) bool { return a.form().bodySum == b.form().bodySum }

// pack compresses the skill's text with enc when that saves memory; texts
// whose body is not the end of their content (made in memory) stay as they
// are. buf is scratch; pack returns it for the next call.
func (s *Skill) pack(enc *zstd.Encoder, buf []byte) []byte {
	t := s.text.Load()
	if t == nil || t.packed != nil || len(t.content) < minPackBytes || !strings.HasSuffix(t.content, t.body) {
		return buf
	}
	buf = enc.EncodeAll(unsafe.Slice(unsafe.StringData(t.content), len(t.content)), buf[:0])
	if len(buf) < len(t.content) {
		s.text.Store(&skillText{packed: bytes.Clone(buf), bodyAt: len(t.content) - len(t.body), sum: t.sum, bodySum: t.bodySum})
	}
	return buf
}

// adopt takes over p's packed form of the same text; false when s is
// packed already, p is nil or not packed, or the texts differ.
func (s *Skill) adopt(p *Skill) bool {
	if p == nil || p == s {
		return false
	}
	t, pt := s.text.Load(), p.text.Load()
	if t == nil || t.packed != nil || pt == nil || pt.packed == nil || t.sum != pt.sum || t.bodySum != pt.bodySum {
		return false
	}
	return s.text.CompareAndSwap(t, pt)
}

// minPackBytes: shorter texts are not worth a frame.
const minPackBytes = 512

func unpack(t *skillText) string {
	out, err := decoder().DecodeAll(t.packed, make([]byte, 0, t.sum.n))
	if err != nil {
		// Frames are made by pack and never leave the process.
		panic("skills: packed text does not decode: " + err.Error())
	}
	// out is new and referenced nowhere else: the string can own it.
	return unsafe.String(unsafe.SliceData(out), len(out))
}

// decoder is made on first use and kept: unpacking happens all along.
var decoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(err)
	}
	return d
})

// Pack keeps the text of the snapshot's skills compressed (see the file
// comment), one skill at a time on the calling goroutine, until ctx ends.
// It returns the bytes saved. Readers see no difference; Pack is meant for
// after the router has indexed the snapshot, which reads every body.
func (s *Snapshot) Pack(ctx context.Context) (saved int) { return s.PackFrom(ctx, nil) }

// PackFrom is Pack taking over prev's packed forms of the texts that did
// not change, by id: after an edit of one skill of a 10,000-skill library
// the others are not compressed again (~1 s of one core). A skill's text
// form is immutable, so two snapshots can share it.
func (s *Snapshot) PackFrom(ctx context.Context, prev *Snapshot) (saved int) {
	s.Fingerprint() // hashes every text: while it is at hand
	// The fastest level: packing 110 MB takes ~1 s of one core at it, and
	// better levels gain ~5%. The encoder (~4 MB of tables) lives for one
	// call.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(err)
	}
	defer enc.Close()
	var buf []byte
	for _, sk := range s.all {
		if ctx.Err() != nil {
			return saved
		}
		before := sk.text.Load()
		if prev == nil || !sk.adopt(prev.allByID[sk.ID]) {
			buf = sk.pack(enc, buf)
		}
		if after := sk.text.Load(); after != before {
			saved += len(before.content) - len(after.packed)
		}
	}
	return saved
}
