package router

import (
	"strings"
	"testing"
	"time"
)

// The breaker opens after breakerFailures failures in a row spread over
// breakerSpan, lets one probe through after the cooldown while others keep
// skipping, and closes on the probe's success; a cancelled try counts for
// nothing, and only the probe decides an open breaker.
func TestBreaker(t *testing.T) {
	now := time.Unix(0, 0)
	b := &breaker{now: func() time.Time { return now }}
	try := func(failed string) {
		t.Helper()
		ok, probe, why := b.allow()
		if !ok {
			t.Fatalf("not allowed: %s", why)
		}
		b.done(probe, failed, true, 0)
	}
	// A burst of failures at one instant (a stall) does not open it.
	for range breakerFailures + 2 {
		try("down")
	}
	if ok, _, _ := b.allow(); !ok {
		t.Fatal("open after a burst within breakerSpan")
	}
	b.done(false, "", true, 0) // a success resets the count
	for range breakerFailures {
		now = now.Add(breakerSpan / 2)
		try("down")
	}
	if ok, _, _ := b.allow(); ok {
		t.Fatalf("closed after %d failures over %v", breakerFailures, breakerSpan)
	}
	now = now.Add(breakerCooldown)
	ok, probe, _ := b.allow()
	if !ok || !probe {
		t.Fatal("no probe after the cooldown")
	}
	if ok, _, _ := b.allow(); ok {
		t.Fatal("a second try while the probe is under way")
	}
	b.done(false, "", true, 0) // a stale non-probe success does not close it or free the probe
	if ok, _, _ := b.allow(); ok {
		t.Fatal("a stale try let a second probe in")
	}
	b.done(probe, "", false, 0) // the probe cancelled: nothing learned
	ok, probe, _ = b.allow()
	if !ok || !probe {
		t.Fatal("a cancelled probe kept the next one out")
	}
	b.done(probe, "down", true, 0) // the probe failed: closed again for the cooldown
	if ok, _, _ := b.allow(); ok {
		t.Fatal("a failed probe did not reopen it")
	}
	now = now.Add(breakerCooldown)
	ok, probe, _ = b.allow()
	b.done(probe, "", true, 0)
	if ok, _, _ := b.allow(); !ok || b.skipping() != "" {
		t.Fatal("a successful probe did not close it")
	}
}

// A failure that says how long to wait (a 429's Retry-After) opens the
// breaker at once, for that long rather than the cooldown, and the skipped
// requests' reason says when the next try comes.
func TestBreakerRetryAfter(t *testing.T) {
	now := time.Unix(0, 0)
	b := &breaker{now: func() time.Time { return now }}
	ok, probe, _ := b.allow()
	if !ok {
		t.Fatal("closed breaker refused")
	}
	b.done(probe, "HTTP 429 (retry after 30s)", true, 30*time.Second)
	now = now.Add(29 * time.Second)
	ok, _, why := b.allow()
	if ok {
		t.Fatal("a try before the server's Retry-After passed")
	}
	if !strings.Contains(why, "as the embedder asked (Retry-After), next try in 1s") || !strings.Contains(why, "retry after 30s") {
		t.Errorf("reason %q does not say when, or why", why)
	}
	now = now.Add(time.Second)
	if ok, probe, _ := b.allow(); !ok || !probe {
		t.Fatal("no probe once the Retry-After passed")
	}
	// While the probe is under way the others are told so, not "in 0s".
	if _, _, why := b.allow(); !strings.Contains(why, "another request is trying it") {
		t.Errorf("reason during the probe %q", why)
	}
}
