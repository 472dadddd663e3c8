// Package tokens counts prompt tokens with a real BPE tokenizer, offline.
package tokens

import (
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Encoding names a tokenizer encoding.
type Encoding string

const (
	O200kBase  Encoding = "o200k_base" // GPT-4o family; the default
	Cl100kBase Encoding = "cl100k_base"
)

// Counter counts tokens in text. It is safe for concurrent use.
type Counter struct {
	enc Encoding
	// fast counts as tiktoken-go's codec does, ~5 times faster (bpe.go,
	// split.go); codec counts the encodings whose pre-tokenizer is not
	// written out. One of them is set.
	fast  *bpe
	codec tokenizer.Codec
	// chunked: the encoding's split pattern never joins pieces across the
	// cut points of chunkEnd, so CountMemo may count chunk by chunk.
	chunked bool
	memo    *memo
}

// pieces are the pre-tokenizers written out in split.go.
var pieces = map[Encoding]func(string) int{O200kBase: pieceO200k, Cl100kBase: pieceCl100k}

var (
	mu       sync.Mutex
	counters = map[Encoding]*Counter{}
)

// Get returns the shared counter for an encoding; codecs are loaded once
// because building the BPE tables is the expensive part.
func Get(enc Encoding) (*Counter, error) {
	if enc == "" {
		enc = O200kBase
	}
	mu.Lock()
	defer mu.Unlock()
	if c, ok := counters[enc]; ok {
		return c, nil
	}
	codec, err := tokenizer.Get(tokenizer.Encoding(enc))
	if err != nil {
		return nil, fmt.Errorf("tokens: encoding %q: %w", enc, err)
	}
	// The encodings whose split patterns are written out are the ones
	// chunkEnd's reasoning holds for.
	piece := pieces[enc]
	c := &Counter{enc: enc, chunked: piece != nil, memo: newMemo(memoMax)}
	if piece != nil {
		// The codec is dropped once its vocabulary is read: its regexp
		// and the reverse table Decode built are not needed again.
		if c.fast, err = newBPE(codec, piece); err != nil {
			return nil, err
		}
	} else {
		c.codec = codec
	}
	counters[enc] = c
	return c, nil
}

// Default returns the o200k_base counter. It is looked up once: hot paths
// call it on every count.
func Default() *Counter { return defaultCounter() }

var defaultCounter = sync.OnceValue(func() *Counter {
	c, err := Get(O200kBase)
	if err != nil {
		panic(err) // the encoding is compiled into the module; failure is a build defect
	}
	return c
})

// Encoding reports the counter's encoding.
func (c *Counter) Encoding() Encoding { return c.enc }

// Count returns the number of tokens in s. Invalid UTF-8 is counted as the
// tokenizer's replacement handling does rather than failing: a count is an
// estimate for budgets, never a reason to drop a request.
func (c *Counter) Count(s string) int {
	if c.fast != nil {
		return c.fast.count(s)
	}
	n, err := c.codec.Count(s)
	if err != nil {
		// Fall back to a conservative estimate (about 4 bytes a token).
		return (len(s) + 3) / 4
	}
	return n
}
