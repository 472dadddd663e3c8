package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"

	"github.com/skillrouter/skillrouter/internal/lru"
	"github.com/skillrouter/skillrouter/router"
)

// A Responses request that continues state stored upstream
// (previous_response_id, conversation) carries only its new input, so the
// router cannot see the skills earlier turns loaded there and would load
// them again, each turn adding the same bodies to the stored conversation.
// presence remembers, per stored response and per conversation, the skills
// its turns made active; the next turn passes them to the router as
// Overrides.Present. It is a per-process memory: a turn served by another
// replica, or after a restart, loads what it selects, as without it.

// presenceEntries bounds each memory (presence, turns): about 200 bytes an
// entry.
const presenceEntries = 16384

// skillMemory maps a key (a stored response, a conversation turn) to skill
// ids, the least recently used forgotten first.
type skillMemory struct {
	once sync.Once
	c    *lru.Cache[string, []string]
}

func (p *skillMemory) cache() *lru.Cache[string, []string] {
	p.once.Do(func() { p.c = lru.New[string, []string](presenceEntries, 0, nil) })
	return p.c
}

// get returns the skills remembered for key (nil if none).
func (p *skillMemory) get(key string) []string {
	if key == "" {
		return nil
	}
	ids, _ := p.cache().Get(key)
	return slices.Clone(ids)
}

// put remembers ids for key.
func (p *skillMemory) put(key string, ids []string) {
	if key == "" || len(ids) == 0 {
		return
	}
	p.cache().Put(key, ids, nil)
}

// seen marks key as served here, with no skills if it has none yet.
func (p *skillMemory) seen(key string) {
	if key == "" {
		return
	}
	if _, ok := p.cache().Get(key); !ok {
		p.cache().Put(key, []string{}, nil)
	}
}

// has reports whether key was served here (and is still remembered).
func (p *skillMemory) has(key string) bool {
	if key == "" {
		return false
	}
	_, ok := p.cache().Get(key)
	return ok
}

// stateRefs is implemented by requests that can continue state stored
// upstream (Responses).
type stateRefs interface {
	// StateRefs names the state the request continues (previous response,
	// conversation; "" when none) and whether its answer is stored.
	StateRefs() (previous, conversation string, stored bool)
}

// presenceScope names whose stored state a request reaches (credentialScope),
// so that a client naming another's response id is not ranked with what
// that conversation holds. "" for requests that cannot continue stored
// state.
func presenceScope(req apiRequest, h http.Header, clientKey string) string {
	if _, ok := req.(stateRefs); !ok {
		return ""
	}
	return credentialScope(h, clientKey)
}

// credentialScope is a digest of the credential a request is served with:
// the client's own key for the proxy, else the one it forwards. What the
// proxy remembers of a client's conversations is kept under it.
func credentialScope(h http.Header, clientKey string) string {
	cred := clientKey
	if cred == "" {
		cred = h.Get("Authorization") + "\x00" + h.Get("X-Api-Key") + "\x00" + h.Get("Api-Key")
	}
	sum := sha256.Sum256([]byte(cred))
	return hex.EncodeToString(sum[:8])
}

// presenceKey is the key of what the request continues ("" when nothing).
func presenceKey(req apiRequest, scope string) string {
	st, ok := req.(stateRefs)
	if !ok {
		return ""
	}
	prev, conv, _ := st.StateRefs()
	switch {
	case prev != "":
		return scope + " response " + prev
	case conv != "":
		return scope + " conversation " + conv
	}
	return ""
}

// activeSkills is implemented by tool sessions that know the skills active
// at the end of a request (*router.Session).
type activeSkills interface{ Active() []string }

// rememberPresence records, once a stored answer with id responseID is
// final, the skills active in it: those the request was given as present
// and those it made active (auto-loaded, loaded with load_skill), under the
// response and the conversation it continues.
func (s *Server) rememberPresence(rt *routed, responseID string) {
	st, ok := rt.req.(stateRefs)
	if ok && rt.abKey != "" && responseID != "" {
		if _, _, stored := st.StateRefs(); stored {
			// A turn continuing it keeps its arm (see abKey).
			s.abKeys.put(rt.scope+" response "+responseID, []string{rt.abKey})
		}
	}
	if !ok {
		return
	}
	_, conv, stored := st.StateRefs()
	if !stored {
		return
	}
	// Served here, whatever it holds: a turn continuing it on this
	// process is not counted as unknown state.
	if responseID != "" {
		s.presence.seen(rt.scope + " response " + responseID)
	}
	if conv != "" {
		s.presence.seen(rt.scope + " conversation " + conv)
	}
	act, ok2 := sessionAs[activeSkills](rt.session)
	if !ok2 {
		return
	}
	ids := act.Active()
	for _, id := range rt.present {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if responseID != "" {
		s.presence.put(rt.scope+" response "+responseID, ids)
	}
	if conv != "" {
		s.presence.put(rt.scope+" conversation "+conv, ids)
	}
}

var _ activeSkills = (*router.Session)(nil)

// previousSetter is a request that can be sent continuing another stored
// response (Responses).
type previousSetter interface {
	WithPrevious(id string) ([]byte, error)
}

// rememberAnswer notes, after a stream whose opening events named one
// response (announced) and whose answer is another (answer: a round showed
// the client a preamble, then loaded a skill, and the answer came in the
// next round's response), that a turn chained from the first means the
// second. LangChain and the AI SDK keep response.created's id to chain
// from; the response it names ends at the proxy's call, unanswered, which
// the API refuses to continue, and its repair would lose the answer.
func (s *Server) rememberAnswer(rt *routed, announced, answer string) {
	if announced == "" || answer == "" || announced == answer || rt.scope == "" {
		return
	}
	if st, ok := rt.req.(stateRefs); ok {
		if _, conv, stored := st.StateRefs(); stored && conv == "" {
			s.answers.put(answerKey(rt.scope, announced), []string{answer})
		}
	}
}

// answerKey is the answer memory's key of an announced response id.
func answerKey(scope, announced string) string { return scope + " answer " + announced }

// chainedToAnswer returns the request continuing from the answer when it
// continues a response rememberAnswer mapped to one: parsed again from
// the edited body. ok is false when nothing changes.
func (s *Server) chainedToAnswer(a api, parsed apiRequest, scope string) (apiRequest, []byte, bool) {
	ps, ok := parsed.(previousSetter)
	st, ok2 := parsed.(stateRefs)
	if !ok || !ok2 || scope == "" {
		return nil, nil, false
	}
	prev, _, _ := st.StateRefs()
	if prev == "" {
		return nil, nil, false
	}
	to := s.answers.get(answerKey(scope, prev))
	if len(to) != 1 {
		return nil, nil, false
	}
	body, err := ps.WithPrevious(to[0])
	if err != nil {
		return nil, nil, false
	}
	p, err := a.parse(body)
	if err != nil {
		return nil, nil, false
	}
	return p, body, true
}
