package sandbox

import (
	"context"
	"errors"
	"sync/atomic"
)

var errBusy = errors.New("sandbox: all execution slots are busy and the queue is full")

// limiter bounds concurrent executions: up to cap(slots) run, up to queue
// wait (in arrival order: channel senders are served FIFO), the rest are
// refused at once so a burst cannot pile up unbounded work.
type limiter struct {
	slots   chan struct{}
	queue   int64
	waiting atomic.Int64
}

func newLimiter(concurrency, queue int) *limiter {
	return &limiter{slots: make(chan struct{}, concurrency), queue: int64(queue)}
}

// acquire takes a slot, waiting while ctx allows when the queue has room.
func (l *limiter) acquire(ctx context.Context) (release func(), err error) {
	release = func() { <-l.slots }
	select {
	case l.slots <- struct{}{}:
		return release, nil
	default:
	}
	if l.waiting.Add(1) > l.queue {
		l.waiting.Add(-1)
		return nil, errBusy
	}
	defer l.waiting.Add(-1)
	select {
	case l.slots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stats is a point-in-time view of the execution limiter.
type Stats struct {
	Running int `json:"running"`
	Queued  int `json:"queued"`
}

func (l *limiter) stats() Stats {
	return Stats{Running: len(l.slots), Queued: int(l.waiting.Load())}
}
