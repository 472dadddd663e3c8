//go:build linux || darwin

package skills

import (
	"os"
	"syscall"
	"time"
)

// changedSince reports whether info's file changed at or after t (less the
// stamps' slack): its content, its entries (a folder), its mode or owner,
// or its name. The inode's change time covers all of these and, unlike the
// modification time, cannot be set back (cp -p, tar and rsync -a keep old
// modification times).
func changedSince(info os.FileInfo, t time.Time) bool {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && stampedSince(changeTime(st), t) {
		return true
	}
	return stampedSince(info.ModTime(), t)
}
