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
