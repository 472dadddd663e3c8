package skills

import (
	"os"
	"syscall"
	"time"
)

// changedSince reports whether info's file changed at or after t: its
// content, its entries (a folder), its mode or owner, or its name. The
// inode's change time covers all of these and, unlike the modification
// time, cannot be set back (cp -p, tar and rsync -a keep old mtimes).
func changedSince(info os.FileInfo, t time.Time) bool {
	if !info.ModTime().Before(t) {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && !time.Unix(st.Ctim.Unix()).Before(t)
}
