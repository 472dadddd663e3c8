package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/skillrouter/skillrouter/wire"
)

// bodyBudget bounds the routed request bodies held at once. BodyLimit
// bounds one body, max_connections how many; their product is no bound a
// machine has (1,024 × 32 MiB), and a parsed request holds several times
// its body (a message's role, text and view each take memory of their
// own: ~8× for a body of tiny messages) from the read until its answer
// ends. A request takes from the budget as its body's bytes arrive, a step
// ahead of them (heldStep), and what its decoded form needs after
// (compressed); it gives it all back when it is answered. It does not take
// its Content-Length up front: a client that declares 32 MiB and sends a
// byte a second would hold 32 MiB of the budget for as long as
// server.body_timeout lets it, and a handful of such clients would keep
// every other routed request waiting. One that does not fit waits, in
// arrival order, up to bodyBudgetWait; then it is answered 503, as a full
// connection table is. A request never waits while holding part of the
// budget: the requests waiting before it might need that part (two
// compressed bodies would each wait for the other), so it gives it back
// first and waits for the whole. (What it has read by then stays in its
// buffer uncounted while it waits: at most one body per waiting request.)
type bodyBudget struct {
	sem   *semaphore.Weighted // nil: no bound
	limit int64
	held  atomic.Int64
	wait  atomic.Int64 // how long a request waits for room (bodyBudgetWait; tests shorten it)
}

// codeServerBusy is the error code of a request the budget had no room
// for; it is answered with Retry-After.
const codeServerBusy = "server_busy"

// bodyBudgetWait is how long a request waits for room in the budget.
const bodyBudgetWait = 30 * time.Second

func newBodyBudget(limit int64) *bodyBudget {
	b := &bodyBudget{}
	if limit > 0 {
		b.sem, b.limit = semaphore.NewWeighted(limit), limit
	}
	b.wait.Store(int64(bodyBudgetWait))
	return b
}

// bodyHold is what one request took from the budget.
type bodyHold struct {
	b *bodyBudget
	n int64
}

// grow takes from the budget until the request holds n bytes (at most the
// whole budget: a body the budget cannot hold waits for all of it).
func (h *bodyHold) grow(ctx context.Context, n int64) *wire.Error {
	if h.b.sem != nil {
		n = min(n, h.b.limit)
	}
	more := n - h.n
	if more <= 0 {
		return nil
	}
	if h.b.sem != nil && !h.b.sem.TryAcquire(more) {
		h.release() // never wait holding a part (see bodyBudget)
		more = n
		wait := time.Duration(h.b.wait.Load())
		wctx, cancel := context.WithTimeout(ctx, wait)
		err := h.b.sem.Acquire(wctx, n)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return &wire.Error{Status: statusClientClosed, Kind: wire.KindInvalidRequest, Code: "client_closed",
					Message: "client went away while its request waited for memory"}
			}
			return &wire.Error{Status: http.StatusServiceUnavailable, Kind: wire.KindServer, Code: codeServerBusy,
				Message: fmt.Sprintf("the proxy holds as many request bodies as server.body_memory allows (%d bytes) and none ended within %s; retry shortly", h.b.limit, wait)}
		}
	}
	h.n = n
	h.b.held.Add(more)
	return nil
}

// release gives back what the request held.
func (h *bodyHold) release() { h.shrink(0) }

// heldStep is how far ahead of a body's arrived bytes its hold runs: the
// most a client that sends slowly holds beyond what it sent (1,024
// connections × 64 KiB is half the default budget).
const heldStep = 64 << 10

// heldReader takes from the budget as a body's bytes arrive, ahead of them
// by up to heldStep and never beyond a declared Content-Length (size, or
// -1 when chunked).
type heldReader struct {
	io.Reader
	ctx  context.Context
	h    *bodyHold
	size int64
	read int64
}

func (r *heldReader) Read(p []byte) (int, error) {
	n, err := r.Reader.Read(p)
	r.read += int64(n)
	if r.read > r.h.n {
		if werr := r.h.grow(r.ctx, r.ahead()); werr != nil {
			return n, &budgetError{werr}
		}
	}
	return n, err
}

// ahead is what the hold should reach now: a step past the bytes read,
// never past the declared length.
func (r *heldReader) ahead() int64 {
	want := r.read + heldStep
	if r.size >= 0 {
		want = min(want, r.size)
	}
	return want
}

// budgetError ends a body read that found no room in the budget.
type budgetError struct{ werr *wire.Error }

func (e *budgetError) Error() string { return e.werr.Message }

// readHeldBody reads a routed request's body as readBody does, holding its
// size in s's body budget; the caller releases the hold when the request
// is answered.
func (s *Server) readHeldBody(r *http.Request) ([]byte, *bodyHold, *wire.Error) {
	h := &bodyHold{b: s.bodies}
	// The hold reads through r.Body without replacing it: net/http must
	// still see its own reader after the handler, to answer a client that
	// waited for 100 Continue and to close the connection of a body left
	// unread over the limit.
	hr := &heldReader{Reader: r.Body, ctx: r.Context(), h: h, size: r.ContentLength}
	// The first step is taken before the first byte is read: net/http
	// sends a client that waits for 100 Continue its go-ahead on that
	// read, so a request that finds no room is answered 503 before it
	// sends its body, not after (a body over the limit is refused unread
	// by readBody, and takes nothing).
	if cl := r.ContentLength; cl != 0 && cl <= s.cfg.BodyLimit {
		if werr := h.grow(r.Context(), hr.ahead()); werr != nil {
			return nil, h, werr
		}
	}
	body, werr := readBody(r, hr, s.cfg.BodyLimit)
	if werr != nil {
		return nil, h, werr
	}
	// What the body turned out to need: its decoded size, or less than
	// the reading's step ahead.
	if n := int64(len(body)); n > h.n {
		if werr := h.grow(r.Context(), n); werr != nil {
			return nil, h, werr
		}
	} else {
		h.shrink(n)
	}
	return body, h, nil
}

// shrink gives back what the request holds beyond n bytes.
func (h *bodyHold) shrink(n int64) {
	if less := h.n - n; less > 0 {
		if h.b.sem != nil {
			h.b.sem.Release(less)
		}
		h.b.held.Add(-less)
		h.n = n
	}
}
