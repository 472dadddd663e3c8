// Package embed provides the embedding providers the router ranks with:
// builtin (offline, default), ollama and any OpenAI-compatible endpoint,
// plus an on-disk embedding cache.
package embed

// CONTRACT STUB — replaced by the embed owner. Keep these names.

import "time"

// Config selects and configures a provider. Zero values take defaults.
type Config struct {
	Provider   string        `yaml:"provider"`   // builtin (default) | ollama | openai
	Model      string        `yaml:"model"`      // ollama default nomic-embed-text; openai default text-embedding-3-small
	BaseURL    string        `yaml:"base_url"`   // ollama: OLLAMA_HOST or http://127.0.0.1:11434; openai: https://api.openai.com/v1
	APIKey     string        `yaml:"api_key"`    // openai; default $OPENAI_API_KEY
	Dimensions int           `yaml:"dimensions"` // openai optional `dimensions`; builtin vector size
	BatchSize  int           `yaml:"batch_size"` // texts per remote call; default 64
	Timeout    time.Duration `yaml:"timeout"`    // per remote call; default 30s
	Retries    int           `yaml:"retries"`    // bounded retries with backoff; default 2
	CacheDir   string        `yaml:"cache_dir"`  // default $XDG_CACHE_HOME/skillrouter; "-" disables
}
