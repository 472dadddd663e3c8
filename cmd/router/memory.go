package main

// Memory after a routing-index build. Building a large library's indexes
// allocates several times what they keep (text analysis, embedding), and
// the Go runtime lets the heap grow to twice what is live before it
// collects: a 10,000-skill proxy held ~600 MB for ~260 MB of skills and
// indexes. After every build the process therefore returns the build's
// garbage to the system and, unless GOMEMLIMIT is set, caps its memory at
// what is live plus headroom for requests (docs/performance.md). During a
// rebuild the cap is lifted: the old indexes serve while the new ones are
// built.

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// memoryHeadroomMin is the least headroom over the live heap: requests
// allocate ~0.1 MB each and the ranking and rendering caches grow to a few
// tens of megabytes, so the collector then runs every thousand requests or
// so, not after each.
const memoryHeadroomMin = 96 << 20

var (
	memoryMu      sync.Mutex
	userMemLimit  = os.Getenv("GOMEMLIMIT") != ""
	rebuildsGoing int
)

// settleMemory returns freed memory to the system and caps the heap at the
// live heap plus a quarter, at least memoryHeadroomMin more.
func settleMemory() {
	memoryMu.Lock()
	defer memoryMu.Unlock()
	debug.FreeOSMemory()
	if userMemLimit || rebuildsGoing > 0 {
		return
	}
	live := liveHeap()
	debug.SetMemoryLimit(int64(live + max(live/4, memoryHeadroomMin)))
}

// startRebuild lifts the cap until the matching settleMemory.
func startRebuild() func() {
	memoryMu.Lock()
	rebuildsGoing++
	if !userMemLimit {
		debug.SetMemoryLimit(math.MaxInt64)
	}
	memoryMu.Unlock()
	return func() {
		memoryMu.Lock()
		rebuildsGoing--
		memoryMu.Unlock()
		settleMemory()
	}
}

// liveHeap is the heap the last collection found live, in bytes.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
