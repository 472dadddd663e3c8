package skills

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/skillrouter/skillrouter/internal/editdistance"
	"github.com/skillrouter/skillrouter/internal/textcut"
	"github.com/skillrouter/skillrouter/wire"
)

// MaxSuggestions is how many close ids NotFound offers.
const MaxSuggestions = 3

// maxSharing is how many of the skills that share a name NotFound lists.
const maxSharing = 10

// NotFound renders the structured result for an unknown id, with up to 3
// close ids; search says whether search_skills is offered beside load_skill
// (the next step names it only then). A long id is quoted cut
// (wire.Clip).
func NotFound(id string, snap *Snapshot, search bool) string {
	shown := wire.Clip(id) // a model's junk id is not echoed whole, twice
	var b strings.Builder
	b.WriteString(`<skill_error id="`)
	b.WriteString(escapeAttr(shown))
	b.WriteString("\" reason=\"not_found\">\n  <message>The skill \"")
	b.WriteString(escapeText(shown))
	b.WriteString("\" is unavailable: ")
	shared, byName := snap.Sharing(id)
	switch sk, ok := lookup(snap, id); {
	case ok && sk.Skipped:
		b.WriteString("it has errors and was not loaded.")
	case len(shared) > 0 && byName:
		fmt.Fprintf(&b, "%d skills have this name; name one by its id.", len(shared))
	case len(shared) > 0:
		fmt.Fprintf(&b, "%d skill ids end in it; name one by its whole id.", len(shared))
	default:
		b.WriteString("no skill has this id.")
	}
	b.WriteString("</message>\n")
	var sugg []string
	switch {
	case len(shared) > 0:
		sugg = shared[:min(len(shared), maxSharing)]
	case snap != nil:
		sugg = Suggest(id, snap.loaded, MaxSuggestions)
	}
	if len(sugg) > 0 {
		b.WriteString("  <did_you_mean>\n")
		for _, s := range sugg {
			b.WriteString("    <id>")
			b.WriteString(escapeText(s))
			b.WriteString("</id>\n")
		}
		b.WriteString("  </did_you_mean>\n  <next_step>Call load_skill again with one of the ids above if it fits the request; otherwise continue without a skill.</next_step>\n")
	} else {
		b.WriteString("  <next_step>Use only ids listed in <available_skills>")
		if search {
			b.WriteString(" or found with search_skills")
		}
		b.WriteString(", or continue without a skill.</next_step>\n")
	}
	b.WriteString("</skill_error>")
	return b.String()
}

func lookup(snap *Snapshot, id string) (*Skill, bool) {
	if snap == nil {
		return nil, false
	}
	return snap.Lookup(id)
}

// Suggest returns up to n ids from list close to the (unknown) id, best
// first. Close means, in this order of preference: equal ignoring case, the
// same last path element or frontmatter name ("mcp-builder" →
// "anthropics/mcp-builder"), a prefix of either, all the query's words
// ("csv-profiling" → "csv-data-profiling"), then a small edit distance.
func Suggest(id string, list []*Skill, n int) []string {
	q := normalizeID(id)
	if q == "" || n <= 0 {
		return nil
	}
	qLast := path.Base(q)
	qWords := words(q)
	maxDist := max(1, utf8.RuneCountInString(qLast)/3)
	type cand struct {
		id    string
		tier  int
		score int
	}
	var cands []cand
	for _, s := range list {
		cid := NormalizeName(strings.ToLower(s.ID))
		last := path.Base(cid)
		name := NormalizeName(strings.ToLower(s.Name))
		c := cand{id: s.ID, tier: -1}
		switch {
		case cid == q:
			c.tier = 0
		case last == qLast || name == qLast || last == q || name == q:
			c.tier = 1
		case hasPrefix(cid, q) || hasPrefix(last, qLast) || hasPrefix(qLast, last) || hasPrefix(name, qLast):
			c.tier = 2
			c.score = abs(len(last) - len(qLast))
		case len(qWords) >= 2 && (containsWords(words(cid), qWords) || containsWords(words(name), qWords)):
			c.tier = 3
			c.score = len(words(cid)) - len(qWords)
		default:
			d := min(editdistance.Of(q, cid), editdistance.Of(qLast, last))
			if name != "" {
				d = min(d, editdistance.Of(qLast, name))
			}
			if d <= maxDist {
				c.tier, c.score = 4, d
			}
		}
		if c.tier >= 0 {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.tier, b.tier), cmp.Compare(a.score, b.score), cmp.Compare(a.id, b.id))
	})
	out := make([]string, 0, min(n, len(cands)))
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.id)
	}
	return out
}

// words splits an id or name into its words (on / - _ . and spaces).
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '-' || r == '_' || r == '.' || r == ' ' })
}

// containsWords reports whether every word of want occurs in have.
func containsWords(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// normalizeID forgives what models commonly get wrong in an id: case,
// Unicode normalisation, surrounding slashes or whitespace, and a trailing
// /SKILL.md.
func normalizeID(id string) string {
	if len(id) > 1024 {
		id = id[:1024] // bounds normalisation work for junk input
	}
	id = NormalizeName(strings.ToLower(strings.TrimSpace(id)))
	id = strings.TrimSuffix(id, "/skill.md")
	id = strings.Trim(id, "/")
	// bounds edit-distance work for junk input
	return textcut.Prefix(id, 256)
}

// minPrefix is the shortest text that may match by prefix; shorter ones
// would "match" half the library.
const minPrefix = 3

func hasPrefix(s, prefix string) bool {
	return len(prefix) >= minPrefix && strings.HasPrefix(s, prefix)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
