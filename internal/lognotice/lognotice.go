// Package lognotice spaces out the log lines of an event that can come in
// floods (refused connections, refused sessions): the first is logged at
// once, then at most one line per interval, carrying how many happened
// since the last line.
package lognotice

import (
	"sync"
	"time"
)

// Every counts events and says when one is due a log line. The zero value
// is not ready: set Interval.
type Every struct {
	Interval time.Duration

	mu       sync.Mutex
	last     time.Time
	unlogged int
}

// Note counts one event; when a line is due it returns how many events
// the line stands for (this one included) and true.
func (e *Every) Note() (n int, due bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.unlogged++
	if time.Since(e.last) < e.Interval {
		return 0, false
	}
	n, e.last, e.unlogged = e.unlogged, time.Now(), 0
	return n, true
}
