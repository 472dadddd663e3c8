package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/skillrouter/skillrouter/internal/redact"
)

// Defaults for the OpenAI-compatible provider.
const (
	DefaultOpenAIModel   = "text-embedding-3-small"
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
)

// maxErrorBody bounds how much of an error response is kept for the message.
const maxErrorBody = 4 << 10

// OpenAI embeds through any OpenAI-compatible POST {base}/embeddings
// endpoint: OpenAI, vLLM, LM Studio, llama.cpp server, TEI, LiteLLM.
type OpenAI struct {
	*remote
	client   *http.Client
	endpoint string // the base URL's path joined with /embeddings, its query kept
	shown    string // endpoint as errors show it: credentials redacted
	key      string
	model    string
	askDims  int // the `dimensions` request field; 0 = the model's own
}

// NewOpenAI configures the provider. BaseURL defaults to the OpenAI API and
// APIKey to $OPENAI_API_KEY; local servers need no key.
func NewOpenAI(cfg Config) (*OpenAI, error) {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, misconfigured("openai", fmt.Errorf("base URL %q: want http(s)://host[:port]/path", redact.URL(base)))
	}
	key := cfg.APIKey
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	if key == "" && u.Host == "api.openai.com" {
		// It would answer every call 401: say so before any is made.
		return nil, misconfigured("openai", errors.New("api.openai.com needs a key: set embedder.api_key or OPENAI_API_KEY, or embedder.base_url for a local OpenAI-compatible server"))
	}
	model := cfg.Model
	if model == "" {
		model = DefaultOpenAIModel
	}
	return &OpenAI{
		remote:   newRemote("openai", cfg),
		client:   &http.Client{Transport: cfg.Transport},
		endpoint: u.JoinPath("embeddings").String(),
		shown:    redact.URL(u.JoinPath("embeddings").String()),
		key:      key,
		model:    model,
		askDims:  max(cfg.Dimensions, 0),
	}, nil
}

// Name implements the router's Embedder.
func (o *OpenAI) Name() string { return "openai" }

// Model implements the router's Embedder.
func (o *OpenAI) Model() string { return o.model }

// Dimensions is the requested size, or the size learned from the first
// response (0 before it).
func (o *OpenAI) Dimensions() int { return int(o.dims.Load()) }

// Embed embeds queries: one attempt (see remote.embedQuery).
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.embedQuery(ctx, nonEmpty(texts), o.call)
}

// EmbedDocuments embeds documents (skills), retrying a failed batch.
func (o *OpenAI) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return o.embed(ctx, nonEmpty(texts), o.call)
}

// The API rejects empty strings in input; a skill with an empty body part
// still needs a vector, so empty texts are sent as a single space.
func nonEmpty(texts []string) []string {
	var out []string
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			if out == nil {
				out = append([]string(nil), texts...)
			}
			out[i] = " "
		}
	}
	if out == nil {
		return texts
	}
	return out
}

type openAIRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type openAIResponse struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
}

type openAIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

func (o *OpenAI) call(ctx context.Context, batch []string) ([][]float32, bool, error) {
	body, err := json.Marshal(openAIRequest{
		Model:          o.model,
		Input:          batch,
		EncodingFormat: "float",
		Dimensions:     o.askDims,
	})
	if err != nil {
		return nil, false, misconfigured("openai", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, false, misconfigured("openai", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if o.key != "" {
		req.Header.Set("Authorization", "Bearer "+o.key)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		e, retry := transportError(ctx, "openai", redactedURLError(err))
		return nil, retry, e
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		msg := strings.TrimSpace(string(raw))
		var oe openAIError
		if json.Unmarshal(raw, &oe) == nil && oe.Error.Message != "" {
			msg = oe.Error.Message
		}
		e, retry := statusError("openai", resp.StatusCode, fmt.Errorf("POST %s: %s: %s", o.shown, resp.Status, msg))
		if retry {
			e = withRetryAfter(e, resp.Header, time.Now())
		}
		return nil, retry, e
	}
	var out openAIResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		if ctx.Err() != nil {
			e, retry := transportError(ctx, "openai", err)
			return nil, retry, e
		}
		return nil, true, unavailable("openai", fmt.Errorf("%w: %w", ErrMalformedResponse, err))
	}
	// data[] is documented as ordered by index, but servers differ; place
	// each vector by its index and reject gaps or duplicates.
	vecs := make([][]float32, len(batch))
	if len(out.Data) != len(batch) {
		return nil, true, unavailable("openai", fmt.Errorf("%w: %d embeddings for %d inputs", ErrMalformedResponse, len(out.Data), len(batch)))
	}
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(batch) || vecs[d.Index] != nil {
			return nil, true, unavailable("openai", fmt.Errorf("%w: bad or repeated index %d", ErrMalformedResponse, d.Index))
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, false, nil
}
