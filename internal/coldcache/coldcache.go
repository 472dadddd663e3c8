// Package coldcache evicts the CPU caches for benchmarks that time work as a
// loaded server does it: under load the rest of a request and the other
// requests evict what one request reads, which a benchmark repeating the
// same work one call after another never shows.
package coldcache

import "testing"

// size is larger than any last-level cache of the machines measured.
const size = 64 << 20

// Flusher touches a buffer larger than the last-level cache.
type Flusher struct {
	buf  []byte
	sink byte
}

// New returns a Flusher; its buffer is allocated once.
func New() *Flusher { return &Flusher{buf: make([]byte, size)} }

// Flush writes one byte of every cache line of the buffer, evicting what
// the caches held before.
func (f *Flusher) Flush() {
	for i := 0; i < len(f.buf); i += 64 {
		f.buf[i]++
		f.sink += f.buf[i]
	}
}

// Before flushes outside b's timer, before the call it times; a nil
// Flusher does nothing, so a benchmark's warm and cold cases share a loop.
func (f *Flusher) Before(b *testing.B) {
	if f == nil {
		return
	}
	b.StopTimer()
	f.Flush()
	b.StartTimer()
}
