package sandbox

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// closeInheritedOnExec marks every descriptor from 3 up close-on-exec, so a
// script gets only its stdio. Go opens its own descriptors that way, but not
// those the process inherited (a service manager's socket, a wrapper's log
// file, an MCP host's pipe); Landlock checks paths when a file is opened, so
// an inherited writable descriptor would get around the write confinement.
func closeInheritedOnExec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Kernels before 5.11: every open descriptor, one at a time.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= 3 {
			syscall.CloseOnExec(fd)
		}
	}
}
