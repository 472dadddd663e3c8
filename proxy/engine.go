package proxy

import (
	"context"
	"encoding/json"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// Rewriter plans the rewrite of requests for one configuration (one A/B
// arm), on the API-neutral view of any client API. NewRewriter adapts a
// *router.Router; tests supply their own.
type Rewriter interface {
	// Rewrite plans what to add to a request. An error means the request is
	// forwarded unmodified and the client is told via X-Skillrouter-Error.
	Rewrite(ctx context.Context, req *wire.Request, ov router.Overrides) (*Rewrite, error)
	// Ready reports whether the library and its indexes are loaded.
	Ready() bool
}

// Rewrite is a planned rewrite plus what the tool loop needs.
type Rewrite struct {
	Plan        *wire.Plan // nil: the request goes upstream as it is
	Decision    *router.Decision
	Session     ToolSession // nil: nothing is answered server-side
	AddedTokens int
	// Prompt details what the rewrite added (for POST /v1/skills/route); optional.
	Prompt *router.PromptParts
	// Turn and Carried are router.Rewrite's: the conversation turn the
	// request is a step of ("" for none), the skills carried into it.
	Turn    string
	Carried []string
}

// ToolSession answers the proxy's own tool calls (load_skill, search_skills,
// tier-3 tools) across the rounds of one request. *router.Session satisfies it.
// What else the proxy reads of a session (the skills it loaded, the client
// tools it gated) are optional methods, found through wrappers that have
// Unwrap() ToolSession (see sessionAs), as errors.As finds an error.
type ToolSession interface {
	Handles(name string) bool
	Call(ctx context.Context, callID, name string, args json.RawMessage) wire.ToolResult
	// Tools is what the next round offers (see wire.ToolSet).
	Tools() wire.ToolSet
}

// sessionAs returns the first of s and the sessions it wraps that is a T. A
// wrapper (tracing's) that does not pass on an optional method would
// otherwise switch off what needs it: tracing on lost the turn memory.
func sessionAs[T any](s ToolSession) (T, bool) {
	for s != nil {
		if v, ok := s.(T); ok {
			return v, true
		}
		u, ok := s.(interface{ Unwrap() ToolSession })
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	var zero T
	return zero, false
}

// Library is the skill library behind the ops endpoints. *skills.Registry satisfies it.
type Library interface {
	Snapshot() *skills.Snapshot
	Reload(ctx context.Context) *skills.Snapshot
}

// NewRewriter adapts r with fixed rewrite options.
func NewRewriter(r *router.Router, opts router.RewriteOptions) Rewriter {
	return &routerRewriter{r: r, opts: opts}
}

type routerRewriter struct {
	r    *router.Router
	opts router.RewriteOptions
}

func (a *routerRewriter) Rewrite(ctx context.Context, req *wire.Request, ov router.Overrides) (*Rewrite, error) {
	rw, err := a.r.Rewrite(ctx, req, a.opts, ov)
	if err != nil {
		return nil, err
	}
	out := &Rewrite{Plan: rw.Plan, Decision: rw.Decision, AddedTokens: rw.AddedTokens, Prompt: rw.Prompt, Turn: rw.Turn, Carried: rw.Carried}
	// Keep a nil *Session from becoming a non-nil interface; a disabled
	// rewrite offers no tools, so its stream can be relayed untouched.
	if rw.Session != nil && !rw.Disabled {
		out.Session = rw.Session
	}
	return out, nil
}

func (a *routerRewriter) Ready() bool { return a.r.Ready() }

func (a *routerRewriter) Degraded() string { return a.r.Degraded() }

// Degraded asks rw why it ranks without its embedder
// (router.Router.Degraded), "" when it does not or cannot say: what
// /readyz lists, and what a wrapping Rewriter passes on.
func Degraded(rw Rewriter) string {
	if d, ok := rw.(interface{ Degraded() string }); ok {
		return d.Degraded()
	}
	return ""
}
