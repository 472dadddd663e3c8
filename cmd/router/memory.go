package main

// Memory after a routing-index build. Building a large library's indexes
// allocates several times what they keep (text analysis, embedding), and
// the Go runtime lets the heap grow to twice what is live before it
// collects: a 10,000-skill proxy held ~600 MB for ~260 MB of skills and
// indexes. After every build, and then regularly (caches fill, a build's
// leftovers go), the process therefore returns freed memory to the system
// and, unless GOMEMLIMIT is set, caps its memory at what it holds plus
// headroom for requests (docs/performance.md). During a rebuild the cap is
// lifted: the old indexes serve while the new ones are built.
//
// Settling costs a full collection: ~20 ms of CPU a minute at 10,000
// skills.

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// memoryHeadroomMin is the least headroom: requests allocate about a tenth
// of a megabyte each, so the collector runs every few hundred requests, not
// after each; an eighth of what is held above that.
const memoryHeadroomMin = 64 << 20

// The cap follows what the process holds: again memorySettleFirst after
// the first settling (a build's index is then written for the next start,
// and its leftovers are gone), then every memorySettleEvery.
const (
	memorySettleFirst = 10 * time.Second
	memorySettleEvery = time.Minute
)

var (
	memoryMu      sync.Mutex
	userMemLimit  = os.Getenv("GOMEMLIMIT") != ""
	rebuildsGoing int
	settleTicker  sync.Once
)

// settleMemory returns freed memory to the system and caps the runtime's
// memory at what it holds then plus an eighth, at least memoryHeadroomMin
// more. The first call starts settling again regularly.
func settleMemory() {
	settleTicker.Do(func() {
		go func() {
			time.Sleep(memorySettleFirst)
			settleMemory()
			for range time.Tick(memorySettleEvery) {
				settleMemory()
			}
		}()
	})
	memoryMu.Lock()
	defer memoryMu.Unlock()
	if rebuildsGoing > 0 {
		return
	}
	debug.FreeOSMemory()
	if userMemLimit {
		return
	}
	held := runtimeMemory()
	debug.SetMemoryLimit(int64(held + max(held/8, memoryHeadroomMin)))
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
