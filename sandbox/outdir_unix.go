//go:build unix

package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivate refuses an output root that another user could have planted
// or can write to: the default lies in the shared /tmp, and whoever can
// write there could otherwise prepare a conversation's HOME (a Python .pth
// file, an .npmrc) and have the operator's scripts run its code. The root
// must be a directory, not a symlink, owned by this process's user and
// writable by no one else.
func checkPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("sandbox: output root %s is not a directory (a symlink?)", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("sandbox: output root %s belongs to uid %d, not to this user (uid %d): another user may control it; set exec.output_dir to a folder of this user's", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("sandbox: output root %s is writable by other users (mode %v): chmod go-w it, or set exec.output_dir to a folder inside it that does not exist yet (it is created 0700)", dir, fi.Mode().Perm())
	}
	return nil
}
