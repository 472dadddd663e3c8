//go:build linux

package sandbox

import (
	"errors"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock does not restrict connect() to Unix sockets named by a path, so
// a confined script could ask any service of the proxy's user that listens
// on one to act outside the sandbox: a tmux server (new-window CMD), the
// user's systemd (systemd-run --user), a Docker socket. The confiner
// installs a seccomp filter that refuses to create Unix sockets
// (socket(AF_UNIX), EACCES) and io_uring instances, whose socket
// operations would go around the filter. socketpair(AF_UNIX) of stream or
// seqpacket sockets, which only connects a process to its own children
// (Python's multiprocessing, libuv's pipes), stays allowed; a datagram
// pair does not (sendto with a path leaves the pair). A socket inherited
// from outside cannot be used: every descriptor from 3 up is closed at the
// script's exec.

// seccompArch is the audit architecture of this build's system calls; 0
// where no filter is written for it.
func seccompArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// errNoSeccompArch: this architecture gets no filter.
var errNoSeccompArch = errors.New("no seccomp filter for this architecture")

// unixSocketFilter is the BPF program: on another architecture (a 32-bit
// process could use other numbers) or an x32 call, refuse; socket with
// AF_UNIX, socketpair of datagram sockets and io_uring_setup, refuse;
// anything else, allow.
func unixSocketFilter(arch uint32) []unix.SockFilter {
	const (
		offNr   = 0  // seccomp_data.nr
		offArch = 4  // seccomp_data.arch
		offArg0 = 16 // seccomp_data.args[0], low 32 bits (little-endian)
		offArg1 = 24 // seccomp_data.args[1], low 32 bits
		// sockTypeMask keeps a socket type without SOCK_CLOEXEC and
		// SOCK_NONBLOCK (the kernel's SOCK_TYPE_MASK).
		sockTypeMask = 0xf
		x32Bit       = 0x40000000
	)
	deny := uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EACCES)
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
	}
	prog := []unix.SockFilter{
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArch),
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, arch, 1, 0),
		stmt(unix.BPF_RET|unix.BPF_K, deny), // another architecture's numbers
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr),
	}
	if arch == unix.AUDIT_ARCH_X86_64 {
		prog = append(prog,
			jump(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_K, x32Bit, 0, 1),
			stmt(unix.BPF_RET|unix.BPF_K, deny)) // x32 calls: other numbers again
	}
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	return append(prog,
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_IO_URING_SETUP, 0, 1),
		stmt(unix.BPF_RET|unix.BPF_K, deny),
		// socket(AF_UNIX, …): refuse.
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_SOCKET, 0, 4),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArg0),
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_UNIX, 0, 1),
		stmt(unix.BPF_RET|unix.BPF_K, deny),
		stmt(unix.BPF_RET|unix.BPF_K, allow),
		// socketpair(…, SOCK_DGRAM[|flags], …): refuse. A datagram socket
		// of a pair is not tied to its peer: sendto() with a path, or a
		// second connect(), reaches any datagram socket named by a path
		// (syslog's /dev/log, journald's), as socket(AF_UNIX) would.
		// Stream and seqpacket pairs cannot be pointed elsewhere.
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_SOCKETPAIR, 0, 4),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArg1),
		stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, sockTypeMask),
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SOCK_DGRAM, 0, 1),
		stmt(unix.BPF_RET|unix.BPF_K, deny),
		stmt(unix.BPF_RET|unix.BPF_K, allow),
	)
}

// refuseUnixSockets installs the filter on the calling thread (and what it
// execs). The thread must have no_new_privs set.
func refuseUnixSockets() error {
	arch := seccompArch()
	if arch == 0 {
		return errNoSeccompArch
	}
	filter := unixSocketFilter(arch)
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
}
