package router

// The rewrite's core, free of JSON: given a routing decision, a library and
// the conversation, decide what to add (catalog, envelopes, tools) and what
// it costs in tokens. Rewrite turns the result into a wire.Plan that the
// client API's package renders; the benchmark calls Prompt to count the
// router's prompt tokens directly.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// MessageOverheadTokens is what a chat format spends on each added message
// besides its content (role and framing tokens, as in OpenAI's counting
// guide for the o200k models). AddedTokens includes it per added message.
const MessageOverheadTokens = 4

// Injection is one auto-loaded skill envelope.
type Injection struct {
	ID     string `json:"id"`
	Text   string `json:"-"`
	Tokens int    `json:"tokens"`
}

// PromptParts is everything a rewrite adds to a conversation, with token
// counts (o200k_base). AddedTokens = CatalogTokens + ToolTokens + the
// envelopes' tokens + MessageOverheadTokens per message added (each envelope,
// and the catalog when it needs a new system message).
type PromptParts struct {
	Decision     *Decision `json:"decision"` // Selected = ids auto-loaded here; Reasons says why others were not
	Conversation string    `json:"conversation"`

	Catalog       string `json:"catalog,omitempty"` // the catalog section ("" when none)
	CatalogTokens int    `json:"catalog_tokens"`
	// CatalogShown lists the ids shown, in catalog order. It is shared
	// with other requests that planned the same shortlist: read it, copy
	// it before changing it.
	CatalogShown     []string `json:"catalog_shown"`
	CatalogHidden    int      `json:"catalog_hidden"`
	CatalogTruncated bool     `json:"catalog_truncated,omitempty"`
	CatalogNewSystem bool     `json:"catalog_new_system,omitempty"` // no system/developer message to append to

	Envelopes []Injection `json:"envelopes"`
	Active    []string    `json:"active"` // skills whose envelope is in the conversation after the rewrite

	Tools      []wire.ToolSpec `json:"-"`          // server-side tools added, in order
	ToolNames  []string        `json:"tool_names"` // their names
	ToolTokens int             `json:"tool_tokens"`

	AddedTokens int `json:"added_tokens"`

	catalogJSON []byte // Catalog as a JSON string, when assembled quoted (nil: quote Catalog)
}

// planInput is what planPrompt needs besides the options.
type planInput struct {
	snap        *skills.Snapshot
	lib         *skillLib
	dec         *Decision
	msgs        []Message
	conv        string          // conversationID(msgs)
	ranking     rankingFunc     // catalog ranking; called only when the catalog must be cut
	clientNames map[string]bool // tool names the client defined (never shadowed)
	noTools     bool            // the request cannot take tools (legacy functions, tool_choice "none")
	foreignLoad bool            // the client has a load_skill of its own that takes no skill_id (see takesSkillID)
	present     []string        // skills held where msgs cannot show them (Overrides.Present)
	carried     []string        // skills loaded earlier in the turn, loaded again (Overrides.Carried's)
}

// serverTools is what the session needs to answer the offered tools.
type serverTools struct {
	specs   []wire.ToolSpec
	names   []string
	extra   map[string]Tool // tier-3 tools by name
	partial bool            // search_skills offered
}

// BuildPrompt computes what a rewrite adds for msgs under dec, without a
// request and without calling the ranking again: the pure core of Rewrite, for tests and benchmarks with hand-built decisions. A nil
// dec means nothing selected.
func BuildPrompt(ctx context.Context, snap *skills.Snapshot, dec *Decision, msgs []Message, opts RewriteOptions) (*PromptParts, error) {
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	if dec == nil {
		dec = &Decision{}
	}
	in := planInput{snap: snap, lib: libraryOf(snap), dec: dec, msgs: msgs, conv: conversationID(msgs)}
	in.ranking = func(bool) []string { return rankedIDs(dec.Ranked) }
	p, _ := planPrompt(ctx, in, &o)
	return p, nil
}

// Prompt routes q and returns what Rewrite would add to a request with
// these messages, with token counts; no JSON involved. The benchmark uses it
// to count the router's prompt tokens (AddedTokens) and to check which skills
// the model sees (CatalogShown, Envelopes).
func (r *Router) Prompt(ctx context.Context, q Query, opts RewriteOptions) (*PromptParts, error) {
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	snap := r.Snapshot()
	if snap == nil {
		return nil, errors.New("router: no skill library loaded")
	}
	if q.Ranked == 0 {
		q.Ranked = RankDepth(o)
	}
	gen := r.servingIndex(snap)
	dec := r.Route(ctx, q)
	lib := libraryOf(snap)
	in := planInput{snap: snap, lib: lib, dec: dec, msgs: q.Messages, conv: conversationID(q.Messages)}
	in.ranking = r.catalogRanking(ctx, lib, q.Messages, in.conv, q.Strategy, dec, &o, q.Ranked, gen)
	p, _ := planPrompt(ctx, in, &o)
	return p, nil
}

// planPrompt decides the additions. It never fails: unknown ids become Reasons.
func planPrompt(ctx context.Context, in planInput, o *RewriteOptions) (*PromptParts, *serverTools) {
	lib := in.lib
	d := *in.dec
	d.Reasons = maps.Clone(in.dec.Reasons)
	if d.Reasons == nil {
		d.Reasons = map[string]string{}
	}
	p := &PromptParts{Decision: &d, Conversation: in.conv}

	// Mentions name ids; resolve leniently (a mention may use the name).
	var pinned []string
	pinnedSet := map[string]bool{}
	for _, want := range in.dec.Pinned {
		s, ok := lib.resolve(want)
		if !ok {
			d.Reasons[want] = "mentioned but not in the library"
			continue
		}
		if !pinnedSet[s.ID] {
			pinnedSet[s.ID] = true
			pinned = append(pinned, s.ID)
		}
	}

	toolsOK := !o.NoTools && !in.noTools
	// search_skills' results are loaded with load_skill: without a
	// load_skill that takes their ids, neither is offered nor named.
	searchOK := toolsOK && !in.clientNames[ToolSearchSkills] && !in.foreignLoad
	co := o
	if (!toolsOK || in.foreignLoad) && !o.NoTools { // this request cannot take the tool (legacy functions, tool_choice "none", the client's own load_skill)
		c := *o
		c.NoTools = true
		co = &c
	}
	// A ranking from the cache is one a request asked for before (an
	// agent's tool loop repeats its turn): its shortlist is kept for the
	// next round.
	cat := lib.planCatalog(co, pinned, in.ranking, searchOK, in.dec.Cached)
	p.Catalog, p.CatalogTokens, p.CatalogShown, p.CatalogHidden, p.CatalogTruncated = cat.text, cat.tokens, cat.shown, cat.hidden, cat.truncated
	p.catalogJSON = cat.json
	if p.CatalogShown == nil {
		p.CatalogShown = []string{}
	}
	added := p.CatalogTokens
	if p.Catalog != "" && !hasSystem(in.msgs) {
		p.CatalogNewSystem = true
		added += MessageOverheadTokens
	}

	// Tier 2: pinned first, then the skills the model loaded earlier in the
	// turn (both forced, whatever their size), then the router's selection
	// within the auto-load budget; nothing already present.
	for _, id := range in.carried {
		if s, ok := lib.skill(id); ok && !pinnedSet[s.ID] {
			pinnedSet[s.ID] = true
			pinned = append(pinned, s.ID)
		}
	}
	present := map[string]bool{}
	for _, id := range append(envelopesIn(in.msgs), in.present...) {
		if s, ok := lib.skill(id); ok && !present[id] {
			present[id] = true
			p.Active = append(p.Active, s.ID)
		}
	}
	selected := []string{} // as Route leaves it: JSON says [], not null
	used := 0
	injected := map[string]bool{}
	candidates := append(append([]string{}, pinned...), in.dec.Selected...)
	var overBudget []string // picks left out for the auto-load budget
	for _, id := range candidates {
		if injected[id] {
			continue
		}
		s, ok := lib.skill(id)
		switch {
		case !ok:
			d.Reasons[id] = "not in the library"
			continue
		case present[id]:
			d.Reasons[id] = "already in the conversation"
			continue
		case s.Disabled() && !pinnedSet[id]:
			d.Reasons[id] = "disabled in its frontmatter (enabled: false)"
			continue
		}
		env := lib.envelope(s)
		if !pinnedSet[id] && used+env.tokens > o.AutoLoadBudgetTokens {
			overBudget = append(overBudget, id)
			if env.tokens > o.AutoLoadBudgetTokens {
				d.Reasons[id] = fmt.Sprintf("body is %d tokens, over the auto-load budget of %d; the model can still load it", env.tokens, o.AutoLoadBudgetTokens)
			} else {
				d.Reasons[id] = fmt.Sprintf("body is %d tokens and only %d of the auto-load budget of %d are left; the model can still load it", env.tokens, o.AutoLoadBudgetTokens-used, o.AutoLoadBudgetTokens)
			}
			continue
		}
		used += env.tokens
		injected[id] = true
		delete(d.Reasons, id)
		selected = append(selected, id)
		p.Envelopes = append(p.Envelopes, Injection{ID: id, Text: env.text, Tokens: env.tokens})
		p.Active = append(p.Active, id)
		added += env.tokens + MessageOverheadTokens
	}
	d.Selected = selected
	if len(overBudget) > 0 {
		// max_auto_load counted the picks before the budget left some out:
		// say so, or the reason contradicts the loads ("2 reached", one
		// loaded).
		for id, r := range d.Reasons {
			if strings.HasPrefix(r, maxAutoLoadPrefix) {
				d.Reasons[id] = r + ", counting " + strings.Join(overBudget, ", ") + ", then left out for the auto-load budget"
			}
		}
	}
	if len(d.Reasons) == 0 {
		d.Reasons = nil
	}
	if p.Envelopes == nil {
		p.Envelopes = []Injection{}
	}
	if p.Active == nil {
		p.Active = []string{}
	}

	ts := &serverTools{extra: map[string]Tool{}}
	if toolsOK {
		ts.partial = searchOK && cat.hidden > 0
		offerTools(ctx, ts, lib, o, in.clientNames, p.Active)
	}
	p.Tools, p.ToolNames = ts.specs, ts.names
	if p.ToolNames == nil {
		p.ToolNames = []string{}
	}
	for _, spec := range ts.specs {
		p.ToolTokens += countTokens(string(spec.FunctionJSON()))
	}
	added += p.ToolTokens
	p.AddedTokens = added
	return p, ts
}

// offerTools fills ts with the tools to offer for the active skills:
// load_skill, search_skills when the catalog is partial, then tier-3 tools.
// A tool whose name the client already uses is not offered (the client's
// tool wins and its calls go back to the client).
func offerTools(ctx context.Context, ts *serverTools, lib *skillLib, o *RewriteOptions, client map[string]bool, active []string) {
	ts.specs, ts.names, ts.extra = nil, nil, map[string]Tool{}
	taken := maps.Clone(client)
	if taken == nil {
		taken = map[string]bool{}
	}
	offer := func(spec wire.ToolSpec) {
		ts.specs = append(ts.specs, spec)
		ts.names = append(ts.names, spec.Name)
		taken[spec.Name] = true
	}
	if len(lib.skills) > 0 && !taken[ToolLoadSkill] {
		offer(lib.loadSkillSpec(ts.partial))
	}
	if ts.partial && !taken[ToolSearchSkills] {
		offer(searchSkillsSpec)
	}
	if o.Tools == nil || len(active) == 0 {
		return
	}
	var act []*skills.Skill
	for _, id := range active {
		if s, ok := lib.skill(id); ok {
			act = append(act, s)
		}
	}
	for _, t := range o.Tools.Tools(ctx, act) {
		if t == nil {
			continue
		}
		spec := t.Spec()
		if spec.Name == "" || spec.Name != t.Name() || taken[spec.Name] || !json.Valid(spec.Parameters) {
			continue
		}
		offer(spec)
		ts.extra[spec.Name] = t
	}
}

// conversationID is a stable id of a conversation: a digest of its first
// system (or developer) message and its first user message, which stay the
// same on every turn.
func conversationID(msgs []Message) string {
	h := sha256.New()
	var sys, user bool
	var b []byte
	nul := []byte{0}
	part := func(role, text string) { // as fmt's "ROLE\x00%d\x00%s\x00" wrote it
		b = append(b[:0], role...)
		b = append(b, 0)
		b = strconv.AppendInt(b, int64(len(text)), 10)
		b = append(b, 0)
		h.Write(b)
		io.WriteString(h, text)
		h.Write(nul)
	}
	for _, m := range msgs {
		switch {
		case !sys && (m.Role == "system" || m.Role == "developer"):
			sys = true
			part("system", m.Text)
		case !user && m.Role == "user":
			user = true
			part("user", m.Text)
		}
		if sys && user {
			break
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func hasSystem(msgs []Message) bool {
	for _, m := range msgs {
		if m.Role == "system" || m.Role == "developer" {
			return true
		}
	}
	return false
}
