package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// storedState is implemented by requests that can continue state kept
// upstream (Responses: previous_response_id, conversation); see
// wire/responses/state.go.
type storedState interface {
	// StatePath says where that state is read (path "" if none): a path
	// under /v1, not escaped, and a query.
	StatePath() (path, query string)
	// AnswerDropped answers, in body's input, the proxy's calls (mine)
	// that state holds unanswered; n is how many.
	AnswerDropped(body, state []byte, mine func(name string) bool) (out []byte, n int, err error)
}

// repairStored handles the upstream's refusal (400) of the first round of a
// request that continues stored state: when an earlier answer had the
// proxy's calls removed, the state still holds them without outputs and the
// API refuses to go on. It reads the state with the client's credentials
// and, if it holds such calls, sends the request again with them answered
// as not run. It returns the response to go on with and the body that
// response answers: the retry's when the upstream accepted it; else resp,
// its body kept readable, to relay the refusal as it came (also when the
// retry was refused: that refusal would name the proxy's items).
func (s *Server) repairStored(ctx context.Context, rt *routed, in *http.Request, resp *http.Response, body []byte, kind exchange, info *reqInfo) (*http.Response, []byte) {
	st, ok := rt.req.(storedState)
	if !ok || resp.StatusCode != http.StatusBadRequest {
		return resp, body
	}
	path, query := st.StatePath()
	if path == "" {
		return resp, body
	}
	refusal, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(refusal))
	if err != nil {
		return resp, body
	}
	outcome := func(o string) { s.metrics.storedRepairs.WithLabelValues(o).Inc() }
	state, err := s.readState(ctx, rt, in, path, query, kind)
	if err != nil {
		outcome("read_failed")
		info.err = "stored state read: " + err.Error()
		return resp, body
	}
	next, n, err := st.AnswerDropped(body, state, s.cfg.ProxyTool)
	if err != nil || n == 0 {
		outcome("nothing_to_answer")
		return resp, body
	}
	retry, elapsed, err := s.send(ctx, rt.api.target(s), resent(in, "repair"), bytes.NewReader(next), int64(len(next)), true, kind)
	s.metrics.observeUpstream(info, elapsed)
	if err != nil {
		outcome("retry_failed")
		info.err = "stored state repair: " + err.Error()
		return resp, body
	}
	if retry.StatusCode == http.StatusBadRequest {
		retry.Body.Close()
		outcome("retry_refused")
		return resp, body
	}
	outcome("repaired")
	info.droppedAnswered += n
	return retry, next
}

// readState reads the state at path: a GET with the client's credentials
// and query (Azure's api-version) and the state's own query, bounded as the
// request's own exchange.
func (s *Server) readState(ctx context.Context, rt *routed, in *http.Request, path, query string, kind exchange) ([]byte, error) {
	return s.getStored(ctx, rt.api.target(s), storedObjectHeader(in), in.URL.RawQuery, path, query, kind)
}

// getStored reads a stored object at path: a GET with hdr (see
// storedObjectHeader), the client's query and the object's own query,
// bounded as one exchange of kind.
func (s *Server) getStored(ctx context.Context, t *upstreamTarget, hdr http.Header, clientQuery, path, query string, kind exchange) ([]byte, error) {
	q, err := url.ParseQuery(clientQuery)
	if err != nil {
		q = url.Values{}
	}
	own, _ := url.ParseQuery(query)
	for k, v := range own {
		q[k] = v
	}
	get := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path, RawQuery: q.Encode()}, Header: hdr}
	resp, _, err := s.send(ctx, t, get, http.NoBody, 0, true, kind)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
}

// storedObjectHeader is the header of a request the proxy sends about a
// stored upstream object on the client's behalf (the state read, the
// deletion of hidden rounds' objects): the client's, credentials
// included, asking for JSON (not the event stream a streaming client asked
// for) and without the client's Idempotency-Key, which names its POST.
func storedObjectHeader(in *http.Request) http.Header {
	h := in.Header.Clone()
	h.Set("Accept", "application/json")
	h.Del(headerIdempotencyKey)
	return h
}
