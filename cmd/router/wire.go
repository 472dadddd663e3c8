package main

// Wiring shared by the commands that rank a library (route, serve, bench):
// the flags choosing the library, strategy and embedder, and buildRouter,
// which loads the library, fits the builtin embedder to it and keeps the
// router's indexes in step with registry reloads.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// libraryFlags are the flags of every command that ranks a library. Each
// embedder flag falls back to an environment variable, so a deployment can
// keep keys out of its command line.
type libraryFlags struct {
	skills     []string
	strategy   string
	embedder   string
	embedModel string
	embedURL   string
	embedKey   string
	topK       int
}

// register adds the flags to fs.
func (f *libraryFlags) register(fs *pflag.FlagSet) {
	addSkillsFlag(fs, &f.skills)
	fs.StringVar(&f.strategy, "strategy", envOr("SKILLROUTER_STRATEGY", string(router.DefaultStrategy)),
		"ranking strategy: keyword, bm25, embedding or hybrid (env SKILLROUTER_STRATEGY)")
	fs.StringVar(&f.embedder, "embedder", envOr("SKILLROUTER_EMBEDDER", embed.ProviderBuiltin),
		"embedding provider: builtin (offline), ollama or openai (any OpenAI-compatible /v1/embeddings) (env SKILLROUTER_EMBEDDER)")
	fs.StringVar(&f.embedModel, "embed-model", os.Getenv("SKILLROUTER_EMBED_MODEL"),
		"embedding model (default nomic-embed-text for ollama, text-embedding-3-small for openai) (env SKILLROUTER_EMBED_MODEL)")
	fs.StringVar(&f.embedURL, "embed-url", os.Getenv("SKILLROUTER_EMBED_URL"),
		"embedding endpoint base URL (default $OLLAMA_HOST or http://127.0.0.1:11434 for ollama, https://api.openai.com/v1 for openai) (env SKILLROUTER_EMBED_URL)")
	fs.StringVar(&f.embedKey, "embed-key", "",
		"API key for the openai provider (env SKILLROUTER_EMBED_KEY, then OPENAI_API_KEY)")
	fs.IntVar(&f.topK, "top-k", router.DefaultMaxAutoLoad, "skills auto-loaded at most per request (0 = none)")
}

// embedConfig is the embedder configuration the flags describe.
func (f *libraryFlags) embedConfig() embed.Config {
	key := f.embedKey
	if key == "" {
		key = os.Getenv("SKILLROUTER_EMBED_KEY")
	}
	return embed.Config{Provider: f.embedder, Model: f.embedModel, BaseURL: f.embedURL, APIKey: key}
}

// routerOptions are the ranking options the flags describe.
func (f *libraryFlags) routerOptions() (router.Options, error) {
	s := router.Strategy(f.strategy)
	if !router.ValidStrategy(s) {
		return router.Options{}, fmt.Errorf("--strategy %q: want keyword, bm25, embedding or hybrid", f.strategy)
	}
	if f.topK < 0 {
		return router.Options{}, fmt.Errorf("--top-k %d: must be 0 or more", f.topK)
	}
	topK := f.topK
	if topK == 0 {
		topK = -1 // router.Options: 0 means the default, <0 none
	}
	return router.Options{Strategy: s, MaxAutoLoad: topK}, nil
}

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
func buildRouter(ctx context.Context, roots []string, ec embed.Config, opts router.Options) (*skills.Registry, *router.Router, error) {
	reg, err := loadRegistry(ctx, roots)
	if err != nil {
		return nil, nil, err
	}
	r, err := newRouter(ctx, reg, ec, opts, nil)
	if err != nil {
		return nil, nil, err
	}
	return reg, r, nil
}

// loadRegistry scans the library under roots.
func loadRegistry(ctx context.Context, roots []string) (*skills.Registry, error) {
	reg := skills.NewRegistry(roots, skills.Options{})
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
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	snap := reg.Snapshot()
	done := startRebuild()
	r, err := router.New(ctx, snap, opts)
	done()
	if err != nil {
		return nil, err
	}
	reg.OnReload(func(s *skills.Snapshot) {
		// Reloads outlive the request that started the process; the
		// router keeps serving the previous indexes while this builds.
		defer startRebuild()()
		if err := r.Update(context.Background(), s); err != nil {
			log.Error("rebuilding routing index after reload", "err", err)
		}
	})
	// A reload that swapped in between New and OnReload was not seen.
	if cur := reg.Snapshot(); cur != snap {
		if err := r.Update(ctx, cur); err != nil {
			return nil, err
		}
	}
	return r, nil
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

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
