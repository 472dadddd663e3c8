//go:build !linux && !darwin

package skills

import (
	"os"
	"time"
)

// changedSince reports whether info's file was modified at or after t
// (less the stamps' slack). Only the modification time is read here, so a
// mode change, or a file copied in with its old time kept, is not seen;
// events seen by the watch are.
func changedSince(info os.FileInfo, t time.Time) bool { return stampedSince(info.ModTime(), t) }
