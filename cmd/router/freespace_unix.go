//go:build linux || darwin || freebsd

package main

import "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged user can still write in dir's
// file system; ok is false when it cannot be read.
func freeBytes(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, false
	}
	// Bavail is signed on the BSDs, where reserved blocks can make it negative.
	return uint64(max(int64(st.Bavail), 0)) * uint64(st.Bsize), true
}
