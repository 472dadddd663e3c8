//go:build unix

package router_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used. Benchmarks report CPU
// per operation next to wall time because the shared 2-core machines they
// run on are often oversubscribed, which inflates wall time and its tail.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
