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
//
// Nor does Landlock restrict a file's metadata: the same filter keeps a
// script from setting setuid, setgid or write-for-others bits and ACLs on
// the files its user owns (see metadataCalls).

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

// modeCall is a system call that takes a file mode, and which argument it is.
type modeCall struct {
	nr  uint32
	arg uint32 // index of the mode argument
	// flags is the index of open's flags argument, which say whether the
	// call creates a file: the kernel ignores the mode of one that does
	// not (nor do C libraries zero it: Go's os.OpenFile passes its perm
	// as given, a raw syscall() whatever the register held). noFlags: the
	// call always creates.
	flags uint32
}

const noFlags = ^uint32(0)

// metadataCalls are, per architecture, the calls that set a file's mode
// (chmod: the mode argument may not set setuid, setgid or write for
// others), that create a file with a mode (open: the mode may not set
// setuid or setgid; write for others is every program's 0666, which the
// umask takes off), and that set extended attributes (ACLs). Landlock
// (up to ABI 7) restricts none of them: the owner of a file changes its
// mode whatever the Landlock rules, so a script of a proxy running as root
// could make any root-owned program setuid, or /etc/shadow writable by
// every user, and a script of any user could open the skill folder, the
// configuration or ~/.bashrc to other users' writes.
func metadataCalls(arch uint32) (chmods, creates []modeCall, xattrs []uint32) {
	const (
		fchmodat2  = 452 // the same number on every architecture
		setxattrat = 463
	)
	switch arch {
	case unix.AUDIT_ARCH_X86_64:
		chmods = []modeCall{{90, 1, noFlags}, {91, 1, noFlags}, {268, 2, noFlags}, {fchmodat2, 2, noFlags}}  // chmod, fchmod, fchmodat, fchmodat2
		creates = []modeCall{{2, 2, 1}, {257, 3, 2}, {85, 1, noFlags}, {133, 1, noFlags}, {259, 2, noFlags}} // open, openat, creat, mknod, mknodat
		xattrs = []uint32{188, 189, 190, setxattrat}                                                         // setxattr, lsetxattr, fsetxattr, setxattrat
	case unix.AUDIT_ARCH_AARCH64:
		chmods = []modeCall{{52, 1, noFlags}, {53, 2, noFlags}, {fchmodat2, 2, noFlags}} // fchmod, fchmodat, fchmodat2
		creates = []modeCall{{56, 3, 2}, {33, 2, noFlags}}                               // openat, mknodat
		xattrs = []uint32{5, 6, 7, setxattrat}
	}
	return chmods, creates, xattrs
}

// openat2's mode lies in a struct the filter cannot read: refused with
// ENOSYS, so that C libraries and runtimes fall back to openat.
const sysOpenat2 = 437

// Mode bits a script may not set: setuid and setgid (a program that runs
// as the proxy's user, or root, for whoever starts it), and, by chmod,
// write for others.
const (
	setIDBits   = 0o6000
	chmodDenied = setIDBits | 0o002
)

// unixSocketFilter is the BPF program: on another architecture (a 32-bit
// process could use other numbers) or an x32 call, refuse; socket with
// AF_UNIX, socketpair of other than stream or seqpacket sockets and
// io_uring_setup, refuse
// (EACCES); a chmod setting setuid, setgid or write for others, a file
// created setuid or setgid (EPERM), openat2 (ENOSYS) and setting extended
// attributes (EOPNOTSUPP), refuse; anything else, allow.
func unixSocketFilter(arch uint32) []unix.SockFilter {
	const (
		offNr   = 0  // seccomp_data.nr
		offArch = 4  // seccomp_data.arch
		offArgs = 16 // seccomp_data.args[0]; each 8 bytes, low 32 bits first (little-endian)
		// sockTypeMask keeps a socket type without SOCK_CLOEXEC and
		// SOCK_NONBLOCK (the kernel's SOCK_TYPE_MASK).
		sockTypeMask = 0xf
		x32Bit       = 0x40000000
	)
	ret := func(errno unix.Errno) uint32 { return uint32(unix.SECCOMP_RET_ERRNO) | uint32(errno) }
	deny := ret(unix.EACCES)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
	}
	arg := func(i uint32) unix.SockFilter { return stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArgs+8*i) }
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
	// block appends a rule for call nr: body runs when the call is nr and
	// must end in a return; otherwise the next rule is tried, with the
	// call number loaded again (a body may load an argument).
	block := func(nr uint32, body ...unix.SockFilter) {
		prog = append(prog,
			stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr),
			jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, nr, 0, uint8(len(body))))
		prog = append(prog, body...)
	}
	// refuseBits: refuse (errno) when argument i has any of bits set.
	refuseBits := func(i, bits uint32, errno unix.Errno) []unix.SockFilter {
		return []unix.SockFilter{
			arg(i),
			stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, bits),
			jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, 0, 1, 0),
			stmt(unix.BPF_RET|unix.BPF_K, ret(errno)),
			stmt(unix.BPF_RET|unix.BPF_K, allow),
		}
	}
	block(unix.SYS_IO_URING_SETUP, stmt(unix.BPF_RET|unix.BPF_K, deny))
	// socket(AF_UNIX, …): refuse.
	block(unix.SYS_SOCKET,
		arg(0),
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_UNIX, 0, 1),
		stmt(unix.BPF_RET|unix.BPF_K, deny),
		stmt(unix.BPF_RET|unix.BPF_K, allow))
	// socketpair: only of stream or seqpacket sockets ([|flags]). A
	// datagram socket of a pair is not tied to its peer: sendto() with a
	// path, or a second connect(), reaches any datagram socket named by a
	// path (syslog's /dev/log, journald's), as socket(AF_UNIX) would; and
	// the kernel makes an AF_UNIX SOCK_RAW a datagram socket, so the two
	// allowed types are listed rather than SOCK_DGRAM refused. Stream and
	// seqpacket pairs cannot be pointed elsewhere.
	block(unix.SYS_SOCKETPAIR,
		arg(1),
		stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, sockTypeMask),
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SOCK_STREAM, 2, 0),
		jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SOCK_SEQPACKET, 1, 0),
		stmt(unix.BPF_RET|unix.BPF_K, deny),
		stmt(unix.BPF_RET|unix.BPF_K, allow))
	chmods, creates, xattrs := metadataCalls(arch)
	for _, c := range chmods {
		block(c.nr, refuseBits(c.arg, chmodDenied, unix.EPERM)...)
	}
	// willCreate: an open's flags that create a file (the kernel's
	// WILL_CREATE: O_CREAT, or O_TMPFILE's own bit without O_DIRECTORY).
	const willCreate = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)
	for _, c := range creates {
		body := refuseBits(c.arg, setIDBits, unix.EPERM)
		if c.flags != noFlags {
			// An open that creates nothing: allow, whatever its mode
			// (to body's last instruction, its allow).
			body = append([]unix.SockFilter{
				arg(c.flags),
				stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, willCreate),
				jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, 0, uint8(len(body)-1), 0),
			}, body...)
		}
		block(c.nr, body...)
	}
	for _, nr := range xattrs {
		block(nr, stmt(unix.BPF_RET|unix.BPF_K, ret(unix.EOPNOTSUPP)))
	}
	block(sysOpenat2, stmt(unix.BPF_RET|unix.BPF_K, ret(unix.ENOSYS)))
	return append(prog, stmt(unix.BPF_RET|unix.BPF_K, allow))
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
