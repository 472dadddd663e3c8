// Package statuswriter provides a response writer that records the status
// its handler answered with, for the access log and spans of handlers the
// proxy does not write itself (MCP at /mcp, every handler under tracing).
package statuswriter

import "net/http"

// Writer records the status the handler wrote: the first final one, 200
// once it writes a body or flushes without one. Unwrap lets
// http.ResponseController reach the connection's Flush, Hijack and
// deadlines; Flush is implemented for handlers that type-assert, and
// FlushError for http.ResponseController, which then returns its error (a
// failed flush reaches whoever flushed, as without the wrapper).
type Writer struct {
	http.ResponseWriter
	Status int
}

func (w *Writer) WriteHeader(code int) {
	if w.Status == 0 && code >= 200 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *Writer) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *Writer) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController.Flush calls.
func (w *Writer) FlushError() error {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
