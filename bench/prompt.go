package bench

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
)

// Counts holds one token count per encoding, in the Accountant's order.
type Counts []int

// RouterTokens is the router's prompt cost for one query, split by part.
// Overhead is the chat format's framing of each message the rewrite adds
// (router.MessageOverheadTokens each, the same figure for every encoding).
type RouterTokens struct {
	Catalog, AutoLoaded, Tools Counts
	Overhead                   int
}

// Total returns catalog + auto-loaded + tools + overhead per encoding; for
// o200k_base it equals the rewrite's own AddedTokens.
func (r RouterTokens) Total() Counts {
	out := make(Counts, len(r.Catalog))
	for i := range out {
		out[i] = r.Catalog[i] + r.AutoLoaded[i] + r.Tools[i] + r.Overhead
	}
	return out
}

// Accountant counts prompt tokens with one or more encodings. Texts repeat a
// lot (the same catalog entries in every query's catalog, the same body
// whenever a skill is selected, most lines of a synthetic variant), so texts
// are counted line by line at cut points where the count of the whole equals
// the sum of the parts (see safeCut), and line counts are memoised by a hash
// of the line. Safe for concurrent use.
type Accountant struct {
	encs     []tokens.Encoding
	counters []*tokens.Counter
	seed     maphash.Seed
	mu       sync.Mutex
	memo     map[uint64][maxEncodings]int32
}

const (
	maxEncodings = 4
	// memoLimit bounds the memo (about 30 bytes an entry); when full it is
	// cleared rather than grown.
	memoLimit = 1 << 20
)

// NewAccountant returns an accountant for encs (the first is the primary).
func NewAccountant(encs ...tokens.Encoding) (*Accountant, error) {
	if len(encs) == 0 {
		encs = []tokens.Encoding{tokens.O200kBase}
	}
	if len(encs) > maxEncodings {
		return nil, fmt.Errorf("bench: at most %d encodings", maxEncodings)
	}
	a := &Accountant{encs: encs, seed: maphash.MakeSeed(), memo: map[uint64][maxEncodings]int32{}}
	seen := map[tokens.Encoding]bool{}
	for _, e := range encs {
		if seen[e] {
			return nil, fmt.Errorf("bench: encoding %s given twice", e)
		}
		seen[e] = true
		c, err := tokens.Get(e)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		a.counters = append(a.counters, c)
	}
	return a, nil
}

// Encodings returns the encodings counted, primary first.
func (a *Accountant) Encodings() []tokens.Encoding { return a.encs }

// Count returns the tokens of s under every encoding; equal to counting s
// whole with each encoding.
func (a *Accountant) Count(s string) Counts {
	out := make(Counts, len(a.counters))
	for len(s) > 0 {
		cut := safeCut(s)
		c := a.countChunk(s[:cut])
		for i := range out {
			out[i] += int(c[i])
		}
		s = s[cut:]
	}
	return out
}

func (a *Accountant) countChunk(s string) [maxEncodings]int32 {
	h := maphash.String(a.seed, s)
	a.mu.Lock()
	c, ok := a.memo[h]
	a.mu.Unlock()
	if ok {
		return c
	}
	for i, ctr := range a.counters {
		c[i] = int32(ctr.Count(s))
	}
	a.mu.Lock()
	if len(a.memo) >= memoLimit {
		clear(a.memo)
	}
	a.memo[h] = c
	a.mu.Unlock()
	return c
}

// safeCut returns the length of the first chunk of s: up to and including a
// newline after which the BPE pre-tokenizers of o200k_base and cl100k_base
// always start a new piece, or all of s. Such a newline is followed by a
// line that holds a visible ASCII character and does not start with '\r',
// '\n' or '/': no letter, number or punctuation piece starts with a newline;
// punctuation pieces end at the newlines that follow them ('/' too, in
// o200k_base); and a whitespace piece runs across a newline only into more
// whitespace ending in a newline, i.e. a blank line. BPE merges never cross
// pieces, so the count of s is the sum of the counts of its chunks;
// TestAccountantExact checks that against whole counts.
func safeCut(s string) int {
	off := 0
	for {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return len(s)
		}
		j := off + i + 1
		if j >= len(s) {
			return len(s)
		}
		if c := s[j]; c != '\r' && c != '\n' && c != '/' && visibleLine(s[j:]) {
			return j
		}
		off = j
	}
}

// visibleLine reports whether the line starting s holds a visible ASCII character.
func visibleLine(s string) bool {
	for i := 0; i < len(s) && s[i] != '\n'; i++ {
		if s[i] > ' ' && s[i] < 0x7f {
			return true
		}
	}
	return false
}

func (a *Accountant) sum(texts ...string) Counts {
	out := make(Counts, len(a.counters))
	for _, t := range texts {
		for i, n := range a.Count(t) {
			out[i] += n
		}
	}
	return out
}

// StuffAll is the cost of putting every skill in the prompt: the whole
// SKILL.md of every loaded skill, counted per skill and summed (joining them
// would add a separator token or two per skill).
func (a *Accountant) StuffAll(snap *skills.Snapshot) Counts {
	list := snap.Skills()
	texts := make([]string, len(list))
	for i, s := range list {
		texts[i] = s.Content
	}
	return a.sum(texts...)
}

// Router counts what the rewrite adds for one query: the catalog as shown,
// the auto-loaded envelopes and the tool definitions, with their texts
// counted here so every encoding is measured the same way.
func (a *Accountant) Router(p *router.PromptParts) RouterTokens {
	bodies := make([]string, len(p.Envelopes))
	for i, e := range p.Envelopes {
		bodies[i] = e.Text
	}
	tools := make([]string, len(p.Tools))
	for i, t := range p.Tools {
		tools[i] = string(t)
	}
	msgs := len(p.Envelopes)
	if p.CatalogNewSystem {
		msgs++
	}
	return RouterTokens{
		Catalog: a.Count(p.Catalog), AutoLoaded: a.sum(bodies...), Tools: a.sum(tools...),
		Overhead: msgs * router.MessageOverheadTokens,
	}
}
