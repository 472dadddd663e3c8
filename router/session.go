package router

// Session answers the server-side tool calls of one request across the
// proxy's tool-loop rounds: load_skill, search_skills and tier-3 tools.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// searcher ranks the whole library for search_skills (*Router does).
type Searcher interface {
	Search(ctx context.Context, query string, limit int) []Scored
}

// Session answers server-side tool calls for one request across tool-loop
// rounds. It is safe for concurrent use. The zero Session answers nothing.
type Session struct {
	mu           sync.Mutex
	search       Searcher
	snap         *skills.Snapshot
	lib          *skillLib
	opts         RewriteOptions
	conversation string

	toolsOK     bool // tools may be added to the request
	clientNames map[string]bool
	gate        *toolGate       // gated client tools (nil: none); withheld ones return when a skill enables them
	tools       *serverTools    // what the next round offers
	toolsGen    int             // activation count tools was computed for
	offered     map[string]bool // every tool name offered in any round
	active      []string        // skills whose envelope is in the conversation
	activeSet   map[string]bool
	// remembered are active skills known only from state stored upstream
	// (Overrides.Present), whose bodies the request does not show: a
	// load_skill of one answers with the body (the upstream may have
	// truncated it away), once.
	remembered map[string]bool
	loaded     []string       // skills loaded by load_skill in this session
	calls      map[string]int // calls answered, by tool name
}

// ToolResult is the answer to one server-side tool call.
type ToolResult = wire.ToolResult

func newSession(s Searcher, snap *skills.Snapshot, lib *skillLib, o RewriteOptions, p *PromptParts, ts *serverTools, toolsOK bool, clientNames map[string]bool) *Session {
	sess := &Session{
		search: s, snap: snap, lib: lib, opts: o, conversation: p.Conversation,
		toolsOK: toolsOK, clientNames: clientNames,
		tools: ts, offered: map[string]bool{}, activeSet: map[string]bool{},
		calls: map[string]int{},
	}
	for _, n := range ts.names {
		sess.offered[n] = true
	}
	for _, id := range p.Active {
		sess.activate(id)
	}
	sess.toolsGen = len(sess.active)
	return sess
}

// remember marks the present skills msgs do not show as remembered.
func (s *Session) remember(present []string, msgs []Message) {
	if len(present) == 0 {
		return
	}
	shown := envelopesIn(msgs)
	for _, id := range present {
		if s.activeSet[id] && !slices.Contains(shown, id) {
			if s.remembered == nil {
				s.remembered = map[string]bool{}
			}
			s.remembered[id] = true
		}
	}
}

func (s *Session) activate(id string) {
	if !s.activeSet[id] {
		s.activeSet[id] = true
		s.active = append(s.active, id)
	}
}

// Handles reports whether a tool name is answered server-side: true only for
// the tools this session offered.
func (s *Session) Handles(name string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	offered := s.offered[name]
	s.mu.Unlock()
	if offered {
		return true
	}
	_, disabled := s.disabledCall(name)
	return disabled
}

// Offers reports whether the session offered name to the model (Handles
// also covers tools it answers without offering them).
func (s *Session) Offers(name string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offered[name]
}

// disabledCaller is implemented by tool providers (package sandbox) whose
// tools exist but are switched off: their calls get a clear "disabled"
// result from the proxy instead of leaking to the client as unknown tools.
type disabledCaller interface {
	DisabledCall(name string) (string, bool)
}

// disabledCall is the answer to a call of the provider's tool name that
// the session did not offer, when the provider gives one; never for a name
// the client's own tool has (a client tool is never shadowed).
func (s *Session) disabledCall(name string) (string, bool) {
	if s.clientNames[name] {
		return "", false
	}
	if d, ok := s.opts.Tools.(disabledCaller); ok && d != nil {
		return d.DisabledCall(name)
	}
	return "", false
}

// Conversation is the stable conversation id passed to tier-3 tools.
func (s *Session) Conversation() string {
	if s == nil {
		return ""
	}
	return s.conversation
}

// Active returns the skills active in the conversation: envelopes present in
// the request, auto-loaded, or loaded by load_skill in this session.
func (s *Session) Active() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.active)
}

// WithheldTools returns the gated client tools currently withheld from the
// upstream request, in the client's order (see ToolGate); nil when none.
func (s *Session) WithheldTools() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gate.withheld()
}

// EnabledTools maps each gated client tool an active skill enabled (at the
// rewrite or by a load_skill since) to that skill; nil when none.
func (s *Session) EnabledTools() map[string]string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gate.enabled()
}

// Loaded returns the skills the model loaded with load_skill in this session.
func (s *Session) Loaded() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.loaded)
}

// ToolCalls returns how many calls were answered, by tool name.
func (s *Session) ToolCalls() map[string]int {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// Call answers one call; failures become structured results, never errors.
func (s *Session) Call(ctx context.Context, callID, name string, args json.RawMessage) ToolResult {
	res := s.call(ctx, callID, name, args)
	res.Failed = ToolFailed(name, res.Content)
	return res
}

func (s *Session) call(ctx context.Context, callID, name string, args json.RawMessage) ToolResult {
	res := ToolResult{CallID: callID, Name: name}
	if s == nil {
		res.Content = toolError(name, "unknown_tool", fmt.Sprintf("%s is not a tool of this proxy", name))
		return res
	}
	s.mu.Lock()
	offered := s.offered[name]
	if offered {
		s.calls[name]++
	}
	var extra Tool
	if s.tools != nil {
		extra = s.tools.extra[name]
	}
	s.mu.Unlock()
	if !offered {
		if out, ok := s.disabledCall(name); ok {
			s.mu.Lock()
			s.calls[name]++
			s.mu.Unlock()
			res.Content = out
			return res
		}
	}
	switch {
	case !offered:
		res.Content = toolError(name, "unknown_tool", fmt.Sprintf("%s is not a tool of this proxy", name))
	case name == ToolLoadSkill:
		res.Content = s.loadSkill(ctx, args)
	case name == ToolSearchSkills:
		res.Content = s.searchSkills(ctx, args)
	case extra != nil:
		out, err := extra.Call(ctx, ToolCall{Conversation: s.conversation, Arguments: args})
		if err != nil {
			res.Content = toolError(name, "tool_failed", err.Error())
		} else {
			res.Content = out
		}
	default:
		res.Content = toolError(name, "unknown_tool", fmt.Sprintf("%s is not a tool of this proxy", name))
	}
	return res
}

func (s *Session) loadSkill(ctx context.Context, args json.RawMessage) string {
	var a struct {
		SkillID *string `json:"skill_id"`
		ID      *string `json:"id"` // tolerated aliases models sometimes use
		Name    *string `json:"name"`
	}
	if err := DecodeToolArgs(args, &a); err != nil {
		return loadSkillError("", "invalid_arguments", err.Error()+`; call load_skill with {"skill_id": "<id>"}.`)
	}
	var want string
	for _, p := range []*string{a.SkillID, a.ID, a.Name} {
		if p != nil && strings.TrimSpace(*p) != "" {
			want = strings.TrimSpace(*p)
			break
		}
	}
	if want == "" {
		return loadSkillError("", "invalid_arguments", `skill_id is required; call load_skill with {"skill_id": "<id>"}.`)
	}
	want = skills.SkillArg(want)
	sk, ok := s.lib.resolve(want)
	if !ok {
		if s.snap == nil {
			shown := wire.Clip(want)
			return loadSkillError(shown, "not_found", fmt.Sprintf("The skill %q is unavailable: no skill library is loaded.", shown))
		}
		s.mu.Lock()
		search := s.offered[ToolSearchSkills]
		s.mu.Unlock()
		return skills.NotFound(want, s.snap, search)
	}
	s.mu.Lock()
	if s.remembered[sk.ID] {
		delete(s.remembered, sk.ID)
		s.loaded = append(s.loaded, sk.ID)
		s.mu.Unlock()
		return s.lib.envelope(sk).text
	}
	if s.activeSet[sk.ID] {
		s.mu.Unlock()
		return alreadyActive(sk.ID)
	}
	s.activate(sk.ID)
	s.loaded = append(s.loaded, sk.ID)
	s.gate.activate(sk) // Tools puts the client tools it enables back
	active := slices.Clone(s.active)
	gen := len(active)
	partial := s.tools != nil && s.tools.partial
	s.mu.Unlock()

	env := s.lib.envelope(sk)
	// An activated skill may bring tools (executable skills, tier 3); the
	// next round offers them. The provider may be slow (it can run scripts
	// for their schemas), so it runs unlocked and the newest activation set
	// wins when calls race.
	if s.toolsOK && s.opts.Tools != nil {
		ts := &serverTools{partial: partial}
		offerTools(ctx, ts, s.lib, &s.opts, s.clientNames, active)
		s.mu.Lock()
		if gen > s.toolsGen {
			s.tools, s.toolsGen = ts, gen
			for _, n := range ts.names {
				s.offered[n] = true
			}
		}
		s.mu.Unlock()
	}
	return env.text
}

func (s *Session) searchSkills(ctx context.Context, args json.RawMessage) string {
	var a struct {
		Query *string `json:"query"`
		Limit *int    `json:"limit"`
	}
	if err := DecodeToolArgs(args, &a); err != nil {
		return toolError(ToolSearchSkills, "invalid_arguments", err.Error()+`; expected {"query": "<words>", "limit": 5}`)
	}
	if a.Query == nil || strings.TrimSpace(*a.Query) == "" {
		return toolError(ToolSearchSkills, "invalid_arguments", `query is required; expected {"query": "<words>", "limit": 5}`)
	}
	q := strings.TrimSpace(*a.Query)
	limit := SearchDefaultLimit
	if a.Limit != nil {
		limit = min(max(*a.Limit, 1), SearchMaxLimit)
	}
	if s.search == nil {
		return toolError(ToolSearchSkills, "unavailable", "search is not available")
	}
	// Ask for a few more than needed: disabled skills are filtered out.
	var hits []searchHit
	for _, sc := range s.search.Search(ctx, q, limit+4) {
		sk, ok := s.lib.skill(sc.ID)
		if !ok || sk.Disabled() {
			continue
		}
		hits = append(hits, searchHit{ID: sk.ID, Description: skills.ShortDescription(sk.Description, s.opts.DescriptionLimit)})
		if len(hits) == limit {
			break
		}
	}
	// The query is quoted cut (wire.Clip): a model's 5 MB query came back
	// whole, and the MCP server's structured content doubled it.
	return searchResult(wire.Clip(q), hits)
}

// Tools returns what the next round offers: the client's tools minus the
// withheld ones (a load_skill may have put gated ones back), then the
// proxy's (a load_skill may have added tier-3 tools). The API package
// renders it into the follow-up request.
func (s *Session) Tools() wire.ToolSet {
	if s == nil || !s.toolsOK || s.tools == nil {
		return wire.ToolSet{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.ToolSet{Withheld: s.gate.withheldIndexes(), Server: slices.Clone(s.tools.specs)}
}

// namedConversationID derives the conversation id from a client-given
// session name and the id of the conversation's opening (conversationID):
// the name tells apart conversations that open alike, the opening keeps a
// reused name (a per-user "user" field) from merging different ones.
func namedConversationID(session, opening string) string {
	h := sha256.New()
	fmt.Fprintf(h, "session\x00%d\x00%s\x00opening\x00%s", len(session), session, opening)
	return hex.EncodeToString(h.Sum(nil)[:12])
}
