package skills

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
)

// Registry holds the current Snapshot behind an atomic pointer. Readers call
// Snapshot and keep using what they got for a whole request; a reload never
// changes a snapshot someone holds, it installs a new one.
type Registry struct {
	roots []string
	opts  Options
	cur   atomic.Pointer[Snapshot]

	// mu serialises reloads so swaps and notifications happen in scan order.
	mu     sync.Mutex
	subs   []func(*Snapshot)
	before []func(*Snapshot)
	log    *slog.Logger
}

// NewRegistry scans roots once, synchronously, so Snapshot is never nil.
func NewRegistry(roots []string, opts Options) *Registry {
	r := &Registry{roots: slices.Clone(roots), opts: opts, log: slog.Default()}
	r.cur.Store(Load(context.Background(), r.roots, opts))
	return r
}

// SetLogger sets where reload and watch failures, and the problems a reload
// finds, are logged (default slog.Default()).
func (r *Registry) SetLogger(l *slog.Logger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l != nil {
		r.log = l
	}
}

// Snapshot returns the current snapshot (never nil after NewRegistry).
func (r *Registry) Snapshot() *Snapshot { return r.cur.Load() }

// Roots returns the roots the registry scans.
func (r *Registry) Roots() []string { return slices.Clone(r.roots) }

// Reload scans again and swaps the snapshot; subscribers are called after the swap.
// The new snapshot is complete before anyone can see it. If ctx ends during
// the scan, the partial result is discarded and the current snapshot returned.
func (r *Registry) Reload(ctx context.Context) *Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := Load(ctx, r.roots, r.opts)
	if snap.Err() != nil {
		r.log.Warn("skills: reload cancelled; keeping the current library", "err", snap.Err())
		return r.cur.Load()
	}
	for i, fn := range r.before {
		r.notify(i, fn, snap)
	}
	prev := r.cur.Swap(snap)
	snap.LogProblems(r.log, prev)
	for i, fn := range r.subs {
		r.notify(i, fn, snap)
	}
	return snap
}

// notify runs one subscriber; a panic there is logged, not propagated, so a
// bug in an index rebuild cannot kill the watcher or the other subscribers.
func (r *Registry) notify(i int, fn func(*Snapshot), snap *Snapshot) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("skills: reload subscriber panicked", "subscriber", i, "panic", fmt.Sprint(p))
		}
	}()
	fn(snap)
}

// OnSwap registers fn to run (synchronously, in order) with each new
// snapshot just before it becomes the current one: for consumers that must
// never serve what the library no longer has once Snapshot shows it gone
// (a router hides deleted skills from then on). fn must be quick and must
// not call Reload.
func (r *Registry) OnSwap(fn func(*Snapshot)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.before = append(r.before, fn)
}

// OnReload registers fn to run (synchronously, in order) after each swap.
// fn must not call Reload (it would deadlock). Compare Fingerprint with the
// previous snapshot's to skip work when nothing rendered changed.
func (r *Registry) OnReload(fn func(*Snapshot)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs = append(r.subs, fn)
}
