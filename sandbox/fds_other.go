//go:build unix && !linux

package sandbox

import "syscall"

// closeInheritedOnExec marks descriptors from 3 up close-on-exec (see the
// Linux version): without /proc or close_range, the first 1,024.
func closeInheritedOnExec() {
	for fd := 3; fd < 1024; fd++ {
		syscall.CloseOnExec(fd)
	}
}
