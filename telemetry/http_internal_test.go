package telemetry

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/skillrouter/skillrouter/internal/statuswriter"
)

// flushFails is a response writer whose flush fails, as a connection's
// does once a write deadline passed.
type flushFails struct{ *httptest.ResponseRecorder }

var errFlush = errors.New("write deadline exceeded")

func (flushFails) FlushError() error { return errFlush }

// TestStatusWriterPassesFlushErrors: the span's writer passes a failed
// flush on to whoever flushes through it (http.ResponseController): the
// proxy's write bound learns from it that its client stalled (logged with
// that cause), which a Flush without an error hid when tracing was on.
func TestStatusWriterPassesFlushErrors(t *testing.T) {
	sw := &statuswriter.Writer{ResponseWriter: flushFails{httptest.NewRecorder()}}
	if err := http.NewResponseController(sw).Flush(); !errors.Is(err, errFlush) {
		t.Fatalf("Flush through the span's writer: %v, want %v", err, errFlush)
	}
	if sw.Status != http.StatusOK {
		t.Errorf("status %d after a flush, want 200", sw.Status)
	}
}
