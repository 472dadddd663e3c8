package main

// Memory after a routing-index build. Building a large library's indexes
// allocates several times what they keep (text analysis, embedding), and
// the Go runtime lets the heap grow to twice what is live before it
// collects: a 10,000-skill proxy held ~600 MB for ~260 MB of skills and
// indexes. After every build, and then regularly (caches fill, a build's
// leftovers go), the process therefore returns freed memory to the system
// and lets the heap grow by a fixed headroom for requests instead of by
// what is live (docs/performance.md). During a rebuild collection by
// percentage is back (rebuildGCPercent): the old indexes serve while the
// new ones are built.
//
// Two settings do it. A GOGC percentage worked out from the live heap paces
// the collector; a memory limit a little above the heap that pacing allows
// makes the runtime return what it freed, which it otherwise keeps for a
// while (~35 MB more resident at 407 skills). Both follow the live heap as
// caches fill (envelopes, token counts): a limit set once from what the
// process held shrank the headroom at 10,000 skills to ~20 MB, a collection
// every ~170 requests and ~18% of the CPU.
//
// In a container with a memory limit (cgroup), no limit is ever above
// containerCeiling, 90% of it: a build at 10,000 skills allocates several
// times what it keeps, and without a cap the heap outgrew a 1 GiB pod's
// limit on a library edit; under the cap the collector works harder near
// it instead of the kernel killing the process.
//
// GOGC in the environment turns the pacing off (settling still returns
// freed memory); GOMEMLIMIT replaces the limit and the ceiling. Settling costs a full
// collection: ~20 ms of CPU a minute at 10,000 skills; following the live
// heap in between costs a metrics read.

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
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
	settled       bool // pacing is set (no rebuild since the last settling)
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
	settled = true
	pace()
}

// followLiveHeap sets the pacing again for the heap the last collection
// found live, without a collection of its own.
func followLiveHeap() {
	memoryMu.Lock()
	defer memoryMu.Unlock()
	if settled {
		pace()
	}
}

// pace lets the live heap grow by its headroom before the next collection,
// and caps the runtime's memory above what that allows (memoryLimit). GOGC
// in the environment turns both off (a limit worked out from this policy's
// headroom would override it); GOMEMLIMIT replaces the cap.
func pace() {
	live, nonHeap := heapMemory()
	if live == 0 || userGOGC {
		return
	}
	debug.SetGCPercent(gcPercent(live))
	if !userMemLimit {
		debug.SetMemoryLimit(min(memoryLimit(live, nonHeap), containerCeiling()))
	}
}

// containerCeiling is the highest memory limit the runtime is given: 90%
// of the container's memory limit, math.MaxInt64 outside one.
var containerCeiling = sync.OnceValue(func() int64 {
	if b, ok := cgroupMemoryLimit(os.ReadFile); ok {
		return b / 10 * 9
	}
	return math.MaxInt64
})

// cgroupMemoryLimit reads the memory limit of the process's cgroup as a
// container sees it (v2 memory.max, else v1 memory.limit_in_bytes); ok is
// false without one ("max", or v1's page-rounded MaxInt64).
func cgroupMemoryLimit(read func(string) ([]byte, error)) (int64, bool) {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := read(f)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v <= 0 || v >= 1<<60 {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// memoryLimit is the cap for a heap of live bytes when the runtime holds
// nonHeap bytes besides the heap's objects and free pages. Under a limit
// the runtime aims the heap at 97% of the limit minus that memory, so the
// cap is set where that aim is the heap's GOGC goal plus a quarter of the
// headroom and memoryLimitSlack: the limit makes the runtime return freed
// memory, and does not pace the collector ahead of GOGC unless stacks and
// other non-heap memory grow by that much before the next follow.
func memoryLimit(live, nonHeap uint64) int64 {
	head := headroom(live)
	return int64((live+head+head/4+memoryLimitSlack)*100/97 + nonHeap)
}

// memoryLimitSlack covers what GOGC's goal adds beyond the heap (stacks and
// globals times GOGC) and non-heap growth between follows.
const memoryLimitSlack = 16 << 20

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

// rebuildGCPercent paces the collector during a build beside a serving
// index (a reload, a settle). The old indexes stay live while the new ones
// are built, so the default 100 let a 10,000-skill proxy reach ~850 MB for
// ~260 MB settled; 50 collects more often, which such a build can afford
// (it has no start-up to delay), for a lower peak (docs/performance.md).
// The first build keeps the default: the start-up time is what counts.
const rebuildGCPercent = 50

// startRebuild restores collection by percentage until the returned func
// settles the pacing again: the default for the first build, the tighter
// rebuildGCPercent for one beside a serving index; the only limit left is
// the container's ceiling.
func startRebuild(serving bool) func() {
	memoryMu.Lock()
	rebuildsGoing++
	settled = false
	if !userGOGC {
		pct := 100
		if serving {
			pct = rebuildGCPercent
		}
		debug.SetGCPercent(pct)
	}
	if !userMemLimit {
		debug.SetMemoryLimit(containerCeiling())
	}
	memoryMu.Unlock()
	return func() {
		memoryMu.Lock()
		rebuildsGoing--
		memoryMu.Unlock()
		settleMemory()
	}
}

// heapMemory returns the heap the last collection marked live, and the
// memory the runtime holds from the system beyond the heap's objects and
// free pages (stacks, metadata, fragmentation), as its memory limit counts
// it.
func heapMemory() (live, nonHeap uint64) {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	metrics.Read(s)
	var v [5]uint64
	for i := range s {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0, 0
		}
		v[i] = s[i].Value.Uint64()
	}
	live = v[0]
	if held := v[1] - v[2]; held > v[3]+v[4] {
		nonHeap = held - v[3] - v[4]
	}
	return live, nonHeap
}
