package mcpserver

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// At the session cap a new client used to be refused until a session timed
// out (30 minutes idle): one local user opening sessions and leaving them
// shut every other MCP client out for that long. A well-formed initialize
// at the cap now closes the session idle longest, when it has nothing in
// flight: first one never used since its initialize (idle for
// evictUnused: opened and left, as such a flood leaves them), else one idle
// for evictIdle. Its client gets 404 on its next request and, as MCP's
// streamable HTTP transport says, starts a new session (some clients are
// known not to, and need reconnecting).
const (
	evictUnused = time.Minute
	evictIdle   = 5 * time.Minute
)

// activity is when each open HTTP session was last used, whether it was
// used at all after its initialize, and how many of its requests are in
// flight (an open event stream counts as busy).
type activity struct {
	mu   sync.Mutex
	now  func() time.Time
	last map[string]time.Time
	used map[string]bool
	busy map[string]int
	// owner is the client that opened each session (Config.ClientID).
	owner map[string]string
}

func newActivity() *activity {
	return &activity{now: time.Now, last: map[string]time.Time{}, used: map[string]bool{}, busy: map[string]int{}, owner: map[string]string{}}
}

// begin notes a request of session id; end notes its end with the answer's
// status: a 404 (no such session) or a DELETE that ended it forgets the id.
func (a *activity) begin(id string) (end func(method string, status int)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.busy[id]++
	return func(method string, status int) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.busy[id]--; a.busy[id] <= 0 {
			delete(a.busy, id)
		}
		if status == http.StatusNotFound || (method == http.MethodDelete && status < 300) {
			delete(a.last, id)
			delete(a.used, id)
			delete(a.owner, id)
			return
		}
		if _, open := a.last[id]; open {
			a.last[id], a.used[id] = a.now(), true
		}
	}
}

// opened notes a session just opened by client; open lists the sessions
// open now, called to forget closed ones (timed out) once they could be
// many.
func (a *activity) opened(id, client string, limit int, open func() []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last[id] = a.now()
	if client != "" {
		a.owner[id] = client
	}
	if len(a.last) > 2*limit {
		a.forgetClosed(open())
	}
}

// idlest returns the session to close at the cap (see evictUnused) for a
// new one of client, ok false when none may be: the client's own sessions
// first (with client keys, one key filling the cap closes its own before
// anyone else's). Ids no longer open are forgotten.
func (a *activity) idlest(open []string, client string) (id string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgetClosed(open)
	for _, own := range []bool{true, false} {
		if own && client == "" {
			continue
		}
		for _, used := range []bool{false, true} {
			d := evictUnused
			if used {
				d = evictIdle
			}
			var oldest time.Time
			for _, o := range open {
				last, seen := a.last[o]
				if !seen || a.used[o] != used || a.busy[o] > 0 || a.now().Sub(last) < d || (own && a.owner[o] != client) {
					continue // opened over another transport, busy, recent, or not the client's
				}
				if !ok || last.Before(oldest) {
					id, oldest, ok = o, last, true
				}
			}
			if ok {
				return id, true
			}
		}
	}
	return "", false
}

// ownedBy reports whether client may use session id: the client that
// opened it, or anyone when it was opened without a client id.
func (a *activity) ownedBy(id, client string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	owner, bound := a.owner[id]
	return !bound || owner == client
}

// forgetClosed drops what it knows of sessions not in open. a.mu is held.
func (a *activity) forgetClosed(open []string) {
	live := make(map[string]bool, len(open))
	for _, o := range open {
		live[o] = true
	}
	for k := range a.last {
		if !live[k] && a.busy[k] == 0 {
			delete(a.last, k)
			delete(a.used, k)
			delete(a.owner, k)
		}
	}
}

// openIDs lists the ids of the open sessions.
func (s *Server) openIDs() []string {
	var open []string
	for ss := range s.srv.Sessions() {
		open = append(open, ss.ID())
	}
	return open
}

// evictIdlest closes the session idlest returns; it reports whether it
// closed one.
func (s *Server) evictIdlest(client string) bool {
	id, ok := s.activity.idlest(s.openIDs(), client)
	if !ok {
		return false
	}
	for ss := range s.srv.Sessions() {
		if ss.ID() == id {
			_ = ss.Close()
			s.refused.evicted.Inc()
			return true
		}
	}
	return false
}

// initializes reports whether a request may open a session: a JSON POST
// whose body (head, peeked) is an initialize. Only such a request evicts:
// a malformed one, which the SDK refuses anyway, must not close sessions.
func initializes(r *http.Request, head []byte) bool {
	ct := r.Header.Get("Content-Type")
	json := ct == "application/json" || strings.HasPrefix(ct, "application/json;")
	return r.Method == http.MethodPost && json && gjson.GetBytes(head, "method").Str == "initialize"
}
