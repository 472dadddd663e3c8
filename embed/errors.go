package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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

// maxRetryAfter bounds a Retry-After the embedder is taken at: a quota
// exhausted for hours still gets a try every few minutes.
const maxRetryAfter = 5 * time.Minute

// retryAfterError is an error from a server that said how long to wait
// (a 429's or 503's Retry-After). The router reads it through its
// RetryAfter method: its breaker stays open that long instead of spending
// a query's round trip on every request until it has counted failures.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %v)", e.err, e.after)
}
func (e *retryAfterError) Unwrap() error             { return e.err }
func (e *retryAfterError) RetryAfter() time.Duration { return e.after }

// RetryAfter reports how long the embedder asked to be left alone, if an
// error on err's chain says so.
func RetryAfter(err error) (time.Duration, bool) {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.after, true
	}
	return 0, false
}

// withRetryAfter attaches the wait h asks for (OpenAI's retry-after-ms,
// else Retry-After in seconds or as an HTTP date), capped at maxRetryAfter;
// err is returned as it is when h asks for nothing readable.
func withRetryAfter(err error, h http.Header, now time.Time) error {
	var d time.Duration
	if ms, perr := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); perr == nil && ms > 0 {
		d = time.Duration(ms * float64(time.Millisecond))
	} else if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, perr := strconv.ParseFloat(v, 64); perr == nil {
			d = time.Duration(s * float64(time.Second))
		} else if t, perr := http.ParseTime(v); perr == nil {
			d = t.Sub(now)
		}
	}
	if d <= 0 {
		return err
	}
	return &retryAfterError{err: err, after: min(d, maxRetryAfter)}
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
