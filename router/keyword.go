package router

import (
	"sort"
	"strings"
	"sync"

	"github.com/skillrouter/skillrouter/analysis"
	"github.com/skillrouter/skillrouter/skills"
)

// keywordIndex is the naive baseline of the Lazy Skills design, kept for A/B
// comparison: a skill is relevant when its name, or a keyword of its
// description, occurs in the message. Words are matched as written
// (lowercased, no stemming, no weighting by rarity): exactly what the
// baseline does, and what bm25 improves on.
//
// Few deployments rank with it, so it is built on first use: at 10,000
// skills it is tens of thousands of small objects the collector would
// otherwise walk on every cycle.
type keywordIndex struct {
	list     []*skills.Skill
	once     sync.Once
	names    []string         // per skill: lowercase name as words ("mcp builder")
	keywords map[string][]int // description keyword -> skills having it
}

// keywordNameScore is what a name match is worth against keyword matches:
// a name match alone is enough to select.
const keywordNameScore = 2

func newKeywordIndex(list []*skills.Skill) *keywordIndex {
	return &keywordIndex{list: list}
}

func (k *keywordIndex) build() {
	list := k.list
	k.names, k.keywords = make([]string, len(list)), map[string][]int{}
	for i, s := range list {
		k.names[i] = strings.Join(analysis.Words(s.Name), " ")
		seen := map[string]bool{}
		for _, w := range analysis.Words(s.Description) {
			if len(w) < 3 || analysis.IsStopWord(w) || seen[w] {
				continue
			}
			seen[w] = true
			k.keywords[w] = append(k.keywords[w], i)
		}
	}
}

// score returns per-skill scores: keywordNameScore for a name occurring in
// the text, plus one per distinct description keyword occurring in it.
func (k *keywordIndex) score(text string, scores []float64) {
	k.once.Do(k.build)
	words := analysis.Words(text)
	padded := " " + strings.Join(words, " ") + " "
	for i, n := range k.names {
		if n != "" && strings.Contains(padded, " "+n+" ") {
			scores[i] += keywordNameScore
		}
	}
	uniq := map[string]bool{}
	for _, w := range words {
		uniq[w] = true
	}
	ws := make([]string, 0, len(uniq))
	for w := range uniq {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	for _, w := range ws {
		for _, i := range k.keywords[w] {
			scores[i]++
		}
	}
}
