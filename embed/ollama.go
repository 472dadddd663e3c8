package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/envconfig"

	"github.com/skillrouter/skillrouter/internal/redact"
)

// DefaultOllamaModel is the model used when Config.Model is empty.
const DefaultOllamaModel = "nomic-embed-text"

// Ollama embeds through a local or remote Ollama server's /api/embed, using
// the official client.
type Ollama struct {
	*remote
	client *api.Client
	model  string
	host   string
}

// NewOllama configures an Ollama embedder. The host is Config.BaseURL, else
// $OLLAMA_HOST, else http://127.0.0.1:11434 (the client's own rules for
// OLLAMA_HOST apply: "host:port" and bare hosts work too).
func NewOllama(cfg Config) (*Ollama, error) {
	model := cfg.Model
	if model == "" {
		model = DefaultOllamaModel
	}
	var client *api.Client
	host := cfg.BaseURL
	if host == "" {
		var err error
		client, err = api.ClientFromEnvironment()
		if err != nil {
			return nil, misconfigured("ollama", err)
		}
		if cfg.Transport != nil {
			// The client's own reading of OLLAMA_HOST, with our transport.
			client = api.NewClient(envconfig.Host(), &http.Client{Transport: cfg.Transport})
		}
		host = os.Getenv("OLLAMA_HOST")
		if host == "" {
			host = "http://127.0.0.1:11434"
		}
	} else {
		u, err := url.Parse(host)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, misconfigured("ollama", fmt.Errorf("base URL %q: want scheme://host[:port]", host))
		}
		// The client joins API paths onto the base; "/api" in a user's URL
		// would be doubled.
		u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api")
		hc := http.DefaultClient
		if cfg.Transport != nil {
			hc = &http.Client{Transport: cfg.Transport}
		}
		client = api.NewClient(u, hc)
	}
	return &Ollama{remote: newRemote("ollama", cfg), client: client, model: model, host: redact.URL(host)}, nil
}

// Name implements the router's Embedder.
func (o *Ollama) Name() string { return "ollama" }

// Model implements the router's Embedder.
func (o *Ollama) Model() string { return o.model }

// Dimensions is the configured size, or the size learned from the first
// response (0 before it).
func (o *Ollama) Dimensions() int { return int(o.dims.Load()) }

// Embed embeds queries, in one attempt (see remote.embedQuery). Models
// trained with task prefixes (nomic-embed-text) get their query prefix.
func (o *Ollama) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.embedQuery(ctx, withPrefix(nonEmpty(texts), o.queryPrefix()), o.call)
}

// EmbedDocuments embeds documents (skills), with the document prefix where
// the model has one.
func (o *Ollama) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return o.embed(ctx, withPrefix(nonEmpty(texts), o.documentPrefix()), o.call)
}

// nomic-embed-text was trained with "search_query: " / "search_document: "
// task prefixes and ranks noticeably worse without them.
func (o *Ollama) queryPrefix() string {
	if strings.HasPrefix(o.model, "nomic-embed-text") {
		return "search_query: "
	}
	return ""
}

func (o *Ollama) documentPrefix() string {
	if strings.HasPrefix(o.model, "nomic-embed-text") {
		return "search_document: "
	}
	return ""
}

func withPrefix(texts []string, p string) []string {
	if p == "" {
		return texts
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = p + t
	}
	return out
}

func (o *Ollama) call(ctx context.Context, batch []string) ([][]float32, bool, error) {
	truncate := true // a long skill body must not fail the whole batch
	req := &api.EmbedRequest{
		Model:      o.model,
		Input:      batch,
		Truncate:   &truncate,
		Dimensions: int(o.dims.Load()),
	}
	resp, err := o.client.Embed(ctx, req)
	if err != nil {
		var se api.StatusError
		if errors.As(err, &se) {
			err = fmt.Errorf("POST %s/api/embed: HTTP %d: %w", o.host, se.StatusCode, err)
			if se.StatusCode == http.StatusNotFound {
				err = fmt.Errorf("%w (pull it with `ollama pull %s`)", err, o.model)
			}
			e, retry := statusError("ollama", se.StatusCode, err)
			return nil, retry, e
		}
		var ae api.AuthorizationError
		if errors.As(err, &ae) {
			return nil, false, misconfigured("ollama", err)
		}
		var ue *url.Error
		if errors.As(err, &ue) || ctx.Err() != nil {
			e, retry := transportError(ctx, "ollama", fmt.Errorf("%s: %w", o.host, redactedURLError(err)))
			return nil, retry, e
		}
		// A body that is not JSON (a proxy's HTML error page) or a
		// response of the wrong shape.
		return nil, true, unavailable("ollama", fmt.Errorf("%w: %w", ErrMalformedResponse, err))
	}
	return resp.Embeddings, false, nil
}
