package lognotice

import (
	"testing"
	"time"
)

func TestEvery(t *testing.T) {
	e := &Every{Interval: time.Hour}
	if n, due := e.Note(); !due || n != 1 {
		t.Fatalf("first event: %d, %v; want logged at once", n, due)
	}
	for range 5 {
		if _, due := e.Note(); due {
			t.Fatal("an event within the interval was due a line")
		}
	}
	e.mu.Lock()
	e.last = time.Now().Add(-2 * time.Hour) // the interval has passed
	e.mu.Unlock()
	if n, due := e.Note(); !due || n != 6 {
		t.Fatalf("after the interval: %d, %v; want a line for 6 events", n, due)
	}
}
