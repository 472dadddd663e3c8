//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package skills

import "syscall"

// watchBudget is how many open files the watches may hold: kqueue opens
// every watched folder and every file in it, so a large library would take
// the descriptors the proxy's connections need. Half of the process's
// limit (Go raises the soft limit to the hard one at start).
func watchBudget() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 4096
	}
	return int(min(uint64(rl.Cur)/2, 1<<20)) //nolint:unconvert // Cur's type varies by system
}
