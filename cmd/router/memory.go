package main

// Memory after a routing-index build. Building a large library's indexes
// allocates several times what they keep (text analysis, embedding), and
// the Go runtime lets the heap grow to twice what is live before it
// collects: a 10,000-skill proxy held ~600 MB for ~260 MB of skills and
// indexes. After every build the process therefore returns the build's
// garbage to the system and, unless GOMEMLIMIT is set, caps its memory at
// what it then holds plus headroom for requests (docs/performance.md). During a
// rebuild the cap is lifted: the old indexes serve while the new ones are
// built.

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// memoryHeadroomMin is the least headroom: requests allocate a few hundred
// kilobytes each and the ranking and rendering caches grow to a few tens of
// megabytes, so the collector then runs every few hundred requests, not
// after each.
const memoryHeadroomMin = 64 << 20

var (
	memoryMu      sync.Mutex
	userMemLimit  = os.Getenv("GOMEMLIMIT") != ""
	rebuildsGoing int
)

// settleMemory returns freed memory to the system and caps the runtime's
// memory at what it holds then plus a quarter, at least memoryHeadroomMin
// more.
func settleMemory() {
	memoryMu.Lock()
	defer memoryMu.Unlock()
	debug.FreeOSMemory()
	if userMemLimit || rebuildsGoing > 0 {
		return
	}
	held := runtimeMemory()
	debug.SetMemoryLimit(int64(held + max(held/4, memoryHeadroomMin)))
}

// startRebuild lifts the cap until the returned func settles it again.
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

// runtimeMemory is the memory the Go runtime holds from the system, what a
// memory limit is compared with: everything it mapped minus what it
// returned.
func runtimeMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
