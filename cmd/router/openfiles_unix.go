//go:build unix

package main

import "golang.org/x/sys/unix"

// openFileLimit is the process's soft limit on open files; ok is false
// when it cannot be read.
func openFileLimit() (uint64, bool) {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 0, false
	}
	return uint64(rl.Cur), true // int64 on the BSDs
}
