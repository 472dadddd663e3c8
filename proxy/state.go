package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
)

// storedState is implemented by requests that can continue state kept
// upstream (Responses: previous_response_id, conversation); see
// wire/responses/state.go.
type storedState interface {
	// StatePath says where that state is read (path "" if none).
	StatePath() (path, query string)
	// AnswerDropped answers, in body's input, the proxy's calls that state
	// holds unanswered; n is how many.
	AnswerDropped(body, state []byte, mine func(name string) bool) (out []byte, n int, err error)
}

// answerDropped handles the upstream's refusal (400) of a request that
// continues stored state: when an earlier answer had the proxy's calls
// removed, the state still holds them without outputs and the API refuses
// to go on. It reads the state with the client's credentials and returns
// the request with those calls answered, to send once more; nil when there
// is nothing to answer. resp's body stays readable, to relay the refusal.
func (s *Server) answerDropped(ctx context.Context, rt *routed, in *http.Request, resp *http.Response, body []byte, info *reqInfo) []byte {
	st, ok := rt.req.(storedState)
	if !ok || resp.StatusCode != http.StatusBadRequest || rt.session == nil {
		return nil
	}
	path, query := st.StatePath()
	if path == "" {
		return nil
	}
	refusal, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(refusal))
	if err != nil {
		return nil
	}
	h := in.Header.Clone()
	h.Set("Accept", "application/json") // not the event stream a streaming client asked for
	get := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path, RawQuery: query}, Header: h}
	sresp, _, err := s.send(ctx, rt.api.target(s), get, http.NoBody, 0, true, exchangeAnswer)
	if err != nil {
		return nil
	}
	defer sresp.Body.Close()
	state, err := io.ReadAll(io.LimitReader(sresp.Body, maxUpstreamBody))
	if err != nil || sresp.StatusCode != http.StatusOK {
		return nil
	}
	next, n, err := st.AnswerDropped(body, state, rt.session.Handles)
	if err != nil || n == 0 {
		return nil
	}
	info.droppedAnswered += n
	return next
}
