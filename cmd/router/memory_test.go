package main

import "testing"

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

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, overhead uint64
		want           int64
	}{
		{60 * mib, 20 * mib, (60 + 64 + 16 + 20) * mib},   // 407 skills: the minimum headroom
		{330 * mib, 50 * mib, (330 + 64 + 16 + 50) * mib}, // 10,000 skills
		{1024 * mib, 0, (1024 + 128 + 32) * mib},          // an eighth
	} {
		if got := memoryLimit(c.live, c.overhead); got != c.want {
			t.Errorf("memoryLimit(%d MiB, %d MiB) = %d MiB, want %d", c.live/mib, c.overhead/mib, got/mib, c.want/mib)
		}
		if goal := int64(c.live) * int64(100+gcPercent(c.live)) / 100; goal+int64(c.overhead) >= c.want {
			t.Errorf("live %d MiB: GOGC's goal plus overhead %d MiB reaches the limit %d MiB", c.live/mib, (goal+int64(c.overhead))/mib, c.want/mib)
		}
	}
}
