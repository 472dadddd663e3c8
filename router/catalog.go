package router

// The tier-1 catalog: which skills it shows (mode), how long it may get
// (budget), and the note that points at the skills it leaves out.

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/skillrouter/skillrouter/skills"
)

// catalogRankMax bounds how much of a ranking the catalog follows; entries
// beyond it (only reachable with budgets of tens of thousands of tokens)
// follow in id order. Keeping it fixed keeps cached and fresh rankings
// rendering the same text.
const catalogRankMax = 512

// RankDepth is how many ranks (Query.Ranked) a rewrite with o asks for:
// about as many skills as a catalog shortlist of o's budget lists (entries
// cost 30 to 100 tokens; measured on the benchmark libraries the 1,500-token
// shortlist takes 14 to 30 ranks), at least rankDepthMin, at most
// catalogRankMax. The rare shortlist with room for more (short
// descriptions, skills it skips ranked high) ranks deeper then, so the
// catalog is always the one ranking the whole library gives.
func RankDepth(o RewriteOptions) int {
	if o.CatalogMode == CatalogAll {
		return rankDepthMin // the catalog does not follow the ranking
	}
	budget := o.CatalogBudgetTokens
	if budget <= 0 {
		budget = DefaultCatalogBudgetTokens
	}
	return min(max(rankDepthMin, budget/rankDepthTokens), catalogRankMax)
}

const (
	rankDepthMin    = 40
	rankDepthTokens = 32
)

// rankingFunc yields skill ids in relevance order for a catalog shortlist:
// the ranking the request was routed with, or, with deep, up to
// catalogRankMax of them, ranking deeper if it has to.
type rankingFunc func(deep bool) []string

// catalogResult is the catalog chosen for one request.
type catalogResult struct {
	text      string // "" when not even an empty catalog fits the budget
	json      []byte // text as a JSON string when assembled from quoted entries; nil: quote text
	tokens    int
	shown     []string // ids listed, in order
	hidden    int      // eligible skills not listed
	truncated bool     // descriptions were cut to the description limit
}

// catalogFooter is the one-line note after a catalog that leaves skills out.
func catalogFooter(hidden int, search bool) string {
	if hidden <= 0 {
		return ""
	}
	noun := "skills are"
	if hidden == 1 {
		noun = "skill is"
	}
	if !search {
		return strconv.Itoa(hidden) + " more " + noun + " not listed here."
	}
	return strconv.Itoa(hidden) + " more " + noun + " not listed here: call search_skills with a few words about the task to find them, then load_skill with the id."
}

// planCatalog chooses the catalog for a request. ranking yields skill ids in
// relevance order; it is called only when the catalog must be cut down.
// search says whether search_skills will be offered (the footer names it).
//
//   - all: every eligible skill, sorted by id, no budget (the user asked for it).
//   - enabled: opted-in and allowlisted skills; otherwise like auto.
//   - auto: the whole subset sorted by id when it fits the budget (the same
//     text on every request, so prompt caches hit); else with descriptions
//     truncated at a word boundary; else pinned and ranked entries first,
//     then the rest by id, as many as fit, and a footer counting the others.
//
// keep says whether the shortlist is kept for the next request with the
// same ranking (see shortlistMemo): callers say so when the ranking itself
// repeats.
func (l *skillLib) planCatalog(o *RewriteOptions, priority []string, ranking rankingFunc, search, keep bool) catalogResult {
	if len(l.eligible) == 0 {
		return catalogResult{} // nothing to offer: no catalog at all
	}
	prio := strings.Join(priority, "\x00")
	if o.CatalogMode == CatalogAll {
		opts := skills.CatalogOptions{Format: o.CatalogFormat, NoLoadTool: o.NoTools, Priority: priority}
		r := l.renderCached(catalogKey{format: o.CatalogFormat, noTool: o.NoTools, subset: "all", priority: prio}, l.eligible, opts)
		return catalogResult{text: r.text, tokens: r.tokens, shown: skillIDs(l.eligible)}
	}

	cands, candsAt, subset := l.eligible, l.eligibleAt, "auto"
	if o.CatalogMode == CatalogEnabled {
		allow := map[string]bool{}
		for _, id := range o.Allowlist {
			allow[id] = true
		}
		cands, candsAt = nil, nil
		for i, s := range l.eligible {
			if s.OptedIn() || allow[s.ID] {
				cands, candsAt = append(cands, s), append(candsAt, l.eligibleAt[i])
			}
		}
		subset = "enabled\x00" + strings.Join(o.Allowlist, "\x00")
	}
	budget := o.CatalogBudgetTokens

	// Whole subset, full then truncated descriptions. The sum of entry costs
	// rejects large libraries without rendering them.
	outside := len(l.eligible) - len(cands)
	footer := catalogFooter(outside, search)
	for _, maxDesc := range []int{0, o.DescriptionLimit} {
		opts := skills.CatalogOptions{Format: o.CatalogFormat, NoLoadTool: o.NoTools, Priority: priority, MaxDescription: maxDesc, Footer: footer}
		base := l.emptyCost(opts)
		if !l.entriesFit(candsAt, o.CatalogFormat, maxDesc, budget-base) {
			continue
		}
		k := catalogKey{format: o.CatalogFormat, noTool: o.NoTools, maxDesc: maxDesc, subset: subset, footer: footer, priority: prio}
		r := l.renderCached(k, cands, opts)
		if r.tokens <= budget {
			return catalogResult{text: r.text, tokens: r.tokens, shown: skillIDs(cands), hidden: outside, truncated: maxDesc > 0}
		}
	}

	// Shortlist: pinned, then ranked, then the rest by id, as long as
	// entries fit; one kept for the same ranking is used as it is. Only
	// what is taken is looked at: rankings can cover the whole library.
	// Skills are handled by position: seen and the subset are bitsets,
	// entries come from the lock-free table.
	rank := capRanking(ranking(false))
	maxDesc := o.DescriptionLimit
	var memo shortlistKey
	if keep { // a new ranking's key (its ids joined) is not worth making
		memo = shortlistKey{format: o.CatalogFormat, noTool: o.NoTools, maxDesc: maxDesc, budget: budget, search: search,
			subset: subset, priority: prio, rank: strings.Join(rank, "\x00")}
		if r, ok := l.shortlists.get(memo); ok {
			return r
		}
	}
	words := (len(l.skills) + 63) / 64
	var isCand []uint64 // nil: every eligible skill
	if o.CatalogMode == CatalogEnabled {
		isCand = make([]uint64, words)
		for _, k := range candsAt {
			isCand[k/64] |= 1 << (k % 64)
		}
	}
	inCands := func(k int32) bool {
		if isCand == nil {
			return !l.skills[k].Disabled()
		}
		return isCand[k/64]&(1<<(k%64)) != 0
	}
	deep := false // a deeper ranking was followed: not kept (its key would need it)
	table := l.entryTable(o.CatalogFormat, maxDesc)
	// Token counts add up exactly over catalog entries (each starts on its
	// own line; see countTokens), so the catalog's size is the empty
	// catalog's plus the entries' costs and only the chosen text is rendered.
	// Entries are taken against the longest footer any cut could need; the
	// real footer is then checked, dropping entries in the rare case it is
	// longer (singular/plural).
	emptyCost := func(hidden int) int {
		return l.emptyCost(skills.CatalogOptions{Format: o.CatalogFormat, NoLoadTool: o.NoTools, Priority: priority,
			MaxDescription: maxDesc, Footer: catalogFooter(hidden, search)})
	}
	used := emptyCost(len(l.eligible))
	var shown []int32
	costs := []int{0} // costs[n]: the first n entries
	seen := make([]uint64, words)
	considerAt := func(k int32) bool { // false once an entry does not fit
		if seen[k/64]&(1<<(k%64)) != 0 || !inCands(k) {
			return true
		}
		seen[k/64] |= 1 << (k % 64)
		c := l.entryAt(table, k).cost
		if used+c > budget {
			return false
		}
		used += c
		shown = append(shown, k)
		costs = append(costs, costs[len(costs)-1]+c)
		return true
	}
	consider := func(id string) bool {
		k, ok := l.at[id]
		return !ok || considerAt(k)
	}
	fits := true
	for _, ids := range [][]string{priority, rank} {
		for _, id := range ids {
			if fits = consider(id); !fits {
				break
			}
		}
		if !fits {
			break
		}
	}
	if fits && len(rank) < min(catalogRankMax, len(l.skills)) {
		// The ranking ran out with room left: follow a deeper one. Its
		// start is what was just taken, which consider skips.
		deep = true
		for _, id := range capRanking(ranking(true)) {
			if fits = consider(id); !fits {
				break
			}
		}
	}
	if fits {
		for _, k := range candsAt {
			if !considerAt(k) {
				break
			}
		}
	}
	for n := len(shown); n >= 0; n-- {
		hidden := len(l.eligible) - n
		if t := emptyCost(hidden) + costs[n]; t <= budget {
			list := shown[:n]
			text, quoted := l.renderCatalogAt(list, skills.CatalogOptions{Format: o.CatalogFormat, NoLoadTool: o.NoTools, Priority: priority,
				MaxDescription: maxDesc, Footer: catalogFooter(hidden, search)})
			ids := make([]string, len(list))
			for i, k := range list {
				ids[i] = l.skills[k].ID
			}
			r := catalogResult{text: text, json: quoted, tokens: t, shown: ids, hidden: hidden, truncated: maxDesc > 0}
			if keep && !deep {
				l.shortlists.put(memo, r)
			}
			return r
		}
	}
	return catalogResult{hidden: len(l.eligible)}
}

// shortlistKey is what a shortlist depends on besides the library: the
// options that shape it, the pinned ids and the ranking it follows.
type shortlistKey struct {
	format          skills.Format
	noTool, search  bool
	maxDesc, budget int
	subset          string // "auto", or "enabled" with the allowlist
	priority, rank  string // ids joined with NULs
}

// shortlistMemoMax bounds the shortlists a library keeps (each is a few KB
// of catalog text); past it the memo starts over.
const shortlistMemoMax = 256

// shortlistMemo holds recent shortlists, read without a lock. Results are
// shared: callers only read them (PromptParts.CatalogShown, the JSON text).
// Only shortlists of rankings that repeated are kept: one kept for every
// new query would cost each such request a store (a hash of the ranking,
// an entry) that nothing reads.
type shortlistMemo struct {
	m sync.Map // shortlistKey -> catalogResult
	n atomic.Int32
}

func (m *shortlistMemo) get(k shortlistKey) (catalogResult, bool) {
	v, ok := m.m.Load(k)
	if !ok {
		return catalogResult{}, false
	}
	return v.(catalogResult), true
}

func (m *shortlistMemo) put(k shortlistKey, r catalogResult) {
	if m.n.Add(1) > shortlistMemoMax {
		m.m.Clear()
		m.n.Store(1)
	}
	m.m.Store(k, r)
}

// entriesFit reports whether the entries of the skills at positions at
// cost at most room tokens, stopping as soon as they do not.
func (l *skillLib) entriesFit(at []int32, format skills.Format, maxDesc, room int) bool {
	if room < 0 {
		return false
	}
	t := l.entryTable(format, maxDesc)
	for _, k := range at {
		room -= l.entryAt(t, k).cost
		if room < 0 {
			return false
		}
	}
	return true
}

func skillIDs(list []*skills.Skill) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

// rankedIDs returns the ids of a ranking, in order.
func rankedIDs(r []Scored) []string {
	out := make([]string, 0, len(r))
	for _, s := range r {
		out = append(out, s.ID)
	}
	return slices.Clip(out)
}
