package main

// Memory after a routing-index build. Building a large library's indexes
// allocates several times what they keep (text analysis, embedding), and
// the Go runtime lets the heap grow to twice what is live before it
// collects: a 10,000-skill proxy held ~600 MB for ~260 MB of skills and
// indexes. After every build, and then regularly (caches fill, a build's
// leftovers go), the process therefore returns freed memory to the system
// and, unless GOGC is set, lets the heap grow by a fixed headroom for
// requests instead of by what is live (docs/performance.md). During a
// rebuild the default pacing is back: the old indexes serve while the new
// ones are built.
//
// The headroom is a GOGC percentage worked out from the live heap, not a
// memory limit: a limit set from what the process held once stops
// following the heap as caches fill (envelopes, token counts), and at
// 10,000 skills the headroom under it shrank to ~20 MB, a collection every
// ~170 requests and ~18% of the CPU. A percentage keeps the headroom in
// proportion to what is live at every cycle.
//
// Settling costs a full collection: ~20 ms of CPU a minute at 10,000
// skills.

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// memoryHeadroomMin is the least headroom: requests allocate about a tenth
// of a megabyte each, so the collector runs every few hundred requests, not
// after each; an eighth of what is live above that.
const memoryHeadroomMin = 64 << 20

// The pacing follows what is live: again memorySettleFirst after the first
// settling (a build's index is then written for the next start, and its
// leftovers are gone), then every memorySettleEvery.
const (
	memorySettleFirst = 10 * time.Second
	memorySettleEvery = time.Minute
)

var (
	memoryMu      sync.Mutex
	userGOGC      = os.Getenv("GOGC") != ""
	rebuildsGoing int
	settleTicker  sync.Once
)

// settleMemory returns freed memory to the system and sets the collector's
// percentage so that the heap grows by an eighth of what is live, at least
// memoryHeadroomMin, between collections. The first call starts settling
// again regularly.
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
	if userGOGC {
		return
	}
	debug.SetGCPercent(gcPercent(liveHeap()))
}

// gcPercent is the GOGC that lets a heap of live bytes grow by
// max(live/8, memoryHeadroomMin) before the next collection.
func gcPercent(live uint64) int {
	if live == 0 {
		return 100
	}
	head := max(live/8, memoryHeadroomMin)
	return int(min((100*head+live-1)/live, 1000))
}

// startRebuild restores the default pacing until the returned func settles
// it again.
func startRebuild() func() {
	memoryMu.Lock()
	rebuildsGoing++
	if !userGOGC {
		debug.SetGCPercent(100)
	}
	memoryMu.Unlock()
	return func() {
		memoryMu.Lock()
		rebuildsGoing--
		memoryMu.Unlock()
		settleMemory()
	}
}

// liveHeap is the heap the last collection marked live (right after the
// collection FreeOSMemory forces, what the process holds on to).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
