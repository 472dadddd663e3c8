package skills

import (
	"os"
	"syscall"
	"time"
)

// changedSince is ctime_linux.go's, with Darwin's name for the change time.
func changedSince(info os.FileInfo, t time.Time) bool {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && stampedSince(time.Unix(st.Ctimespec.Unix()), t) {
		return true
	}
	return stampedSince(info.ModTime(), t)
}
