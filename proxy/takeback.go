package proxy

import (
	"context"
	"net/http"
	"net/url"
)

// conversationTurn is implemented by requests whose rounds add items to a
// conversation stored upstream (Responses with "conversation"); see
// wire/responses/takeback.go.
type conversationTurn interface {
	// AddedPath says where to list the conversation's newest items, enough
	// of them to hold the n that the request's looping rounds added (path
	// "" if none): a path under /v1, not escaped, and a query.
	AddedPath() (path, query string, n int)
	// TakeBack returns the paths at which those items are deleted, newest
	// first, given the list read at AddedPath; an error when the list's
	// newest items are not exactly those.
	TakeBack(list []byte) ([]string, error)
	// Failed reports whether the last round ended failed upstream
	// (Responses: response.failed or an error event, status "failed").
	Failed() bool
}

// turnFailed reports whether rt's last round ended failed upstream: over
// there, as a refused round is, so the earlier rounds' items are taken
// back. A round cut on the way (a timeout, a broken stream) is not: it may
// still complete upstream and add its items after the others were taken
// back; nor one that ended incomplete, a complete answer.
func turnFailed(rt *routed) bool {
	ct, ok := rt.req.(conversationTurn)
	return ok && ct.Failed()
}

// takeBack removes from the conversation what the request's completed
// rounds added, once a later round was refused (hiddenRounds.refused) or
// ended failed (turnFailed): the client got an error and will retry the
// turn, which would leave those items in the conversation twice. It runs as discardHidden does: in the
// background with the client's credentials and query, within
// discardTimeout, stopped at shutdown, never retried. It deletes newest
// first and stops at the first deletion that fails, so what stays is the
// start of the turn, whose last calls the stored-state repair (state.go)
// answers if they are left without outputs.
func (s *Server) takeBack(rt *routed, in *http.Request) {
	ct, ok := rt.req.(conversationTurn)
	if !ok {
		return
	}
	path, query, n := ct.AddedPath()
	if path == "" {
		return
	}
	hdr := storedObjectHeader(in)
	t, clientQuery := rt.api.target(s), in.URL.RawQuery
	count := func(outcome string, k int) { s.metrics.conversationDeletes.WithLabelValues(outcome).Add(float64(k)) }
	skipped := func(k int) {
		count("skipped", k)
		s.log.Warn("shutting down: a refused turn's items left in the conversation", "path", path, "items", k)
	}
	s.background(in.Context(), func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, discardTimeout)
		defer cancel()
		list, err := s.getStored(ctx, t, hdr, clientQuery, path, query, exchangeAnswer)
		var paths []string
		if err == nil {
			paths, err = ct.TakeBack(list)
		}
		if err != nil {
			if s.bg.ctx.Err() != nil {
				skipped(n)
				return
			}
			count("unmatched", n)
			s.log.Warn("a refused turn's items were left in the conversation", "path", path, "items", n, "error", err)
			return
		}
		for i, p := range paths {
			del := &http.Request{Method: http.MethodDelete, URL: &url.URL{Path: p, RawQuery: clientQuery}, Header: hdr}
			outcome, err := s.deleteStored(ctx, t, del)
			if err != nil && s.bg.ctx.Err() != nil {
				skipped(len(paths) - i)
				return
			}
			count(outcome, 1)
			if err != nil {
				// What is older stays: deleting it and not its answers
				// would leave outputs without their calls.
				count("failed", len(paths)-i-1)
				s.log.Warn("a refused turn's items were left in the conversation", "path", p, "items", len(paths)-i, "outcome", outcome, "error", err)
				return
			}
		}
	}, func() { skipped(n) })
}
