//go:build unix

package main

import "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged user can still write in dir's
// file system; ok is false when it cannot be read.
func freeBytes(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}
