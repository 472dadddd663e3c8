//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock (Linux ≥ 5.13, unprivileged) lets a process give up rights for
// itself and its descendants. The supervisor uses it to make the whole file
// system read-only for a script except its conversation's out, home and tmp
// directories (and device writes such as /dev/null), so the skill folder is
// read-only even for root. Landlock also forbids ptrace-attaching to (and
// /proc/<pid>/mem of) processes outside the sandbox, and since ABI 6 scopes
// signals and abstract Unix sockets, so a script cannot kill or inspect the
// proxy. It does not stop reads of /proc/<pid>/environ: the proxy being
// non-dumpable and the script having no capabilities does (hardenProxy,
// dropCapabilities).

const landlockRulePathBeneath = 1

// landlockABI returns the kernel's Landlock ABI version, 0 when unavailable.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// handledWrites is every write-type right the ABI knows; reads and execution
// stay unrestricted.
func handledWrites(abi int) uint64 {
	a := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		a |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		a |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		// ioctl on devices opened for reading (the rest of /dev is not
		// writable): none is known to do harm without capabilities, which
		// scripts have none of, but none is needed either beyond the
		// devices below.
		a |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return a
}

// writableDevices are the device files a confined script may write to. Not
// the terminals (/dev/tty, /dev/pts, /dev/ptmx): the operator's terminal is
// a pts of the proxy's user, and a script writing to it could paint the
// screen (escape sequences) in the operator's name.
var writableDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// restrictWrites confines the calling thread (and what it forks or execs
// afterwards) to writing only beneath the writable directories. The caller
// must have locked its goroutine to the OS thread and set no_new_privs.
func restrictWrites(abi int, writable []string) error {
	handled := handledWrites(abi)
	attr := unix.LandlockRulesetAttr{Access_fs: handled}
	// Older kernels reject a larger struct only if the extra fields are set;
	// pass exactly the size this ABI knows anyway.
	size := unsafe.Sizeof(attr.Access_fs)
	if abi >= 4 {
		size += unsafe.Sizeof(attr.Access_net)
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		size = unsafe.Sizeof(attr)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(fd))

	add := func(path string, access uint64) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		defer unix.Close(pfd)
		rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, landlockRulePathBeneath,
			uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		if errno != 0 {
			return fmt.Errorf("landlock_add_rule %s: %w", path, errno)
		}
		return nil
	}
	for _, dir := range writable {
		if err := add(dir, handled); err != nil {
			return err
		}
	}
	// Writing to the ordinary character devices (/dev/null, /dev/urandom)
	// is allowed; not the rest of /dev: a script of a proxy
	// running as root owns the disks' block devices (root:root 0600) and
	// could rewrite the file system, the skill folder included. Creating
	// device nodes is never allowed. POSIX shared memory (Python
	// multiprocessing) needs files in /dev/shm.
	dev := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE)
	if abi >= 3 {
		dev |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		dev |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV // isatty() on /dev/null
	}
	for _, p := range writableDevices {
		if err := add(p, dev); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		shm := handled &^ uint64(unix.LANDLOCK_ACCESS_FS_MAKE_CHAR|unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK)
		if err := add("/dev/shm", shm); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}
