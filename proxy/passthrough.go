package proxy

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"
)

// passthrough relays any other /v1/* request unchanged: body streamed both
// ways (no size limit: file uploads pass too), status and headers kept,
// every read of the upstream body written and flushed at once so SSE streams
// (/v1/completions, /v1/responses with stream) arrive event by event.
func (s *Server) passthrough(c echo.Context) error {
	r := c.Request()
	info := requestInfo(c)
	ctx, done := s.requestContext(r.Context())
	defer done()
	var body io.Reader = r.Body
	if r.ContentLength == 0 {
		body = http.NoBody
	}
	a := apiFor(r)
	resp, elapsed, err := s.send(ctx, a.target(s), r, body, r.ContentLength, false, exchangePass)
	s.metrics.observeUpstream(info, elapsed)
	if err != nil {
		if bodyTimedOut(r) {
			werr := requestTimeout(s.cfg.Access.BodyTimeout)
			info.status, info.err = werr.Status, werr.Message
			writeError(c.Response(), a, werr)
			return nil
		}
		s.fail(c.Response(), a, info, classify(ctx, err))
		return nil
	}
	defer resp.Body.Close()
	info.answered(resp)
	w := c.Response()
	copyResponseHeader(w.Header(), resp.Header, true)
	w.WriteHeader(resp.StatusCode)
	info.status = resp.StatusCode
	if err := relayBody(w, resp.Body); err != nil {
		s.relayFailed(ctx, info, err)
	}
	return nil
}

var relayBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// relayBody copies src to w, flushing after every read.
func relayBody(w http.ResponseWriter, src io.Reader) error {
	rc := http.NewResponseController(w)
	bp := relayBuffers.Get().(*[]byte)
	defer relayBuffers.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
