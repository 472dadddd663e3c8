// Package atomicfile writes files through a temporary file and a rename, so
// readers (replicas sharing a folder, the next start) see the old file or
// the new one, never a part, and removes the temporary files of writes that
// never finished.
package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Temporary files are named tempPrefix, their writer's tag (writerTag:
// "<machine>-<pid>-", or nothing) and a random number, in the folder of the
// file they become (a rename does not cross file systems); tempPattern
// matches them all, and those of earlier versions (".tmp-<random>").
const (
	tempPrefix  = ".tmp-"
	tempPattern = tempPrefix + "*"
)

// Write writes path durably: the data is synced before the rename and the
// folder after it, so a crash (a power loss) leaves the old file or the
// whole new one, never a renamed file whose data was lost. The file is
// readable by all: replicas often run as another user than the writer.
func Write(path string, write func(io.Writer) error) error {
	return writeFile(path, write, true)
}

// WriteUnsynced is Write without the syncs, for files that carry their own
// checksum and are cheap to make again (cache entries), where a sync per
// file would cost more than the rare entry a crash loses.
func WriteUnsynced(path string, write func(io.Writer) error) error {
	return writeFile(path, write, false)
}

func writeFile(path string, write func(io.Writer) error, durable bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, tempPrefix+writerTag()+"*")
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil && durable {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	if durable {
		return syncDir(dir)
	}
	return nil
}

// syncDir makes a rename in dir durable. Windows cannot open a folder for
// syncing, and its renames need no such step.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// RemoveStale deletes the temporary files in dir of writes that never
// finished (the process was killed mid-write). A file whose writer was a
// process of this machine and pid namespace that is gone goes at once. Any
// other file, whose writer may be alive (another replica sharing the
// folder, possibly stalled for minutes in an fsync on a network file
// system), goes once nothing has written to it for othersAfter: removing a
// write in progress would only fail that write, but a minute was within
// reach of a slow network file system and of clock skew between the
// machines. Errors are ignored: a file left behind costs only space.
func RemoveStale(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, tempPattern))
	cutoff := time.Now().Add(-othersAfter)
	for _, path := range tmps {
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if fi.ModTime().Before(cutoff) || writerGone(strings.TrimPrefix(fi.Name(), tempPrefix)) {
			os.Remove(path)
		}
	}
}
