package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Defaults for remote providers.
const (
	DefaultBatchSize = 64
	DefaultTimeout   = 30 * time.Second
	DefaultRetries   = 2
	backoffBase      = 200 * time.Millisecond
	backoffMax       = 5 * time.Second
	// maxRetryWait is the longest Retry-After a library batch waits out
	// before trying again; a longer one fails the batch, and the router
	// retries the whole build later.
	maxRetryWait = 30 * time.Second
)

// callFunc embeds one batch. It returns the vectors, or an error and whether
// trying again may succeed.
type callFunc func(ctx context.Context, batch []string) ([][]float32, bool, error)

// remote holds what the HTTP providers share: batching, a timeout per call,
// bounded retries with exponential backoff, normalization and the learned
// dimension.
type remote struct {
	provider  string
	batchSize int
	timeout   time.Duration
	retries   int
	dims      atomic.Int64 // configured, or learned from the first response
	sleep     func(ctx context.Context, d time.Duration) error
}

func newRemote(provider string, cfg Config) *remote {
	r := &remote{
		provider: provider,
		sleep:    sleepCtx,
	}
	eff := cfg.Effective()
	r.batchSize, r.timeout, r.retries = eff.BatchSize, eff.Timeout, max(eff.Retries, 0)
	r.dims.Store(int64(cfg.Dimensions))
	return r
}

// embed runs documents through call in batches, in order, retrying a batch
// that failed in a way that may pass.
func (r *remote) embed(ctx context.Context, texts []string, call callFunc) ([][]float32, error) {
	return r.batches(ctx, texts, call, r.retries)
}

// embedQuery runs a query through call once: the router waits for it
// within a latency budget (250 ms by default) and ranks with BM25 without
// it, so a retry after a backoff of 100–400 ms would only make every
// request wait out the budget while the embedder is down.
func (r *remote) embedQuery(ctx context.Context, texts []string, call callFunc) ([][]float32, error) {
	return r.batches(ctx, texts, call, 0)
}

func (r *remote) batches(ctx context.Context, texts []string, call callFunc, retries int) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += r.batchSize {
		end := min(start+r.batchSize, len(texts))
		vecs, err := r.withRetry(ctx, texts[start:end], call, retries)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (r *remote) withRetry(ctx context.Context, batch []string, call callFunc, retries int) ([][]float32, error) {
	var last error
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		vecs, retry, err := call(cctx, batch)
		// A call cut by its own timeout (a model still loading) may pass
		// next time; the call sees only that its context ended.
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err != nil && timedOut {
			retry = true
		}
		if err == nil {
			if err = r.check(vecs, len(batch)); err == nil {
				return vecs, nil
			}
			retry = !errors.Is(err, ErrMisconfigured)
		}
		last = err
		if !retry || attempt >= retries || ctx.Err() != nil {
			break
		}
		d := backoffBase << attempt
		d = min(d, backoffMax)
		d = d/2 + rand.N(d/2+1) // jitter: many proxies restarting together should not retry in step
		if wait, ok := RetryAfter(err); ok {
			if wait > maxRetryWait {
				break // the background retry comes back later (see the router)
			}
			d = max(d, wait)
		}
		if err := r.sleep(ctx, d); err != nil {
			break
		}
	}
	if errors.Is(last, ErrUnavailable) || errors.Is(last, ErrMisconfigured) {
		return nil, last
	}
	return nil, unavailable(r.provider, last)
}

// check validates the vectors of one batch and normalizes them in place.
func (r *remote) check(vecs [][]float32, want int) error {
	if len(vecs) != want {
		return unavailable(r.provider, fmt.Errorf("%w: %d vectors for %d inputs", ErrMalformedResponse, len(vecs), want))
	}
	dim := int(r.dims.Load())
	for i, v := range vecs {
		if len(v) == 0 {
			return unavailable(r.provider, fmt.Errorf("%w: empty vector at %d", ErrMalformedResponse, i))
		}
		if dim == 0 {
			dim = len(v)
			r.dims.CompareAndSwap(0, int64(dim))
		}
		if len(v) != dim {
			return misconfigured(r.provider, fmt.Errorf("%w: vector %d has %d dimensions, want %d", ErrMalformedResponse, i, len(v), dim))
		}
		if allZero(v) {
			return unavailable(r.provider, fmt.Errorf("%w: vector %d is all zeros", ErrMalformedResponse, i))
		}
		normalize(v)
	}
	return nil
}

// allZero reports a vector no model embeds a non-empty text as but a
// server in trouble answers (a stub, a model that overflowed): it would
// leave its skill unreachable by similarity without a word in the log.
func allZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// normalize scales v to unit length in place (the router compares by dot
// product); a zero vector stays zero.
func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 || math.Abs(s-1) < 1e-6 {
		return
	}
	k := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= k
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
