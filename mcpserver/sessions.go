package mcpserver

import (
	"sync"
	"time"
)

// At the session cap a new client used to be refused until a session timed
// out (30 minutes idle): one local user opening sessions and leaving them
// shut every other MCP client out for that long. A session with no request
// in flight and none for evictIdle is closed instead to admit the new one;
// its client gets 404 on its next request and, as MCP's streamable HTTP
// transport says, starts a new session.
const evictIdle = 5 * time.Minute

// activity is when each HTTP session was last used, and how many of its
// requests are in flight (an open event stream counts as busy).
type activity struct {
	mu   sync.Mutex
	now  func() time.Time
	last map[string]time.Time
	busy map[string]int
}

func newActivity() *activity {
	return &activity{now: time.Now, last: map[string]time.Time{}, busy: map[string]int{}}
}

// begin notes a request of session id; the returned func notes its end.
func (a *activity) begin(id string) func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last[id] = a.now()
	a.busy[id]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.last[id] = a.now()
		if a.busy[id]--; a.busy[id] <= 0 {
			delete(a.busy, id)
		}
	}
}

// opened notes a session just opened (its id is in initialize's answer).
func (a *activity) opened(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last[id] = a.now()
}

// idlest returns, of the open sessions ids, the one idle longest, when it
// has been idle for at least d with nothing in flight; ok false when none
// has. Ids no longer open are forgotten.
func (a *activity) idlest(open []string, d time.Duration) (id string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	live := make(map[string]bool, len(open))
	var oldest time.Time
	for _, o := range open {
		live[o] = true
		last, seen := a.last[o]
		if !seen || a.busy[o] > 0 || a.now().Sub(last) < d {
			continue // one opened over another transport, busy, or recent
		}
		if !ok || last.Before(oldest) {
			id, oldest, ok = o, last, true
		}
	}
	for k := range a.last {
		if !live[k] && a.busy[k] == 0 {
			delete(a.last, k)
		}
	}
	return id, ok
}

// evictIdlest closes the session idle longest, if one has been for
// evictIdle; it reports whether it closed one.
func (s *Server) evictIdlest() bool {
	var open []string
	for ss := range s.srv.Sessions() {
		open = append(open, ss.ID())
	}
	id, ok := s.activity.idlest(open, evictIdle)
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
