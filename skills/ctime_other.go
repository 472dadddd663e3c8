//go:build !linux

package skills

import (
	"os"
	"time"
)

// changedSince reports whether info's file was modified at or after t. Only
// the modification time is read here (the change time's field differs per
// system), so a mode change, or a file copied in with its old time kept, is
// not seen; events seen by the watch are.
func changedSince(info os.FileInfo, t time.Time) bool { return !info.ModTime().Before(t) }
