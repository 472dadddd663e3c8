package router

// Session answers the server-side tool calls of one request across the
// proxy's tool-loop rounds: load_skill, search_skills and tier-3 tools.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/skillrouter/skillrouter/skills"
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

	toolsOK     bool     // tools may be added to the request
	clientTools [][]byte // the client's own tool definitions, in order
	clientNames map[string]bool
	gate        *toolGate       // gated client tools (nil: none); withheld ones return when a skill enables them
	tools       *serverTools    // what the next round offers
	toolsGen    int             // activation count tools was computed for
	offered     map[string]bool // every tool name offered in any round
	active      []string        // skills whose envelope is in the conversation
	activeSet   map[string]bool
	loaded      []string       // skills loaded by load_skill in this session
	calls       map[string]int // calls answered, by tool name
}

// ToolResult is the answer to one server-side tool call.
type ToolResult struct {
	CallID  string
	Name    string
	Content string
}

func newSession(s Searcher, snap *skills.Snapshot, lib *skillLib, o RewriteOptions, p *PromptParts, ts *serverTools, toolsOK bool, clientTools [][]byte, clientNames map[string]bool) *Session {
	sess := &Session{
		search: s, snap: snap, lib: lib, opts: o, conversation: p.Conversation,
		toolsOK: toolsOK, clientTools: clientTools, clientNames: clientNames,
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

// disabledCaller is implemented by tool providers (package sandbox) whose
// tools exist but are switched off: their calls get a clear "disabled"
// result from the proxy instead of leaking to the client as unknown tools.
type disabledCaller interface {
	DisabledCall(name string) (string, bool)
}

func (s *Session) disabledCall(name string) (string, bool) {
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
	if err := toolArgs(args, &a); err != nil {
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
	want = strings.TrimLeft(want, "#/") // a model may copy a mention
	sk, ok := s.lib.resolve(want)
	if !ok {
		if s.snap == nil {
			return loadSkillError(want, "not_found", fmt.Sprintf("The skill %q is unavailable: no skill library is loaded.", want))
		}
		return skills.NotFound(want, s.snap)
	}
	s.mu.Lock()
	if s.activeSet[sk.ID] {
		s.mu.Unlock()
		return alreadyActive(sk.ID)
	}
	s.activate(sk.ID)
	s.loaded = append(s.loaded, sk.ID)
	s.gate.activate(sk) // FollowUp puts the client tools it enables back
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
	if err := toolArgs(args, &a); err != nil {
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
		sk, ok := s.lib.byID[sc.ID]
		if !ok || sk.Disabled() {
			continue
		}
		hits = append(hits, searchHit{ID: sk.ID, Description: skills.ShortDescription(sk.Description, s.opts.DescriptionLimit)})
		if len(hits) == limit {
			break
		}
	}
	return searchResult(q, hits)
}

// FollowUp returns the request for the next round: body plus the assistant
// message (only the calls answered in results; its content kept) and one
// tool message per result, in the order of the assistant's calls, with
// `tools` refreshed: skills activated by load_skill may add tier-3 tools and
// put back gated client tools they enable (from the client's original
// definitions). A result whose call id the assistant message does not
// contain is an error (the upstream would reject the request).
func (s *Session) FollowUp(body []byte, assistant json.RawMessage, results []ToolResult) ([]byte, error) {
	if len(results) == 0 {
		return body, nil
	}
	req, err := parseRequest(body)
	if err != nil {
		return nil, fmt.Errorf("router: follow-up body: %w", err)
	}
	msg, order, err := assistantForFollowUp(assistant, results)
	if err != nil {
		return nil, fmt.Errorf("router: follow-up: %w", err)
	}
	byID := map[string]ToolResult{}
	for _, r := range results {
		byID[r.CallID] = r
	}
	elems := [][]byte{msg}
	for _, id := range order {
		tm, err := marshalJSON(struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}{"tool", id, byID[id].Content})
		if err != nil {
			return nil, err
		}
		elems = append(elems, tm)
	}
	msgs, err := appendElements(body[req.messages.start:req.messages.end], elems...)
	if err != nil {
		return nil, err
	}
	out := spliceBytes(body, req.messages, msgs)
	if s == nil || !s.toolsOK || s.tools == nil {
		return out, nil
	}
	s.mu.Lock()
	defs := slices.Clone(s.tools.defs)
	client := s.clientTools
	if s.gate != nil {
		client = s.gate.kept()
	}
	s.mu.Unlock()
	tools := slices.Concat(client, rawList(defs))
	if len(tools) == 0 {
		return out, nil
	}
	return setMember(out, "tools", joinArray(tools))
}

// assistantForFollowUp prepares the upstream's assistant message for the
// next request: tool_calls cut to the answered ones (stream-only "index"
// fields dropped), response-only "annotations" dropped, the rest kept. It
// returns the call ids in the assistant's order.
func assistantForFollowUp(assistant json.RawMessage, results []ToolResult) ([]byte, []string, error) {
	if !json.Valid(assistant) {
		return nil, nil, errors.New("assistant message is not valid JSON")
	}
	ms, err := objectMembers(assistant)
	if err != nil {
		return nil, nil, errors.New("assistant message is not an object")
	}
	want := map[string]bool{}
	for _, r := range results {
		if r.CallID == "" {
			return nil, nil, errors.New("tool result without a call id")
		}
		want[r.CallID] = true
	}
	ts, ok := memberValue(ms, "tool_calls")
	if !ok {
		return nil, nil, errors.New("assistant message has no tool_calls")
	}
	calls := assistant[ts.start:ts.end]
	es, err := arrayElements(calls)
	if err != nil {
		return nil, nil, errors.New("tool_calls is not an array")
	}
	var kept [][]byte
	var order []string
	for _, e := range es {
		c := calls[e.start:e.end]
		var id struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(c, &id) != nil || !want[id.ID] {
			continue
		}
		delete(want, id.ID)
		c, err = removeMembers(c, "index")
		if err != nil {
			return nil, nil, err
		}
		kept = append(kept, c)
		order = append(order, id.ID)
	}
	if len(want) > 0 {
		missing := slices.Sorted(maps.Keys(want))
		return nil, nil, fmt.Errorf("no tool call with id %s in the assistant message", strings.Join(missing, ", "))
	}
	out := spliceBytes(assistant, ts, joinArray(kept))
	if out, err = removeMembers(out, "annotations"); err != nil {
		return nil, nil, err
	}
	if _, ok := memberValue(mustMembers(out), "role"); !ok {
		if out, err = setMember(out, "role", []byte(`"assistant"`)); err != nil {
			return nil, nil, err
		}
	}
	return out, order, nil
}

func mustMembers(b []byte) []jsonMember {
	ms, _ := objectMembers(b)
	return ms
}

func rawList(defs []json.RawMessage) [][]byte {
	out := make([][]byte, len(defs))
	for i, d := range defs {
		out[i] = d
	}
	return out
}

// joinArray renders elements as a compact JSON array.
func joinArray(elems [][]byte) []byte {
	n := 2
	for _, e := range elems {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']')
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
