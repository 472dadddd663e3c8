package router

import (
	"hash/maphash"
	"strconv"
	"strings"

	"github.com/skillrouter/skillrouter/index"
	"github.com/skillrouter/skillrouter/internal/textcut"
)

// rankQuery is the text a conversation is ranked by: the latest user message
// at full weight and up to HistoryTurns earlier user turns at decaying
// weights. Only user turns count: the assistant's own words (and the skill
// bodies the rewrite injected) would pull ranking toward what is already
// loaded.
type rankQuery struct {
	latest string // latest user message, capped
	turns  []queryTurn
	terms  []index.Term // analysed, weighted, for bm25; see analysed
}

type queryTurn struct {
	text   string
	weight float64
}

// newRankQuery builds the query for msgs; strip, when set, removes mentions
// from the latest message's text before it is ranked by.
func newRankQuery(msgs []Message, o Options, strip func(string) string) rankQuery {
	var q rankQuery
	w := 1.0
	for i := len(msgs) - 1; i >= 0 && len(q.turns) <= max(o.HistoryTurns, 0); i-- {
		m := msgs[i]
		if m.Role != "user" || strings.TrimSpace(m.Text) == "" {
			continue
		}
		q.turns = append(q.turns, queryTurn{text: capText(m.Text, o.MaxQueryChars), weight: w})
		w *= o.HistoryDecay
	}
	if len(q.turns) == 0 {
		// No user text (a system-only or tool-only request): rank by the
		// last message with text, whoever wrote it.
		for i := len(msgs) - 1; i >= 0; i-- {
			if strings.TrimSpace(msgs[i].Text) != "" {
				q.turns = append(q.turns, queryTurn{text: capText(msgs[i].Text, o.MaxQueryChars), weight: 1})
				break
			}
		}
	}
	if len(q.turns) > 0 {
		q.latest = q.turns[0].text
		if strip != nil {
			q.turns[0].text = strip(q.turns[0].text)
		}
	}
	if len(q.turns) > 0 && codeWeight < 1 {
		// Code blocks and pasted logs in the latest message are context;
		// the ask is in the prose around them. Rank by the prose, with the
		// code as a lower-weight extra turn.
		if prose, code := splitCode(q.turns[0].text); code != "" && strings.TrimSpace(prose) != "" {
			w := q.turns[0].weight
			q.turns[0].text = prose
			q.turns = append(q.turns, queryTurn{text: code, weight: w * codeWeight})
		}
	}
	return q
}

// analysed returns the query's weighted terms for bm25, analysing the text
// on first use (a cached ranking never needs them) unless the embedder
// handed them over while embedding it (cosines, termEmbedder).
func (q *rankQuery) analysed() []index.Term {
	if q.terms == nil {
		q.terms = []index.Term{}
		for _, t := range q.turns {
			q.terms = index.QueryTerms(q.terms, t.text, t.weight)
		}
	}
	return q.terms
}

// key identifies the ranking of q under strategy: two queries with equal
// keys rank the library identically.
func (q *rankQuery) key(strategy Strategy) rankKey {
	var k rankKey
	for i, seed := range rankKeySeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		h.WriteString(string(strategy))
		h.WriteByte(0)
		h.WriteString(q.latest)
		for _, t := range q.turns {
			h.WriteByte(0)
			h.WriteString(strconv.FormatFloat(t.weight, 'g', -1, 64))
			h.WriteByte(0)
			h.WriteString(t.text)
		}
		k[i] = h.Sum64()
	}
	return k
}

// rankKey is 128 bits of two independently seeded hashes: collisions are
// not a practical concern.
type rankKey [2]uint64

var rankKeySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// codeWeight is the weight of code blocks relative to the prose of a message.
var codeWeight = 0.3

// splitCode separates fenced code blocks (```) from the rest of text.
func splitCode(text string) (prose, code string) {
	var p, c strings.Builder
	in := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if in {
			c.WriteString(line)
		} else {
			p.WriteString(line)
		}
	}
	return p.String(), c.String()
}

// capText keeps at most n bytes of s: three quarters from the start and a
// quarter from the end, cut at word boundaries — pasted logs put the error
// at the end, people put the question at the start or the end.
func capText(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	head := textcut.Prefix(s, n*3/4)
	if i := strings.LastIndexAny(head, " \n\t"); i > len(head)/2 {
		head = head[:i]
	}
	tail := s[len(s)-n/4:]
	for len(tail) > 0 && tail[0]&0xC0 == 0x80 {
		tail = tail[1:]
	}
	if i := strings.IndexAny(tail, " \n\t"); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	return head + "\n…\n" + tail
}

// texts returns the turn texts and their weights, latest first.
func (q rankQuery) texts() ([]string, []float64) {
	t := make([]string, len(q.turns))
	w := make([]float64, len(q.turns))
	for i, x := range q.turns {
		t[i], w[i] = x.text, x.weight
	}
	return t, w
}
