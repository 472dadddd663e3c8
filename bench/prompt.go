package bench

import (
	"fmt"

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
// whenever a skill is selected, most lines of a synthetic variant), so counts
// go through each encoding's memo (tokens.Counter.CountMemo), which stays
// exact. Safe for concurrent use.
type Accountant struct {
	encs     []tokens.Encoding
	counters []*tokens.Counter
}

// NewAccountant returns an accountant for encs (the first is the primary).
func NewAccountant(encs ...tokens.Encoding) (*Accountant, error) {
	if len(encs) == 0 {
		encs = []tokens.Encoding{tokens.O200kBase}
	}
	a := &Accountant{encs: encs}
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
	for i, c := range a.counters {
		out[i] = c.CountMemo(s)
	}
	return out
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
		texts[i] = s.Content()
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
		tools[i] = string(t.FunctionJSON())
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
