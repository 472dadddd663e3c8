// Package embed provides the embedding providers the router ranks with:
// builtin (offline, default), ollama and any OpenAI-compatible endpoint,
// plus an on-disk embedding cache.
package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Config selects and configures a provider. Zero values take defaults.
type Config struct {
	Provider   string        `yaml:"provider"`   // builtin (default) | ollama | openai
	Model      string        `yaml:"model"`      // ollama default nomic-embed-text; openai default text-embedding-3-small
	BaseURL    string        `yaml:"base_url"`   // ollama: OLLAMA_HOST or http://127.0.0.1:11434; openai: https://api.openai.com/v1
	APIKey     string        `yaml:"api_key"`    // openai; default $OPENAI_API_KEY
	Dimensions int           `yaml:"dimensions"` // openai optional `dimensions`; builtin vector size
	BatchSize  int           `yaml:"batch_size"` // texts per remote call; default 64
	Timeout    time.Duration `yaml:"timeout"`    // per remote call; default 30s
	Retries    int           `yaml:"retries"`    // bounded retries with backoff; default 2; <0 = none
	CacheDir   string        `yaml:"cache_dir"`  // default $XDG_CACHE_HOME/skillrouter; "-" disables

	// Transport sends the remote providers' HTTP requests (nil: the
	// default); cmd/router sets a tracing one. Not configuration: no YAML.
	Transport http.RoundTripper `yaml:"-"`
}

// Embedder is what every provider here offers; it is the method set of the
// router's Embedder, so values returned by New plug straight in.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Name() string
	Model() string
	Dimensions() int
}

// DocumentEmbedder is implemented by embedders that embed documents
// differently from queries (task prefixes, the disk cache). Callers embedding
// a library should prefer it when present.
type DocumentEmbedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
}

// Provider names.
const (
	ProviderBuiltin = "builtin"
	ProviderOllama  = "ollama"
	ProviderOpenAI  = "openai"
)

// Providers lists the provider names, for validation and help texts.
var Providers = []string{ProviderBuiltin, ProviderOllama, ProviderOpenAI}

// New returns the configured provider. Remote providers are wrapped in the
// disk cache (unless CacheDir is "-"); the builtin is not, because computing
// its vectors is cheaper than reading them from disk. The builtin comes back
// unfitted: the router fits it to each library through Options.Fit.
func New(cfg Config) (Embedder, error) {
	switch cfg.Provider {
	case "", ProviderBuiltin:
		if cfg.Dimensions == 1 {
			// Slot 0 is reserved for unseen words: one slot leaves none to hash into.
			return nil, misconfigured(ProviderBuiltin, errors.New("dimensions must be at least 2"))
		}
		return NewBuiltin(cfg), nil
	case ProviderOllama:
		o, err := NewOllama(cfg)
		if err != nil {
			return nil, err
		}
		return withCache(o, cfg)
	case ProviderOpenAI:
		o, err := NewOpenAI(cfg)
		if err != nil {
			return nil, err
		}
		return withCache(o, cfg)
	default:
		return nil, misconfigured(cfg.Provider, fmt.Errorf("unknown provider %q (want builtin, ollama or openai)", cfg.Provider))
	}
}

func withCache(e Embedder, cfg Config) (Embedder, error) {
	dir, err := CacheDir(cfg.CacheDir)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return e, nil
	}
	return NewCache(e, dir, cfg.Dimensions), nil
}

// Effective returns c with the values a zero field stands for: the batch
// size, timeout and retries of remote providers, and the builtin's
// dimensions. Retries below zero (none) stay as they are.
func (c Config) Effective() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	if c.Dimensions <= 0 && (c.Provider == "" || c.Provider == "builtin") {
		c.Dimensions = DefaultBuiltinOptions.Dimensions
	}
	return c
}
