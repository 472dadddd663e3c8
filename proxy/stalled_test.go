package proxy

import (
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder counts the write deadlines set on it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// TestStallWriterArmsOncePerStretch: the write bound does not set the
// connection's deadline on every write and flush of a stream (a
// thousand-event stream paid two deadline updates per event, a tenth of
// the proxy's CPU for it): a deadline set a moment ago still bounds the
// next write, within a second of the limit.
func TestStallWriterArmsOncePerStretch(t *testing.T) {
	tests := []struct {
		limit     time.Duration
		wantArmed int // for 1,000 events written at once
	}{
		{time.Minute, 1},
		{300 * time.Millisecond, 1},
	}
	for _, tc := range tests {
		t.Run(tc.limit.String(), func(t *testing.T) {
			rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			w := (&Server{cfg: Config{Access: Access{WriteTimeout: tc.limit}}}).writeBound(rec).(*stallWriter)
			start := time.Now()
			for range 1000 {
				if _, err := w.Write([]byte("data: {}\n\n")); err != nil {
					t.Fatal(err)
				}
				if err := w.FlushError(); err != nil {
					t.Fatal(err)
				}
			}
			if time.Since(start) > tc.limit/32 {
				t.Skip("the machine is too slow for the measure")
			}
			if len(rec.deadlines) != tc.wantArmed {
				t.Fatalf("%d deadlines set for 1,000 events, want %d", len(rec.deadlines), tc.wantArmed)
			}
			if d := rec.deadlines[0].Sub(start); d < tc.limit || d > tc.limit+time.Second {
				t.Errorf("deadline %v after the first write, want the limit %v", d, tc.limit)
			}
		})
	}
}

// TestStallWriterRearmsAfterAWhile: a write that comes later than the
// re-arm stretch gets a fresh deadline, so the bound stays within a second
// (or a sixteenth of the limit) of WriteTimeout for every write.
func TestStallWriterRearmsAfterAWhile(t *testing.T) {
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	limit := 160 * time.Millisecond
	w := (&Server{cfg: Config{Access: Access{WriteTimeout: limit}}}).writeBound(rec).(*stallWriter)
	w.Write([]byte("a"))
	time.Sleep(limit/16 + 5*time.Millisecond)
	before := time.Now()
	w.Write([]byte("b"))
	if len(rec.deadlines) != 2 {
		t.Fatalf("%d deadlines set, want 2", len(rec.deadlines))
	}
	if d := rec.deadlines[1].Sub(before); d < limit {
		t.Errorf("the second write's deadline is %v away, want at least %v", d, limit)
	}
}
