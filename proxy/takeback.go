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
}

// takeBack removes from the conversation what the request's completed
// rounds added, once a later round was refused (hiddenRounds.refused): the
// client got an error and will retry the turn, which would leave those
// items in the conversation twice. It runs as discardHidden does: in the
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
