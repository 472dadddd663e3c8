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
	"sync"
)

const anchorMax = 4096 // conversations remembered before the memo is cleared

type anchorKey struct {
	r        *Router
	lib      *skillLib
	strategy Strategy
	conv     string
}

var anchors = struct {
	sync.Mutex
	m map[anchorKey][]string
}{m: map[anchorKey][]string{}}

func anchorGet(k anchorKey) ([]string, bool) {
	anchors.Lock()
	defer anchors.Unlock()
	ids, ok := anchors.m[k]
	return ids, ok
}

func anchorPut(k anchorKey, ids []string) {
	anchors.Lock()
	defer anchors.Unlock()
	if len(anchors.m) >= anchorMax {
		anchors.m = map[anchorKey][]string{}
	}
	anchors.m[k] = ids
}

// catalogRanking returns the ranking a shortened catalog follows for msgs
// (see the file comment); dec is the decision for the latest message.
func (r *Router) catalogRanking(ctx context.Context, lib *skillLib, msgs []Message, strategy Strategy, dec *Decision, o *RewriteOptions) func() []string {
	return func() []string {
		latest := capRanking(rankedIDs(dec.Ranked))
		if o.CatalogPerTurn {
			return latest
		}
		first, users := -1, 0
		for i, m := range msgs {
			if m.Role == "user" {
				if first < 0 {
					first = i
				}
				users++
			}
		}
		if users == 0 {
			return latest
		}
		k := anchorKey{r: r, lib: lib, strategy: strategy, conv: conversationID(msgs)}
		if ids, ok := anchorGet(k); ok {
			return ids
		}
		ids := latest
		if users > 1 {
			ad := r.Route(ctx, Query{Messages: msgs[:first+1], Strategy: strategy, TopK: -1})
			ids = capRanking(rankedIDs(ad.Ranked))
		}
		anchorPut(k, ids)
		return ids
	}
}

func capRanking(ids []string) []string {
	if len(ids) > catalogRankMax {
		return ids[:catalogRankMax:catalogRankMax]
	}
	return ids
}
