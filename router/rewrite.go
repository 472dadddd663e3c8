package router

// Rewriting a request: route the API-neutral view of it, plan the catalog,
// the auto-loaded envelopes and the server-side tools, and hand the plan
// (wire.Plan) to the client API's package, which splices it into the
// original bytes.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// Overrides are per-request settings (X-Skillrouter-* headers).
type Overrides struct {
	Strategy    Strategy
	TopK        *int // 0 = auto-load nothing (mentions still load)
	Disable     bool
	CatalogMode CatalogMode
	// Session names the conversation (X-Skillrouter-Session, else the
	// request's "user"). When set, the conversation id given to tier-3 tools
	// (and so the output directory) is derived from it together with the
	// conversation's opening, so two conversations that open alike but are
	// named differently do not share files. "" keeps the opening alone.
	Session string
	// Present lists skills the conversation holds already where the
	// request cannot show them: state stored upstream (Responses
	// previous_response_id, conversation), whose earlier turns the request
	// does not carry. They are not auto-loaded again, and count as active
	// (allowed-tools, tier-3 tools), as envelopes in the request would.
	Present []string
	// Carried looks up, by the turn's name (Rewrite.Turn), the skills the
	// model loaded with load_skill earlier in the turn a request continues,
	// whose bodies went only into a hidden round the client never kept:
	// they are loaded again, whatever their size, as mentions are, unless
	// the request shows them. nil: none are kept.
	Carried func(turn string) []string
}

// Rewrite is the plan for one request plus the state the tool loop needs.
type Rewrite struct {
	// Plan is what to add, for the request's API package to render; nil
	// when Disabled.
	Plan        *wire.Plan
	Decision    *Decision
	Session     *Session
	AddedTokens int // prompt tokens the rewrite adds (o200k_base; see PromptParts)

	Prompt   *PromptParts // what was added; nil when disabled
	Disabled bool         // X-Skillrouter-Disable: the request goes upstream unchanged

	// Turn names the conversation turn the request is a step of (""
	// without one: no user ask, state stored upstream); Carried are the
	// skills Overrides.Carried gave for it.
	Turn    string
	Carried []string
}

// Rewrite routes req and plans its rewrite. An error means the request
// could not be planned; the proxy then forwards it unmodified.
//
// The plan's catalog goes into the system prompt, each auto-loaded envelope
// after the last turn, load_skill, search_skills (when the catalog leaves
// skills out) and tier-3 tools after the client's tools (each API package
// says where exactly). When opts.Tools is a ToolGate, gated client tools no
// active skill enables are withheld (see ToolGate and docs/sandbox.md). With
// ov.Disable the request is not inspected.
func (r *Router) Rewrite(ctx context.Context, req *wire.Request, opts RewriteOptions, ov Overrides) (*Rewrite, error) {
	if r == nil {
		return nil, errors.New("router: nil Router")
	}
	if ov.Disable { // checked first: a disabled request is never inspected
		return &Rewrite{Decision: &Decision{}, Session: &Session{}, Disabled: true}, nil
	}
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	if ov.CatalogMode != "" {
		opts.CatalogMode = ov.CatalogMode
	}
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	snap := r.Snapshot()
	if snap == nil {
		return nil, errors.New("router: no skill library loaded")
	}
	depth := RankDepth(o)
	q := Query{Messages: req.Turns, Strategy: ov.Strategy, Ranked: depth}
	if ov.TopK != nil {
		q.TopK = *ov.TopK
		if q.TopK == 0 {
			q.TopK = -1 // an explicit 0 means none, not the default
		}
	}
	gen := r.servingIndex(snap)
	dec := r.Route(ctx, q)
	lib := libraryOf(snap)
	in := newPlanInput(snap, lib, dec, req)
	in.present = ov.Present
	turn, continues := turnKey(req, in.conv)
	if continues && ov.Carried != nil {
		in.carried = ov.Carried(turn)
	}
	in.ranking = r.catalogRanking(ctx, lib, req.Turns, in.conv, ov.Strategy, dec, &o, depth, gen)
	rw := finishRewrite(ctx, r, req, in, o, ov.Session)
	rw.Turn, rw.Carried = turn, in.carried
	return rw, nil
}

// RewriteWith is Rewrite with a given decision instead of routing: the pure
// core, for tests, benchmarks and callers that routed already. A nil dec
// means nothing selected; the catalog follows dec.Ranked. search answers
// search_skills (a *Router does; nil answers "unavailable").
func RewriteWith(ctx context.Context, req *wire.Request, snap *skills.Snapshot, dec *Decision, opts RewriteOptions, search Searcher) (*Rewrite, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	if dec == nil {
		dec = &Decision{}
	}
	in := newPlanInput(snap, libraryOf(snap), dec, req)
	in.ranking = func(bool) []string { return capRanking(rankedIDs(dec.Ranked)) }
	return finishRewrite(ctx, search, req, in, o, ""), nil
}

// checkRequest rejects what no plan can be made for. A request without a
// message is planned: a Responses turn may be a reusable prompt alone, an
// approval (mcp_approval_response) or a computer-use step's screenshot,
// with no text to rank on; it still gets the catalog (in library order) and
// the proxy's tools, which previous_response_id does not carry over.
func checkRequest(req *wire.Request) error {
	if req == nil {
		return errors.New("router: no request")
	}
	return nil
}

func newPlanInput(snap *skills.Snapshot, lib *skillLib, dec *Decision, req *wire.Request) planInput {
	names := make(map[string]bool, len(req.Tools))
	var foreign bool
	for _, t := range req.Tools {
		if t.Name != "" {
			names[t.Name] = true
		}
		if t.Name == ToolLoadSkill && !takesSkillID(t.Params) {
			foreign = true
		}
	}
	return planInput{snap: snap, lib: lib, dec: dec, msgs: req.Turns, conv: conversationID(req.Turns), clientNames: names,
		noTools: req.NoTools || req.ToolChoice.None || forbidsProxyTools(req.ToolChoice), foreignLoad: foreign}
}

// takesSkillID reports whether a client's load_skill is the proxy's, as
// `router skills catalog --tool` prints it or skillrouter's MCP server offers it:
// its parameters have a skill_id. The catalog's instructions to call
// load_skill with an id then hold for it; another tool of that name (the
// client's own, which the proxy never shadows) would get calls it cannot
// read.
func takesSkillID(params []byte) bool {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(params, &schema) != nil {
		return false
	}
	_, ok := schema.Properties["skill_id"]
	return ok
}

// forbidsProxyTools: a tool_choice that lists tools (a forced function or
// built-in tool, Anthropic's {"type":"tool"}, OpenAI's allowed_tools) lets
// the model call those alone, so the proxy's tools would never be called,
// and a catalog telling the model to call them would mislead it.
func forbidsProxyTools(tc wire.ToolChoice) bool {
	return tc.Restricts && !slices.Contains(tc.Named, ToolLoadSkill) && !slices.Contains(tc.Named, ToolSearchSkills)
}

// finishRewrite plans the additions and builds the session; search answers
// search_skills (nil: "unavailable"); session is Overrides.Session.
func finishRewrite(ctx context.Context, search Searcher, req *wire.Request, in planInput, o RewriteOptions, session string) *Rewrite {
	p, ts := planPrompt(ctx, in, &o)
	if session = strings.TrimSpace(session); session != "" {
		p.Conversation = namedConversationID(session, p.Conversation)
	}
	gate := newToolGate(&o, req, in.lib, p.Active)
	gate.record(p.Decision)
	toolsOK := !o.NoTools && !in.noTools
	sess := newSession(search, in.snap, in.lib, o, p, ts, toolsOK, in.clientNames)
	sess.remember(in.present, in.msgs)
	sess.gate = gate
	plan := &wire.Plan{
		Catalog:      p.Catalog,
		EnvelopeRole: o.AutoLoadRole,
		Tools:        wire.ToolSet{Withheld: gate.withheldIndexes(), Server: p.Tools},
	}
	if p.Catalog != "" {
		plan.CatalogJSON = p.catalogJSON
		if plan.CatalogJSON == nil {
			plan.CatalogJSON = in.lib.quote(p.Catalog)
		}
	}
	for _, e := range p.Envelopes {
		plan.Envelopes = append(plan.Envelopes, wire.Envelope{ID: e.ID, Text: e.Text, JSON: in.lib.envelopeJSON(e.ID, e.Text)})
	}
	plan.Changed = plan.Catalog != "" || len(plan.Envelopes) > 0 || len(plan.Tools.Server) > 0 || len(plan.Tools.Withheld) > 0
	return &Rewrite{Plan: plan, Decision: p.Decision, Session: sess, AddedTokens: p.AddedTokens, Prompt: p}
}
