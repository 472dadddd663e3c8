package router

// Token counting for prompts. Catalogs are counted on every request and
// envelopes and tool definitions repeat whole, so counts go through the
// o200k_base counter's memo: a text made of lines seen before costs a hash
// per line rather than a BPE pass (about 45 MB/s).

import "github.com/skillrouter/skillrouter/tokens"

// countTokens returns tokens.Default().Count(s), memoised per chunk. Counts
// add up exactly over lines that start with visible text, such as catalog
// entries (see tokens.Counter.CountMemo).
func countTokens(s string) int { return tokens.Default().CountMemo(s) }
