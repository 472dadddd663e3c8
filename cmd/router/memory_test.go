package main

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestGCPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},          // nothing measured: the default
		{1 * mib, 1000},   // a tiny heap: capped
		{64 * mib, 100},   // the minimum headroom doubles it
		{128 * mib, 50},   // 64 MiB on 128
		{330 * mib, 20},   // 10,000 skills: 64 MiB on 330 (19.4, rounded up)
		{1024 * mib, 13},  // an eighth (12.5, rounded up)
		{8192 * mib, 13},  // an eighth
		{100*mib + 1, 64}, // rounded up, never below the headroom
	} {
		if got := gcPercent(c.live); got != c.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", c.live/mib, got, c.want)
		}
	}
}

// The limit must leave the collector to GOGC: the runtime aims the heap at
// 97% of the limit minus the non-heap memory, which must stay above the
// GOGC goal (with stacks and globals counted in, a few MiB) by a margin.
func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct{ live, nonHeap uint64 }{
		{30 * mib, 15 * mib},  // 407 skills
		{330 * mib, 50 * mib}, // 10,000 skills
		{1024 * mib, 80 * mib},
		{8192 * mib, 200 * mib},
	} {
		limit := memoryLimit(c.live, c.nonHeap)
		aim := float64(limit-int64(c.nonHeap)) * 0.97
		gogc := float64(c.live) + float64(c.live+8*mib)*float64(gcPercent(c.live))/100 // 8 MiB of stacks and globals
		if margin := float64(headroom(c.live)) / 5; aim < gogc+margin {
			t.Errorf("live %d MiB: the limit aims the heap at %.0f MiB, within %.0f MiB of GOGC's goal %.0f MiB",
				c.live/mib, aim/mib, margin/mib, gogc/mib)
		}
		if over := float64(limit) - gogc - float64(c.nonHeap); over > float64(headroom(c.live)/2+16*mib)+0.05*float64(c.live+headroom(c.live)) {
			t.Errorf("live %d MiB: limit %d MiB leaves %.0f MiB over the heap's goal and overhead", c.live/mib, limit/mib, over/mib)
		}
	}
}

// TestStartRebuildPacing: the first build collects at the default 100%,
// one beside a serving index at rebuildGCPercent; both lift the cap to
// the container's ceiling.
func TestStartRebuildPacing(t *testing.T) {
	if userGOGC || userMemLimit {
		t.Skip("GOGC or GOMEMLIMIT set: the pacing is the user's")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, c := range []struct {
		serving bool
		want    int
	}{{false, 100}, {true, rebuildGCPercent}} {
		debug.SetGCPercent(77) // neither value, and a limit: startRebuild must set both
		debug.SetMemoryLimit(1 << 40)
		startRebuild(c.serving) // not done: it would settle (a full collection, a ticker)
		got := debug.SetGCPercent(-1)
		debug.SetGCPercent(got)
		limit := debug.SetMemoryLimit(-1)
		memoryMu.Lock()
		rebuildsGoing--
		memoryMu.Unlock()
		if got != c.want || limit != containerCeiling() {
			t.Errorf("serving %v: GOGC %d, limit %d; want %d, the container's ceiling %d", c.serving, got, limit, c.want, containerCeiling())
		}
	}
}

// TestCgroupMemoryLimit: v2's memory.max, else v1's limit_in_bytes; none
// for "max" or v1's page-rounded MaxInt64, or outside a cgroup.
func TestCgroupMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"v2", map[string]string{"/sys/fs/cgroup/memory.max": "1073741824\n"}, 1 << 30, true},
		{"v2 unlimited", map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}, 0, false},
		{"v1", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n"}, 1 << 29, true},
		{"v1 unlimited", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"none", nil, 0, false},
	} {
		read := func(name string) ([]byte, error) {
			if v, ok := c.files[name]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		}
		if got, ok := cgroupMemoryLimit(read); got != c.want || ok != c.ok {
			t.Errorf("%s: %d %v, want %d %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
