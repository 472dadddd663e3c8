package router

// Sessions outside a chat request: hosts that call the router's tools
// themselves (the MCP server) get the same answers as the proxy's tool loop,
// from the same code.

import (
	"context"

	"github.com/skillrouter/skillrouter/skills"
)

// SessionOptions configures NewSession.
type SessionOptions struct {
	Rewrite RewriteOptions // Tools (tier 3), DescriptionLimit; catalog settings do not apply
	// Conversation is the id passed to tier-3 tools (it keys their output
	// directory).
	Conversation string
	// Active are skill ids treated as loaded: tier-3 tools are offered for
	// them, and load_skill answers "already active" for them. Unknown ids
	// are ignored.
	Active []string
	// Search answers search_skills; nil means the Router itself.
	Search Searcher
}

// ResolveSkill finds the skill a tool call's skill argument names, by
// load_skill's rule (skills.SkillArg, then skills.Resolve: an id, a unique
// frontmatter name or id suffix), for tools answered without a Session.
func (r *Router) ResolveSkill(arg string) (*skills.Skill, bool) {
	want := skills.SkillArg(arg)
	if want == "" {
		return nil, false
	}
	return libraryOf(r.Snapshot()).resolve(want)
}

// NewSession returns a Session over the current snapshot that offers every
// router tool: load_skill (no id enum), search_skills, and the tier-3 tools
// opts.Rewrite.Tools offers for the active skills. It answers exactly as the
// Session of a rewritten request whose catalog left skills out would. An
// error means invalid rewrite options.
func (r *Router) NewSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	o, err := opts.Rewrite.normalized()
	if err != nil {
		return nil, err
	}
	var search Searcher = r
	if opts.Search != nil {
		search = opts.Search
	}
	snap := r.Snapshot()
	lib := libraryOf(snap)
	var active []string
	for _, id := range opts.Active {
		if _, ok := lib.skill(id); ok {
			active = append(active, id)
		}
	}
	ts := &serverTools{partial: true, extra: map[string]Tool{}}
	offerTools(ctx, ts, lib, &o, nil, active)
	p := &PromptParts{Conversation: opts.Conversation, Active: active}
	return newSession(search, snap, lib, o, p, ts, true, nil), nil
}
