//go:build unix

// Package private checks that a folder is this user's alone: folders in a
// shared place (/tmp) whose names others can compute could otherwise be
// created first, and filled, by another local user.
package private

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Check refuses dir unless it is a directory (not a symlink), owned by this
// process's user and writable by no one else. The error names what is wrong.
func Check(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symlink?)", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): another user may control it", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by other users (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}

// SharedAncestor returns the nearest folder above dir (an absolute path)
// that every user can write, such as /tmp; "" when there is none. Tools
// that look for project files in the parent folders of their working folder
// (npm's node_modules and .npmrc, uv's uv.toml) would read what another
// user put there, even in a folder Check accepts.
func SharedAncestor(dir string) string {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o002 != 0 {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Foreign reports whether fi belongs to a user other than this process's
// and root, and which: folders found by convention in a shared place (run
// from /tmp, ./.claude/skills) may be another user's, whose files would go
// into prompts, and with script execution, run as this user.
func Foreign(fi os.FileInfo) (uid int, foreign bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	uid = int(st.Uid)
	return uid, uid != os.Geteuid() && uid != 0
}
