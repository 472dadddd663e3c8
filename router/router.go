// Package router ranks a skill library against a conversation and plans
// what to add to the request: the catalog for the system prompt, auto-loaded
// skill bodies for the end, and server-side tools (load_skill,
// search_skills, tier-3 tools) for the proxy's tool loop, with which client
// tools to gate. It works on the API-neutral view of package wire and never
// sees any API's JSON: the wire/* packages parse requests and render plans.
package router

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// Embedder turns texts into unit-length vectors. Providers live in package embed.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Name() string    // provider: builtin, ollama, openai
	Model() string   // model name (for the builtin, includes a fingerprint of its fitted state)
	Dimensions() int // 0 when not known before the first call
}

// Strategy names a ranking strategy.
type Strategy string

const (
	StrategyKeyword   Strategy = "keyword"
	StrategyBM25      Strategy = "bm25"
	StrategyEmbedding Strategy = "embedding"
	StrategyHybrid    Strategy = "hybrid"
)

// Strategies lists every strategy, in benchmark order.
var Strategies = []Strategy{StrategyKeyword, StrategyBM25, StrategyEmbedding, StrategyHybrid}

// UsesEmbedder reports whether strategy s ranks with the embedder (keyword
// and bm25 do not).
func UsesEmbedder(s Strategy) bool { return s == StrategyEmbedding || s == StrategyHybrid }

// Scored is one ranked skill with its fused score and per-component scores
// ("bm25", "bm25_norm", "cosine", "confidence", "keyword").
type Scored struct {
	ID         string     `json:"id"`
	Score      float64    `json:"score"`
	Components Components `json:"components,omitzero"`
}

// Message is the text-only view of one message the router ranks from
// (text parts joined; images dropped), as every API package parses it.
type Message = wire.Turn

// Query asks for a routing decision. Zero fields take the Router's defaults.
type Query struct {
	Messages []Message
	Strategy Strategy
	TopK     int // max skills to auto-load; 0 = default, <0 = none
	// Ranked is how many of the best-ranked skills Decision.Ranked lists
	// besides the pinned ones (at least what selection looks at); 0 lists
	// the whole library. Ranking only the top costs a fraction of ranking
	// everything in a large library: the proxy asks for what its catalog
	// can show (see RankDepth).
	Ranked int
}

// Decision is what the router decided for one query.
type Decision struct {
	Query          string            `json:"query"`
	Strategy       Strategy          `json:"strategy"`
	Embedder       string            `json:"embedder"` // that the strategy ranks with ("" for keyword and bm25); after a fallback, the one that failed
	Fallback       bool              `json:"fallback"`
	FallbackReason string            `json:"fallback_reason,omitempty"`
	FallbackCode   FallbackCode      `json:"fallback_code,omitempty"` // FallbackReason's short form, safe to show clients
	Ranked         []Scored          `json:"ranked"`                  // best first: the top Query.Ranked (and pinned) skills, all when 0
	Selected       []string          `json:"selected"`
	Pinned         []string          `json:"pinned,omitempty"`  // #id / /id mentions, in order
	Reasons        map[string]string `json:"reasons,omitempty"` // id -> why it was not auto-loaded
	Cached         bool              `json:"cached,omitempty"`  // the ranking came from the index's cache of recent rankings
	Latency        time.Duration     `json:"-"`

	// Client tools gated by exec.allowed_tools (see ToolGate), as rewritten:
	// withheld from the request, kept because an active skill's
	// allowed-tools enables them (tool -> skill id), or kept because
	// tool_choice names or requires them. Empty unless a client tool is gated.
	ToolsWithheld []string          `json:"tools_withheld,omitempty"`
	ToolsEnabled  map[string]string `json:"tools_enabled,omitempty"`
	ToolsForced   []string          `json:"tools_forced,omitempty"`
}

// FallbackCode is the short, stable form of why a decision fell back to
// bm25. Unlike Decision.FallbackReason, which carries the details for logs
// (embedder URLs, error text), it is fit for clients and metric labels.
type FallbackCode string

const (
	FallbackNoIndex             FallbackCode = "no_index"                 // the router has no index
	FallbackNoEmbedder          FallbackCode = "no_embedder"              // the strategy needs an embedder; none is configured
	FallbackVectorsUnavailable  FallbackCode = "vector_index_unavailable" // the library's vectors could not be built (retried in the background)
	FallbackEmbedderTimeout     FallbackCode = "embedder_timeout"         // embedding the query exceeded the latency budget
	FallbackEmbedderUnavailable FallbackCode = "embedder_unavailable"     // the embedder failed to embed the query
	FallbackVectorQuery         FallbackCode = "vector_query_failed"      // the vector index could not be searched
)

// FallbackCodes lists every FallbackCode.
var FallbackCodes = []FallbackCode{FallbackNoIndex, FallbackNoEmbedder, FallbackVectorsUnavailable,
	FallbackEmbedderTimeout, FallbackEmbedderUnavailable, FallbackVectorQuery}

// Tool is a tool answered server-side by the proxy's tool loop.
type Tool interface {
	Name() string
	Spec() wire.ToolSpec // rendered by each API package in its own shape
	Call(ctx context.Context, call ToolCall) (string, error)
}

// ToolCall carries one call's arguments and the conversation it belongs to.
type ToolCall struct {
	Conversation string          // stable id of the conversation (hash of its first messages)
	Arguments    json.RawMessage // the JSON arguments the model sent
}

// ToolProvider offers extra server-side tools for the active skills of a
// request (tier 3: package sandbox).
type ToolProvider interface {
	Tools(ctx context.Context, active []*skills.Skill) []Tool
}
