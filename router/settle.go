package router

// Settling. An incremental build (a library edit) re-embeds only the
// skills whose text changed and keeps the builtin embedder's fit (its IDF)
// and the score calibration made on the older library (see refreshDrift):
// fast, but its scores depend on the edit history, so two processes on the
// same files could send different prompts. Once the library has been
// quiet for Options.SettleAfter, the router builds the index again as a
// fresh start would (fit and calibration on the whole library; BM25
// statistics, signatures and, for an embedder without a fit, the vectors
// reused), installs it like any build and keeps it as the warm index.
// After that, scores, rankings and prompts equal a fresh start's, bit for
// bit. A warm index kept before its router settled says so in its
// manifest, and the router that loads it settles it after the start.

import (
	"context"
	"time"
)

// DefaultSettleAfter is how long the library must stay unchanged before an
// incrementally built index is settled. A settle costs about a cold
// build's CPU (docs/performance.md), so it waits out edit bursts: the
// watcher's debounce (250 ms, at most 2.5 s) coalesces one save, not a
// sync that writes files for several seconds or an author saving again
// after a look at the result; 15 s covers those, and replicas still agree
// within seconds of the last edit plus the build.
const DefaultSettleAfter = 15 * time.Second

// armSettle starts the quiet-period timer unless it runs: an index that
// is not settled was just installed. An unchanged reload does not restart
// it, or reloads more frequent than the period would postpone settling
// forever. u.mu is held.
func (r *Router) armSettle() {
	u := &r.upd
	if u.settleTimer != nil || r.opts.SettleAfter < 0 || r.bgCtx.Err() != nil {
		return
	}
	token := u.settleToken
	u.settleTimer = time.AfterFunc(r.opts.SettleAfter, func() { r.settleNow(token) })
}

// stopSettle stops the quiet period and drops a settle not yet started:
// the library changed. u.mu is held.
func (r *Router) stopSettle() {
	u := &r.upd
	if u.settleTimer != nil {
		u.settleTimer.Stop()
		u.settleTimer = nil
	}
	u.settleToken++
	u.settleDue = false
}

// settleNow makes a settle due, unless the timer that calls it was
// stopped meanwhile (token is then stale).
func (r *Router) settleNow(token uint64) {
	r.upd.mu.Lock()
	defer r.upd.mu.Unlock()
	if token == r.upd.settleToken {
		r.startSettle()
	}
}

// startSettle makes a settle due and starts the builder for it; the
// builder settles once the newest snapshot is in place. u.mu is held.
func (r *Router) startSettle() {
	u := &r.upd
	if r.bgCtx.Err() != nil {
		return
	}
	if u.settleTimer != nil {
		u.settleTimer.Stop()
		u.settleTimer = nil
	}
	u.settleDue = true
	if !u.building {
		u.building = true
		r.bg.Add(1)
		go r.builder()
	}
}

// Settled waits until the index of the newest snapshot handed to the
// router is in place and settled: fitted and calibrated on that library,
// ranking as a fresh start on it would. An index is settled from a cold
// start, from a kept or prebuilt index that was, after a change past a
// tenth of the library, and Options.SettleAfter after the last change
// otherwise; with SettleAfter < 0 only the first three, so Settled may wait
// until ctx ends.
func (r *Router) Settled(ctx context.Context) error {
	return r.waitUntil(ctx, "settling the index", func(u *updater) (bool, error) {
		if u.resolved >= u.wantGen && u.err != nil {
			return true, u.err
		}
		ix := r.cur.Load()
		return u.installed >= u.wantGen && ix != nil && ix.settled, nil
	})
}
