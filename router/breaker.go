package router

import (
	"fmt"
	"sync"
	"time"
)

// An embedder that stops answering (a hung Ollama, a blackholed endpoint)
// would cost every request its whole latency budget (250 ms by default)
// before BM25 ranks it. After breakerFailures failures in a row the query
// embedding is skipped for breakerCooldown; then one request tries it
// again while the others keep skipping, and a success closes the breaker.
const (
	breakerFailures = 3
	breakerCooldown = 5 * time.Second
)

// breaker decides whether a query embedding is worth trying.
type breaker struct {
	mu      sync.Mutex
	now     func() time.Time
	fails   int       // failures in a row
	until   time.Time // open until then
	probing bool      // a request is trying the embedder after the cooldown
	last    string    // the last failure, for the skipped requests' reason
}

// allow reports whether to try the embedder now; when not, why. A true
// answer must be followed by done.
func (b *breaker) allow() (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fails < breakerFailures {
		return true, ""
	}
	if !b.probing && !b.clock().Before(b.until) {
		b.probing = true // this request tries; the others wait for its answer
		return true, ""
	}
	return false, fmt.Sprintf("not asked after %d failures in a row, next try in under %v (last: %s)", b.fails, breakerCooldown, b.last)
}

// done records the outcome of an allowed try: failed describes a failure;
// counted is false for a try that says nothing of the embedder (its
// request was cancelled).
func (b *breaker) done(failed string, counted bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
	switch {
	case !counted:
	case failed == "":
		b.fails, b.last = 0, ""
	default:
		b.fails++
		b.last = failed
		if b.fails >= breakerFailures {
			b.until = b.clock().Add(breakerCooldown)
		}
	}
}

// skipping describes the breaker while it is open ("" when closed).
func (b *breaker) skipping() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fails < breakerFailures {
		return ""
	}
	return fmt.Sprintf("skipped after %d failed queries in a row (last: %s)", b.fails, b.last)
}

func (b *breaker) clock() time.Time {
	if b.now == nil {
		return time.Now()
	}
	return b.now()
}
