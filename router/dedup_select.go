package router

import (
	"hash/fnv"
	"runtime"
	"slices"
	"sync"

	"github.com/skillrouter/skillrouter/analysis"
	"github.com/skillrouter/skillrouter/skills"
)

// Near-duplicate skills. Libraries that grow by forking hold several
// versions of one skill (vendored copies, "adapted for team X" rewrites);
// auto-loading two of them spends the body budget twice on the same
// instructions. A candidate whose vocabulary is nearly the same as an
// already selected skill's is skipped; the model still sees it in the
// catalog and can load it.
//
// The test is lexical (Jaccard overlap of the stemmed terms of name,
// description and the start of the body) so it means the same with every
// embedder and in the bm25 fallback. On the 407 real skills of the shared
// benchmark the highest overlap between two different skills is 0.52
// (median nearest other 0.22); reworded variants of one skill overlap
// 0.85 or more with it.
const (
	dupBodyChars = 3000
	dupOverlap   = 0.7
)

// termSignature is a skill's sorted, distinct term hashes.
type termSignature []uint32

func signatureOf(s *skills.Skill) termSignature {
	terms := analysis.Terms(displayName(s) + "\n" + s.Description + "\n" + truncateUTF8(s.Body, dupBodyChars))
	sig := make(termSignature, 0, len(terms))
	h := fnv.New32a()
	for _, t := range terms {
		h.Reset()
		h.Write([]byte(t))
		sig = append(sig, h.Sum32())
	}
	slices.Sort(sig)
	return slices.Clip(slices.Compact(sig))
}

// signatures returns the signature of every skill of list, on every core;
// known[i], when not nil, is skill i's (its text is unchanged). known may
// be nil.
func signatures(list []*skills.Skill, known []termSignature) []termSignature {
	sigs := make([]termSignature, len(list))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(list)/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(list); i += workers {
				if known != nil && known[i] != nil {
					sigs[i] = known[i]
					continue
				}
				sigs[i] = signatureOf(list[i])
			}
		}()
	}
	wg.Wait()
	// One array for all: the per-skill slices were made among the text
	// analysis' garbage, and left there they kept half-empty pages alive.
	total := 0
	for _, s := range sigs {
		total += len(s)
	}
	all := make([]uint32, 0, total)
	for i, s := range sigs {
		all = append(all, s...)
		sigs[i] = termSignature(all[len(all)-len(s) : len(all) : len(all)])
	}
	return sigs
}

// overlap is the Jaccard index of two signatures.
func overlap(a, b termSignature) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	i, j, both := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			both++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(both) / float64(len(a)+len(b)-both)
}
