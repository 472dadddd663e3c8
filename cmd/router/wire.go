package main

// Wiring shared by the commands that rank a library (route, serve, bench,
// doctor): buildRouter loads the library, fits the builtin embedder to it
// and keeps the router's indexes in step with registry reloads.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// withEmbedder creates the embedder ec describes and sets it in opts; for the
// builtin it also sets Fit, so each library snapshot gets an embedder fitted
// to it. The disk cache and, for remote providers, the persisted vector
// index live under the cache directory.
func withEmbedder(ec embed.Config, opts router.Options) (router.Options, error) {
	e, err := embed.New(ec)
	if err != nil {
		return opts, err
	}
	opts.Embedder = e
	if b, ok := e.(*embed.Builtin); ok {
		opts.Fit = func(corpus []string) router.Embedder { return b.Fit(corpus) }
		opts.Restore = func(state []byte) (router.Embedder, error) { return embed.RestoreBuiltin(state) }
	} else if opts.IndexDir == "" {
		if dir, err := embed.CacheDir(ec.CacheDir); err == nil && dir != "" {
			opts.IndexDir = dir
		}
	}
	return opts, nil
}

// buildRouter loads the library under roots into a registry, builds a
// router over it with the embedder ec describes, and subscribes the router
// to registry reloads (Registry.Reload or Watch), so the indexes follow the
// library. Broken skills are reported in the snapshot, never fatal.
func buildRouter(ctx context.Context, roots []string, lib skills.Options, ec embed.Config, opts router.Options) (*skills.Registry, *router.Router, error) {
	reg, err := loadRegistry(ctx, roots, lib)
	if err != nil {
		return nil, nil, err
	}
	r, err := newRouter(ctx, reg, ec, opts, nil)
	if err != nil {
		return nil, nil, err
	}
	return reg, r, nil
}

// loadRegistry scans the library under roots with opts (libraryOptions),
// on every reload too.
func loadRegistry(ctx context.Context, roots []string, opts skills.Options) (*skills.Registry, error) {
	reg := skills.NewRegistry(roots, opts)
	snap := reg.Snapshot()
	if snap == nil {
		snap = reg.Reload(ctx)
	}
	if err := snap.Err(); err != nil {
		return nil, fmt.Errorf("scanning skills: %w", err)
	}
	return reg, nil
}

// newRouter builds a router over reg's library with the embedder ec
// describes (the slow part: embedding every skill) and keeps it in step
// with reg's reloads. wrap, if set, decorates every embedder the router
// gets (tracing), fitted ones included.
func newRouter(ctx context.Context, reg *skills.Registry, ec embed.Config, opts router.Options, wrap func(router.Embedder) router.Embedder) (*router.Router, error) {
	if opts.WarmDir == "" {
		opts.WarmDir = warmDir(ec, opts.IndexDir, reg.Snapshot().Roots())
	}
	opts, err := withEmbedder(ec, opts)
	if err != nil {
		return nil, err
	}
	if wrap != nil {
		opts.Embedder = wrap(opts.Embedder)
		if fit := opts.Fit; fit != nil {
			opts.Fit = func(corpus []string) router.Embedder { return wrap(fit(corpus)) }
		}
		if restore := opts.Restore; restore != nil {
			opts.Restore = func(state []byte) (router.Embedder, error) {
				e, err := restore(state)
				if err != nil {
					return nil, err
				}
				return wrap(e), nil
			}
		}
	}
	// A settle is a build too: the memory cap is lifted for it as for a
	// reload's (memory.go).
	opts.OnSettle = func() func() { return startRebuild(true) }
	snap := reg.Snapshot()
	done := startRebuild(false)
	r, err := router.New(ctx, snap, opts)
	// Settling is a full collection (~0.3 s at 10,000 skills): beside the
	// first requests, not before them.
	go done()
	if err != nil {
		return nil, err
	}
	// The router builds in the background and keeps serving the previous
	// indexes meanwhile (deleted skills hidden at once); a change that
	// comes while a build runs cancels it rather than queueing behind it.
	// POST /v1/skills/reload waits for the build (syncedLibrary). Handed
	// over before the swap: once the registry lists a skill as gone, the
	// router no longer ranks it.
	// The memory cap is lifted until the build is in place (memory.go).
	reg.OnSwap(func(s *skills.Snapshot) {
		done := startRebuild(true)
		r.Follow(s)
		go func() {
			defer done()
			_ = r.Synced(context.Background()) // failures are the router's to log
		}()
	})
	// A reload that swapped in between New and OnSwap was not seen.
	if cur := reg.Snapshot(); cur != snap {
		if err := r.Update(ctx, cur); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// packText keeps the library's text packed (skills.Snapshot.Pack, ~1 s of
// one core at 10,000 skills; after a reload only the texts that changed
// since the last whole pack) once every router serving it has indexed it,
// for the current snapshot and after every swap; a newer snapshot cancels
// the waiting for, or packing of, an older one. Packing while a router
// still builds would make the build unpack what it reads. Call it after the
// routers subscribed to reg (newRouter), for long-running commands only.
func packText(ctx context.Context, log *slog.Logger, reg *skills.Registry, routers ...*router.Router) {
	var mu sync.Mutex
	stop := func() {}
	var packed *skills.Snapshot // the last one packed whole: unchanged texts are taken from it
	run := func(snap *skills.Snapshot) {
		mu.Lock()
		stop() // OnSwap runs before the swap: snap is the newest
		pctx, cancel := context.WithCancel(ctx)
		stop = cancel
		prev := packed
		mu.Unlock()
		go func() {
			defer cancel()
			for _, r := range routers {
				if r.Synced(pctx) != nil {
					return // cancelled: a newer snapshot's run packs that one
				}
			}
			start := time.Now()
			saved := snap.PackFrom(pctx, prev)
			if pctx.Err() == nil {
				mu.Lock()
				packed = snap
				mu.Unlock()
			}
			log.Debug("skill text packed", "skills", len(snap.Skills()), "saved_mb", saved>>20,
				"took", time.Since(start).Round(time.Millisecond), "whole", pctx.Err() == nil)
		}()
	}
	// In this order a swap in between is missed (its text stays as read
	// until the next one) rather than an old snapshot packed after it.
	run(reg.Snapshot())
	reg.OnSwap(run)
}

// warmDir is where a router keeps its index for the next start
// (router.Options.WarmDir): routing.index_dir when set, else a folder per
// library (its roots) in the cache folder, so processes serving different
// libraries do not take turns overwriting one index. "" when the cache is
// off.
func warmDir(ec embed.Config, indexDir string, roots []string) string {
	if indexDir != "" {
		return indexDir
	}
	cache, err := embed.CacheDir(ec.CacheDir)
	if err != nil || cache == "" {
		return ""
	}
	h := sha256.New()
	for _, root := range roots {
		if abs, err := filepath.Abs(root); err == nil {
			root = abs
		}
		fmt.Fprintf(h, "%d:%s\x00", len(root), root)
	}
	return filepath.Join(cache, "routing", hex.EncodeToString(h.Sum(nil)[:8]))
}
