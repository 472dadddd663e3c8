package router

// Conversation-anchored catalog ranking. When the catalog is a relevance
// shortlist it lives in the system prompt, so re-ranking it on every turn
// would change the very start of the prompt and miss every upstream prompt
// cache. Instead the shortlist is ranked against the conversation's first
// user message, which never changes; the latest message still decides what
// is auto-loaded. Rankings are memoised per conversation so the shortlist
// stays byte-identical even when a later turn's ranking falls back to BM25.
// Measurements: docs/prompt-caching.md.

import (
	"context"
	"slices"
	"sync"

	"github.com/skillrouter/skillrouter/skills"
)

const anchorMax = 4096 // conversations a library remembers before its memo is cleared

type anchorKey struct {
	r        *Router
	strategy Strategy
	conv     string
}

// anchorMemo holds a library's conversation rankings. It belongs to the
// library (skillLib.anchors): a memo shared by all libraries, keyed by
// library, kept every library a conversation had been seen with, and all
// its skills and caches, alive until 4,096 conversations had passed (an
// edit's previous 10,000-skill library was ~50 MB of packed text alone).
// Each router's rankings are those of one of its indexes of the library
// (gen; routers, the A/B arms with an embedder of their own, count their
// builds apart): a settle builds the same library's index again as a
// fresh start would, and a ranking kept from the index before it would
// keep a conversation's shortlist different from another replica's on the
// same files.
type anchorMemo struct {
	mu   sync.Mutex
	gens map[*Router]uint64 // each router's index the rankings came from (rankIndex.gen)
	m    map[anchorKey][]string
}

// get returns k's ranking made with k.r's index gen.
func (a *anchorMemo) get(k anchorKey, gen uint64) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gens[k.r] != gen {
		return nil, false
	}
	ids, ok := a.m[k]
	return ids, ok
}

// put keeps k's ranking made with k.r's index gen; that router's newer
// index drops its older rankings, an older index's is not kept.
func (a *anchorMemo) put(k anchorKey, ids []string, gen uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil || len(a.m) >= anchorMax {
		a.m, a.gens = map[anchorKey][]string{}, map[*Router]uint64{}
	}
	switch had := a.gens[k.r]; {
	case gen < had:
		return
	case gen > had:
		for old := range a.m {
			if old.r == k.r {
				delete(a.m, old)
			}
		}
		a.gens[k.r] = gen
	}
	a.m[k] = ids
}

// catalogRanking returns the ranking a shortened catalog follows for msgs
// (see the file comment); dec is the decision for the latest message, routed
// with Query.Ranked depth. Memoised rankings are copies of their top only:
// sharing the ranking's own array kept a whole-library array alive per
// conversation. gen is the index of lib's own snapshot that ranked dec
// (servingIndex); while a reload's indexes are still building it is 0,
// and nothing is memoised, or the conversation would keep the old indexes'
// shortlist under the new library's key after they are in place.
func (r *Router) catalogRanking(ctx context.Context, lib *skillLib, msgs []Message, conv string, strategy Strategy, dec *Decision, o *RewriteOptions, depth int, gen uint64) rankingFunc {
	return func(deep bool) []string {
		latest := capRanking(rankedIDs(dec.Ranked))
		first, users := -1, 0
		for i, m := range msgs {
			if m.Role == "user" {
				if first < 0 {
					first = i
				}
				users++
			}
		}
		if o.CatalogPerTurn || users == 0 {
			if deep {
				latest = r.deeperRanking(ctx, lib, latest, Query{Messages: msgs, Strategy: strategy})
			}
			return latest
		}
		k := anchorKey{r: r, strategy: strategy, conv: conv}
		ids, ok := lib.anchors.get(k, gen)
		if !ok {
			ids = latest
			if users > 1 {
				ad := r.Route(ctx, Query{Messages: msgs[:first+1], Strategy: strategy, TopK: -1, Ranked: depth})
				ids = capRanking(rankedIDs(ad.Ranked))
			}
		}
		if deep {
			// The first user message ranks like the whole conversation
			// did when it was the only one (ranking reads user turns).
			ids = r.deeperRanking(ctx, lib, ids, Query{Messages: msgs[:first+1], Strategy: strategy})
		}
		if (!ok || deep) && gen != 0 {
			lib.anchors.put(k, ids, gen)
		}
		return ids
	}
}

// deeperRanking extends ids, the top of q's ranking, to catalogRankMax ids
// (fewer in a smaller library). ids stay first: a deeper ranking that fell
// back to bm25 where the first did not must not reorder what was shown.
func (r *Router) deeperRanking(ctx context.Context, lib *skillLib, ids []string, q Query) []string {
	if len(ids) >= min(catalogRankMax, len(lib.skills)) {
		return ids
	}
	q.TopK, q.Ranked = -1, catalogRankMax
	out := slices.Clone(ids)
	seen := make(map[string]bool, catalogRankMax)
	for _, id := range ids {
		seen[id] = true
	}
	for _, sc := range r.Route(ctx, q).Ranked {
		if !seen[sc.ID] {
			seen[sc.ID] = true
			out = append(out, sc.ID)
		}
	}
	return capRanking(out)
}

// servingIndex is the generation of the indexes in place when they were
// built from snap, else 0 (see catalogRanking). Called before routing: a
// newer index installed meanwhile is a newer generation still.
func (r *Router) servingIndex(snap *skills.Snapshot) uint64 {
	if ix := r.cur.Load(); ix != nil && ix.snap == snap {
		return ix.gen
	}
	return 0
}

// capRanking cuts ids to catalogRankMax, into a copy when it cuts (memoised
// rankings must not keep the rest alive).
func capRanking(ids []string) []string {
	if len(ids) > catalogRankMax {
		return slices.Clone(ids[:catalogRankMax])
	}
	return ids
}
