package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
)

// DefaultWriteTimeout bounds each write to a client (Access.WriteTimeout).
const DefaultWriteTimeout = time.Minute

// stallChunk is the most one write hands the connection under one
// deadline: the bound is on progress, so a large answer to a slow but
// reading client is not cut for its size.
const stallChunk = 64 << 10

// boundWrites puts every write of a request to its client under
// Access.WriteTimeout (writeBound). A client that stops reading (a
// suspended process, an SDK stream left open and unread) otherwise holds
// its handler in a write forever, and with it the upstream request and
// its connection: the upstream idle timeout only counts time spent
// waiting for the upstream.
//
// The failed write cancels the request's context (net/http does), so the
// handler ends as for a client that went away; the log and the metrics
// say 499 and, here, why.
func (s *Server) boundWrites(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		w := s.writeBound(res.Writer)
		res.Writer = w
		err := next(c)
		if sw, ok := w.(*stallWriter); ok {
			if se := sw.stalled.Load(); se != nil {
				info := requestInfo(c)
				info.status, info.outcome, info.err = statusClientClosed, outcomeClientClosed, se.Error()
			}
		}
		return err
	}
}

// writeBound wraps w so that each write and flush must be accepted by the
// client within Access.WriteTimeout; w as it is when there is no bound.
func (s *Server) writeBound(w http.ResponseWriter) http.ResponseWriter {
	d := s.cfg.Access.WriteTimeout
	if d <= 0 {
		return w
	}
	return &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), limit: d, rearm: min(d/16, time.Second)}
}

// stallWriter is a response writer whose writes carry a deadline, renewed
// before each one that comes rearm or more after the last renewal: a
// stream writes and flushes every event, and setting the connection's
// deadline each time cost a tenth of the proxy's CPU for the stream, so
// each write is bounded by the limit less at most rearm. The last stays
// for what net/http writes once the handler returns (the end of a chunked
// body, trailers), and net/http clears it before the connection serves
// another request.
type stallWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	limit   time.Duration
	rearm   time.Duration              // min(limit/16, 1s)
	armed   time.Time                  // the last renewal (monotonic); zero: none yet
	stalled atomic.Pointer[stallError] // the first write that met the deadline
}

func (w *stallWriter) arm() {
	now := time.Now()
	if !w.armed.IsZero() && now.Sub(w.armed) < w.rearm {
		return
	}
	w.armed = now
	_ = w.rc.SetWriteDeadline(now.Add(w.limit))
}

func (w *stallWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return w.ResponseWriter.Write(p)
	}
	n := 0
	for len(p) > 0 {
		w.arm()
		m, err := w.ResponseWriter.Write(p[:min(len(p), stallChunk)])
		n += m
		if err != nil {
			return n, w.why(err)
		}
		p = p[m:]
	}
	return n, nil
}

// FlushError is what http.ResponseController.Flush calls.
func (w *stallWriter) FlushError() error {
	w.arm()
	return w.why(w.rc.Flush())
}

func (w *stallWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the connection's own methods.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// why names a write that met the deadline as the client's stall.
func (w *stallWriter) why(err error) error {
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		se := &stallError{limit: w.limit}
		w.stalled.CompareAndSwap(nil, se)
		return se
	}
	return err
}

// stallError is a write the client did not accept within the bound.
type stallError struct{ limit time.Duration }

func (e *stallError) Error() string {
	return "client read nothing for " + e.limit.String() + " (server.write_timeout): disconnected"
}

// ResetStalled returns ln, its TCP connections closed with a reset
// (SO_LINGER 0) once a write to them met its deadline: the data the
// client never read (up to the socket buffers, megabytes) and the socket
// are then dropped at once, where an orderly close queues the FIN behind
// that data and holds both until TCP gives up on the peer. The write
// deadline is Access.WriteTimeout's (stallWriter): the server sets no
// other. The reset is decided in the failing write itself because
// net/http closes the connection there, before the handler hears of it;
// every other close stays orderly. The hot path pays one call per write
// to the connection and one allocation per connection.
func ResetStalled(ln net.Listener) net.Listener { return resetListener{ln} }

type resetListener struct{ net.Listener }

func (l resetListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		return &resetConn{TCPConn: tc}, nil
	}
	return c, err
}

// resetConn is a TCP connection whose close after a write that met its
// deadline is a reset. It embeds *net.TCPConn so that net/http still finds
// CloseWrite and the sendfile/splice paths.
type resetConn struct{ *net.TCPConn }

func (c *resetConn) Write(p []byte) (int, error) {
	n, err := c.TCPConn.Write(p)
	c.stalled(err)
	return n, err
}

func (c *resetConn) ReadFrom(r io.Reader) (int64, error) {
	n, err := c.TCPConn.ReadFrom(r)
	c.stalled(err)
	return n, err
}

// NetConn is the connection it wraps, as tls.Conn's.
func (c *resetConn) NetConn() net.Conn { return c.TCPConn }

func (c *resetConn) stalled(err error) {
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		_ = c.SetLinger(0)
	}
}
