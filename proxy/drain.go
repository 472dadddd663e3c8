package proxy

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// How requests end, for the access log and the outcome label of
// skillrouter_requests_total: the status says what the client was told
// first; the outcome whether it got all of it, or that the proxy would
// not relay it.
const (
	outcomeComplete     = "complete"      // the response was delivered whole (any status)
	outcomeStreamError  = "stream_error"  // a started stream ended with an error event (upstream error, timeout, malformed event, tool loop)
	outcomeClientClosed = "client_closed" // the client went away first (status 499)
	outcomeShutdown     = "shutdown"      // the server's shutdown grace ended first
	// A request upstream.passthrough does not allow, answered 404 (passallow.go).
	outcomePassthroughRefused = "passthrough_refused"
)

// codeShutdown is the error code of requests ended by Drain.
const codeShutdown = "server_shutdown"

// errShutdown is the cause of request contexts that Drain ended.
var errShutdown = errors.New("skillrouter is shutting down: the request was ended at the end of the shutdown grace; retry it")

// requestContext derives the context of one proxied request: it ends when
// the client goes away or when Drain is called. done releases it.
func (s *Server) requestContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(s.drainCtx, func() { cancel(errShutdown) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// shutdownFailure is how a request ended by Drain is answered: 503 when
// nothing was sent yet, else the API's error event.
func shutdownFailure() failure {
	return failure{status: http.StatusServiceUnavailable, code: codeShutdown, msg: errShutdown.Error()}
}

// Drain ends the requests still in flight, for a server whose shutdown
// grace is over (http.Server.Shutdown did not finish in time): a stream
// gets a final error event in its API's format, a request still waiting
// for the upstream a 503 in its envelope; both are logged and counted with
// outcome "shutdown". It returns once every handler has returned, or when
// ctx ends; call http.Server.Close after it.
func (s *Server) Drain(ctx context.Context) error {
	s.drainCancel(errShutdown)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// InFlight is the number of requests being served.
func (s *Server) InFlight() int64 { return s.inflight.Load() }

// inflightCounter counts the requests observe is serving.
type inflightCounter = atomic.Int64
