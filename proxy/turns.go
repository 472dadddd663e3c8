package proxy

import (
	"net/http"
	"slices"

	"github.com/skillrouter/skillrouter/router"
)

// A client that keeps the transcript itself (Chat Completions, Messages,
// Responses with store false: Codex CLI, Claude Code) never sees the
// proxy's hidden tool rounds, so the body of a skill the model loads with
// load_skill reaches the model in that request only. The model loads a
// skill to follow it while it works, and its next step (after the client
// ran the tool the skill said to use) would go on without it, or load it
// again at the price of another hidden round. turns remembers, per
// conversation turn (router.Rewrite.Turn) and credential, the skills the model
// loaded during the turn; its later steps load them again, after the last
// message as auto-loaded skills are, so the cached prefix stays as it was.
// It is a per-process memory, like presence: a step served by another
// replica, or after a restart, goes without, and the model can load the
// skill again.

// loadedSkills is implemented by tool sessions that know the skills the
// model loaded with load_skill (*router.Session).
type loadedSkills interface{ Loaded() []string }

var _ loadedSkills = (*router.Session)(nil)

// turnMemory is the memory of one request's credential: the turns are
// router.Rewrite's, and each credential keeps its own.
func (s *Server) turnMemory(h http.Header, clientKey string) *credTurns {
	return &credTurns{s: s, h: h, clientKey: clientKey}
}

type credTurns struct {
	s         *Server
	h         http.Header
	clientKey string
	scope     string // credentialScope, once needed
}

// key is the memory's key of turn.
func (c *credTurns) key(turn string) string {
	if c.scope == "" {
		c.scope = credentialScope(c.h, c.clientKey)
	}
	return c.scope + " turn " + turn
}

// get returns the skills the model loaded earlier in turn
// (router.Overrides.Carried).
func (c *credTurns) get(turn string) []string { return c.s.turns.get(c.key(turn)) }

// rememberTurn records, once the client has its answer, the skills the
// model loaded in this turn: those carried into the request and those it
// loaded now.
func (s *Server) rememberTurn(rt *routed, info *reqInfo) {
	ls, ok := sessionAs[loadedSkills](rt.session)
	if !ok {
		return
	}
	loaded := ls.Loaded()
	info.loaded = loaded
	if rt.turn == "" {
		return
	}
	ids := slices.Clone(rt.carried)
	for _, id := range loaded {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) > len(rt.carried) {
		s.turns.put(rt.turn, ids)
	}
}
