package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/skillrouter/skillrouter/internal/redact"
)

// The router tells embedder trouble apart with errors.Is: ErrUnavailable is
// transient (slow, down, overloaded, timed out) and worth trying again later;
// ErrMisconfigured needs a person (bad key, unknown model, wrong URL).
var (
	ErrUnavailable   = errors.New("embedder unavailable")
	ErrMisconfigured = errors.New("embedder misconfigured")
)

// ErrMalformedResponse marks a response that does not match the provider's
// wire format (bad JSON, wrong number of vectors, mixed dimensions). It is
// also an ErrUnavailable: a proxy in the way or an overloaded server produce
// these, and a retry may succeed.
var ErrMalformedResponse = errors.New("malformed embedding response")

func unavailable(provider string, err error) error {
	return fmt.Errorf("%s: %w: %w", provider, ErrUnavailable, err)
}

func misconfigured(provider string, err error) error {
	return fmt.Errorf("%s: %w: %w", provider, ErrMisconfigured, err)
}

// statusError classifies an HTTP error status and says whether a retry can
// help: 408, 429 and 5xx are the server's momentary trouble; other 4xx (400
// bad input, 401/403 bad key, 404 unknown model or path) fail the same way
// again.
func statusError(provider string, status int, err error) (error, bool) {
	if status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500 {
		return unavailable(provider, err), true
	}
	return misconfigured(provider, err), false
}

// transportError classifies an error without an HTTP status (connection
// refused, DNS, reset, timeout): transient, retried — unless the caller's own
// context ended, when retrying is pointless.
func transportError(ctx context.Context, provider string, err error) (error, bool) {
	if ctx.Err() != nil {
		return unavailable(provider, err), false
	}
	return unavailable(provider, err), true
}

// redactedURLError hides credentials in the URL a transport error names
// (net/http's *url.Error quotes the whole request URL): the error reaches
// logs, the access log's fallback_reason and /v1/skills/route answers.
func redactedURLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	c := *ue
	c.URL = redact.URL(c.URL)
	return &c
}
