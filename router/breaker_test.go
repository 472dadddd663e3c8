package router

import (
	"testing"
	"time"
)

// The breaker opens after breakerFailures failures in a row, lets one try
// through after the cooldown while others keep skipping, and closes on a
// success; a cancelled try counts for nothing.
func TestBreaker(t *testing.T) {
	now := time.Unix(0, 0)
	b := &breaker{now: func() time.Time { return now }}
	try := func(failed string) {
		t.Helper()
		if ok, why := b.allow(); !ok {
			t.Fatalf("not allowed: %s", why)
		}
		b.done(failed, true)
	}
	try("down")
	try("")
	for range breakerFailures - 1 {
		try("down")
	}
	if ok, _ := b.allow(); !ok {
		t.Fatal("open before enough failures in a row (a success resets the count)")
	}
	b.done("down", true)
	if ok, why := b.allow(); ok || why == "" {
		t.Fatalf("closed after %d failures in a row", breakerFailures)
	}
	now = now.Add(breakerCooldown)
	if ok, _ := b.allow(); !ok {
		t.Fatal("no try after the cooldown")
	}
	if ok, _ := b.allow(); ok {
		t.Fatal("a second try while the first is under way")
	}
	b.done("", false) // cancelled: nothing learned
	if ok, _ := b.allow(); !ok {
		t.Fatal("a cancelled try kept the others out")
	}
	b.done("", true)
	if ok, _ := b.allow(); !ok || b.fails != 0 {
		t.Fatal("a success did not close it")
	}
	b.done("", true)
}
