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
	var body io.Reader = r.Body
	if r.ContentLength == 0 {
		body = http.NoBody
	}
	a := apiForPath(r.URL.Path)
	resp, elapsed, err := s.send(r.Context(), a.target(s), r, body, r.ContentLength, false)
	s.metrics.upstreamLatency.WithLabelValues(info.path).Observe(elapsed.Seconds())
	if err != nil {
		f := classify(r.Context(), err)
		info.status, info.err = f.status, f.logText()
		s.metrics.upstreamErrors.WithLabelValues(f.code).Inc()
		f.write(c.Response(), a)
		return nil
	}
	defer resp.Body.Close()
	info.upstreamStatus = resp.StatusCode
	w := c.Response()
	copyResponseHeader(w.Header(), resp.Header, true)
	w.WriteHeader(resp.StatusCode)
	info.status = resp.StatusCode
	if err := relayBody(w, resp.Body); err != nil && r.Context().Err() == nil {
		info.err = "relay: " + err.Error()
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
