package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"time"

	"github.com/skillrouter/skillrouter/wire"
)

// hiddenStored is implemented by requests whose hidden rounds leave a
// response stored upstream (Responses with store left true); see
// wire/responses/state.go.
type hiddenStored interface {
	// HiddenPath is where the response a round that loops (ans) left can
	// be deleted once the request is over; "" when it must stay.
	HiddenPath(ans *wire.Answer) string
}

// hiddenRounds collects, over one request, the stored responses of its
// hidden rounds that the client never gets an id for: in a JSON answer
// every round's but the last, in a stream every round's but the one
// response.created named (see announced) and the last. The client can neither
// read them back nor delete them, and each holds the whole input, the
// catalog and the skill bodies, so the proxy deletes them; HiddenPath
// keeps those the client still depends on (it got items of them).
//
// refused: a round after the first was refused (the upstream answered an
// error status: it stored nothing of that round), or a stream's follow-up
// could not be built; what the earlier rounds added to a conversation is
// taken back (takeBack), as after a round that ended failed (turnFailed).
type hiddenRounds struct {
	paths   []string
	refused bool
}

// answered notes the upstream's status for round.
func (h *hiddenRounds) answered(round, status int) {
	if round > 0 && status != http.StatusOK {
		h.refused = true
	}
}

func (h *hiddenRounds) add(rt *routed, ans *wire.Answer) {
	if hs, ok := rt.req.(hiddenStored); ok {
		if p := hs.HiddenPath(ans); p != "" {
			h.paths = append(h.paths, p)
		}
	}
}

// keep takes the stored response id off the list: the client got it.
func (h *hiddenRounds) keep(id string) {
	if id == "" {
		return
	}
	h.paths = slices.DeleteFunc(h.paths, func(p string) bool { return path.Base(p) == id })
}

// discardTimeout bounds the deletion of one request's hidden responses.
const discardTimeout = 30 * time.Second

// discardHidden deletes h's responses upstream with the client's
// credentials and query (as the stored-state read does), in the
// background: the client has its answer (or is gone) and waits for none
// of it. Best effort: a failure is counted and logged, never retried.
func (s *Server) discardHidden(rt *routed, in *http.Request, h *hiddenRounds) {
	if h.refused || turnFailed(rt) {
		s.takeBack(rt, in)
	}
	if len(h.paths) == 0 {
		return
	}
	hdr := storedObjectHeader(in)
	t, query, paths := rt.api.target(s), in.URL.RawQuery, h.paths
	skipped := func(paths []string) {
		s.metrics.hiddenDeletes.WithLabelValues("skipped").Add(float64(len(paths)))
		s.log.Warn("shutting down: hidden rounds' stored responses left undeleted", "paths", paths)
	}
	s.background(in.Context(), func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, discardTimeout)
		defer cancel()
		for i, p := range paths {
			del := &http.Request{Method: http.MethodDelete, URL: &url.URL{Path: p, RawQuery: query}, Header: hdr}
			outcome, err := s.deleteStored(ctx, t, del)
			if err != nil && s.bg.ctx.Err() != nil {
				skipped(paths[i:]) // cut short by shutdown, not refused
				return
			}
			s.metrics.hiddenDeletes.WithLabelValues(outcome).Inc()
			if err != nil {
				s.log.Warn("a hidden round's stored response was not deleted", "path", p, "outcome", outcome, "error", err)
			}
		}
	}, func() { skipped(paths) })
}

// deleteStored sends one DELETE: outcome deleted, not_found (gone already:
// expired, or deleted by someone else) or failed.
func (s *Server) deleteStored(ctx context.Context, t *upstreamTarget, del *http.Request) (string, error) {
	resp, _, err := s.send(ctx, t, del, http.NoBody, 0, true, exchangeAnswer)
	if err != nil {
		return "failed", fmt.Errorf("DELETE %s: %w", del.URL.Path, err)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		return "deleted", nil
	case resp.StatusCode == http.StatusNotFound:
		return "not_found", nil
	}
	return "failed", fmt.Errorf("DELETE %s: status %d", del.URL.Path, resp.StatusCode)
}

// background runs f in a goroutine of the server's, with parent's values
// (the request's trace: the work is part of it) but not its end: f's
// context ends when Finish gives up waiting or Drain ends the requests.
// Once Finish was called nothing more starts: skipped runs instead.
func (s *Server) background(parent context.Context, f func(ctx context.Context), skipped func()) {
	s.bg.mu.Lock()
	if s.bg.closed {
		s.bg.mu.Unlock()
		skipped()
		return
	}
	s.bg.wg.Add(1)
	s.bg.mu.Unlock()
	go func() {
		defer s.bg.wg.Done()
		ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
		defer cancel()
		stop := context.AfterFunc(s.bg.ctx, cancel)
		defer stop()
		f(ctx)
	}()
}

// Finish ends the server's background work (the deletion of hidden
// rounds' stored responses, the take-back of a refused turn's
// conversation items): nothing more starts, what runs is waited for
// until ctx ends, then cancelled and waited for again (it returns at
// once). Call it once the listener is shut down (after
// http.Server.Shutdown, or Drain); the error is ctx's when it cut the work
// short.
func (s *Server) Finish(ctx context.Context) error {
	s.bg.mu.Lock()
	s.bg.closed = true
	s.bg.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.bg.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.bg.cancel()
		<-done
		return ctx.Err()
	}
}
