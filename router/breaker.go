package router

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// An embedder that stops answering (a hung Ollama, a blackholed endpoint)
// would cost every request its whole latency budget (250 ms by default)
// before BM25 ranks it. After breakerFailures failures in a row, spread
// over at least breakerSpan (a stall that fails a few concurrent requests
// at once is not an outage), the query embedding is skipped for
// breakerCooldown; then one request tries it again while the others keep
// skipping, and a success closes the breaker.
const (
	breakerFailures = 3
	breakerSpan     = time.Second
	breakerCooldown = 5 * time.Second
)

// breaker decides whether a query embedding is worth trying.
type breaker struct {
	mu      sync.Mutex
	now     func() time.Time
	fails   int       // failures in a row
	first   time.Time // when the first of them came
	open    bool      // skipping until `until`, then probing
	until   time.Time
	probing bool   // a request is trying the embedder after the cooldown
	waited  bool   // opened by the embedder's own wait (Retry-After)
	last    string // the last failure, for the skipped requests' reason
}

// allow reports whether to try the embedder now, whether the try is the
// probe of an open breaker, and when not allowed, why. An allowed try must
// be followed by done with the probe answer.
func (b *breaker) allow() (ok, probe bool, why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true, false, ""
	}
	if !b.probing && !b.clock().Before(b.until) {
		b.probing = true // this request tries; the others wait for its answer
		return true, true, ""
	}
	return false, false, "not asked " + b.reasonLocked()
}

// reasonLocked says why the open breaker skips the embedder. b.mu is held.
func (b *breaker) reasonLocked() string {
	var why string
	switch {
	case b.waited:
		why = "as the embedder asked (Retry-After)"
	case b.fails == 1:
		why = "after a failed probe"
	default:
		why = fmt.Sprintf("after %d failures in a row", b.fails)
	}
	when := "another request is trying it"
	if left := b.until.Sub(b.clock()); left > 0 {
		when = fmt.Sprintf("next try in %v", left.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s, %s (last: %s)", why, when, b.last)
}

// done records the outcome of an allowed try: failed describes a failure;
// counted is false for a try that says nothing of the embedder (its
// request was cancelled); wait is how long the embedder asked to be left
// alone (a 429's Retry-After), which opens the breaker at once for that
// long. Only the probe's outcome decides an open breaker.
func (b *breaker) done(probe bool, failed string, counted bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	} else if b.open {
		return // a try from before it opened
	}
	switch {
	case !counted:
	case failed == "":
		b.fails, b.last, b.open = 0, "", false
	default:
		now := b.clock()
		if b.fails == 0 {
			b.first = now
		}
		b.fails++
		b.last = failed
		switch {
		case wait > 0:
			b.open, b.until, b.waited = true, now.Add(wait), true
		case probe || (b.fails >= breakerFailures && now.Sub(b.first) >= breakerSpan):
			b.open, b.until, b.waited = true, now.Add(breakerCooldown), false
		}
	}
}

// skipping describes the breaker while it is open ("" when closed).
func (b *breaker) skipping() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return ""
	}
	return "skipped " + b.reasonLocked()
}

// retryAfter is how long an embedder's error asks the router to wait (see
// package embed's RetryAfter), 0 when it does not say.
func retryAfter(err error) time.Duration {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfter()
	}
	return 0
}

func (b *breaker) clock() time.Time {
	if b.now == nil {
		return time.Now()
	}
	return b.now()
}
