//go:build unix

package skills

import (
	"os"
	"syscall"
)

// fileID names a file by device and inode: two paths to one folder (a
// link and its target) share it.
type fileID struct{ dev, ino uint64 }

func fileIDOf(info os.FileInfo) (fileID, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true //nolint:unconvert // Dev's type varies by platform
}
