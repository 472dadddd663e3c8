package router

import (
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/skillrouter/skillrouter/analysis"
	"github.com/skillrouter/skillrouter/index"
	"github.com/skillrouter/skillrouter/internal/textcut"
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

// signatureOf is the definition of a skill's signature; analyseLexical
// computes the same from the terms it shares with the BM25 analysis.
func signatureOf(s *skills.Skill) termSignature {
	return hashTerms(analysis.Terms(displayName(s) + "\n" + s.Description + "\n" + textcut.Prefix(s.Body(), dupBodyChars)))
}

// hashTerms is the signature of the terms of all parts: the distinct
// FNV-1a (32-bit) hashes, sorted.
func hashTerms(parts ...[]string) termSignature {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	sig := make(termSignature, 0, n)
	for _, p := range parts {
		for _, t := range p {
			h := uint32(2166136261)
			for i := 0; i < len(t); i++ {
				h ^= uint32(t[i])
				h *= 16777619
			}
			sig = append(sig, h)
		}
	}
	slices.Sort(sig)
	return slices.Clip(slices.Compact(sig))
}

// analyseLexical fills in, on every core, each skill's BM25 statistics
// (stats[i], kept when not nil) and near-duplicate signature (sigs[i],
// likewise), analysing its text once for both. The signature's terms (name,
// description, the first dupBodyChars of the body) are the statistics'
// first terms: the body is split at the last blank before the signature's
// end, and a word never spans a blank, so the terms before the split serve
// both and only the short stretch after it is analysed twice.
func analyseLexical(list []*skills.Skill, stats []*index.DocStats, sigs []termSignature) {
	var p index.BM25Params
	workers := max(1, min(runtime.GOMAXPROCS(0), len(list)/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var tc index.TermCounter
			var memo analysis.Memo
			var buf, tail []string
			for i := w; i < len(list); i += workers {
				if stats[i] != nil && sigs[i] != nil {
					continue
				}
				s := list[i]
				if stats[i] == nil {
					full := s.Body()
					body := p.BodyText(full)
					end := len(textcut.Prefix(full, dupBodyChars))
					split := max(0, strings.LastIndexAny(full[:min(end, len(body))], " \t\r\n"))
					var terms [index.NumFields][]string
					buf = memo.AppendTerms(buf[:0], displayName(s))
					nName := len(buf)
					buf = memo.AppendTerms(buf, s.Description)
					nDesc := len(buf)
					buf = memo.AppendTerms(buf, body[:split])
					nHead := len(buf)
					buf = memo.AppendTerms(buf, body[split:])
					terms[index.FieldName], terms[index.FieldDescription], terms[index.FieldBody] = buf[:nName], buf[nName:nDesc], buf[nDesc:]
					stats[i] = tc.Stats(&terms)
					if sigs[i] == nil {
						tail = memo.AppendTerms(tail[:0], full[split:end])
						sigs[i] = hashTerms(buf[:nHead], tail)
					}
					continue
				}
				sigs[i] = signatureOf(s)
			}
		})
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
