package main

// Memory after a routing-index build. Building a large library's indexes
// allocates several times what they keep (text analysis, embedding), and
// the Go runtime lets the heap grow to twice what is live before it
// collects: a 10,000-skill proxy held ~600 MB for ~260 MB of skills and
// indexes. After every build, and then regularly (caches fill, a build's
// leftovers go), the process therefore returns freed memory to the system
// and lets the heap grow by a fixed headroom for requests instead of by
// what is live (docs/performance.md). During a rebuild the default pacing
// is back: the old indexes serve while the new ones are built.
//
// Two settings do it. A GOGC percentage worked out from the live heap paces
// the collector; a memory limit a little above the heap that pacing allows
// makes the runtime return what it freed, which it otherwise keeps for a
// while (~35 MB more resident at 407 skills). Both follow the live heap as
// caches fill (envelopes, token counts): a limit set once from what the
// process held shrank the headroom at 10,000 skills to ~20 MB, a collection
// every ~170 requests and ~18% of the CPU.
//
// Settling costs a full collection: ~20 ms of CPU a minute at 10,000
// skills; following the live heap in between costs a metrics read.

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
// after each; an eighth of what is live above that.
const memoryHeadroomMin = 64 << 20

// The pacing is settled again memorySettleFirst after the first settling
// (a build's index is then written for the next start, and its leftovers
// are gone), then every memorySettleEvery, and follows the live heap every
// memoryFollowEvery in between.
const (
	memorySettleFirst = 10 * time.Second
	memorySettleEvery = time.Minute
	memoryFollowEvery = 5 * time.Second
)

var (
	memoryMu      sync.Mutex
	userGOGC      = os.Getenv("GOGC") != ""
	userMemLimit  = os.Getenv("GOMEMLIMIT") != ""
	rebuildsGoing int
	settled       bool   // pacing is set (no rebuild since the last settling)
	memOverhead   uint64 // what the runtime holds beyond the live heap, at the last settling
	settleTicker  sync.Once
)

// settleMemory returns freed memory to the system and sets the pacing for
// the live heap. The first call starts settling and following regularly.
func settleMemory() {
	settleTicker.Do(func() {
		go func() {
			time.Sleep(memorySettleFirst)
			settleMemory()
			follow := time.NewTicker(memoryFollowEvery)
			last := time.Now()
			for range follow.C {
				if time.Since(last) >= memorySettleEvery {
					settleMemory()
					last = time.Now()
					continue
				}
				followLiveHeap()
			}
		}()
	})
	memoryMu.Lock()
	defer memoryMu.Unlock()
	if rebuildsGoing > 0 {
		return
	}
	debug.FreeOSMemory()
	live, held := liveHeap(), runtimeMemory()
	memOverhead = 0
	if held > live {
		memOverhead = held - live
	}
	settled = true
	pace(live)
}

// followLiveHeap sets the pacing again for the heap the last collection
// found live, without a collection of its own.
func followLiveHeap() {
	memoryMu.Lock()
	defer memoryMu.Unlock()
	if settled {
		pace(liveHeap())
	}
}

// pace lets a heap of live bytes grow by headroom(live) before the next
// collection, and caps the runtime's memory a quarter of that headroom
// above what the heap then reaches plus the overhead; GOGC and GOMEMLIMIT
// in the environment each replace their part.
func pace(live uint64) {
	if live == 0 {
		return
	}
	if !userGOGC {
		debug.SetGCPercent(gcPercent(live))
	}
	if !userMemLimit {
		debug.SetMemoryLimit(memoryLimit(live, memOverhead))
	}
}

// memoryLimit is the cap for a heap of live bytes and the runtime's
// overhead beyond it: the heap's goal plus a quarter of its headroom, so
// the limit never paces the collector before GOGC does.
func memoryLimit(live, overhead uint64) int64 {
	head := headroom(live)
	return int64(live + head + head/4 + overhead)
}

// headroom is how much the heap may grow between collections.
func headroom(live uint64) uint64 { return max(live/8, memoryHeadroomMin) }

// gcPercent is the GOGC that lets a heap of live bytes grow by
// headroom(live) before the next collection.
func gcPercent(live uint64) int {
	if live == 0 {
		return 100
	}
	return int(min((100*headroom(live)+live-1)/live, 1000))
}

// startRebuild restores the default pacing until the returned func settles
// it again.
func startRebuild() func() {
	memoryMu.Lock()
	rebuildsGoing++
	settled = false
	if !userGOGC {
		debug.SetGCPercent(100)
	}
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
