//go:build linux

package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLandlockDevBlockDevices: with Landlock everything but the
// conversation's folders and a few character devices is read-only, even
// for root. A rule granting writes beneath all of /dev let a script of a
// proxy running as root (capabilities dropped, but still the owner of
// root:root 0600 device nodes) open block devices, the disks holding the
// skill folder, for writing. The test only opens and closes one; it never
// writes.
func TestLandlockDevBlockDevices(t *testing.T) {
	requireProgram(t, "python3")
	if os.Geteuid() != 0 {
		t.Skip("needs to run as root, as the docs' 'even for root' case")
	}
	var dev string
	entries, _ := os.ReadDir("/dev")
	for _, e := range entries {
		p := filepath.Join("/dev", e.Name())
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 && fi.Mode().Perm()&0o200 != 0 {
			dev = p
			break
		}
	}
	if dev == "" {
		t.Skip("no root-owned block device in /dev")
	}
	p, _ := newTestProvider(t, nil)
	if p.runner.confinement() == "none" {
		t.Skip("no Landlock here")
	}
	sk := scriptSkill(t, "devwrite", "open.py",
		"import os, sys\nfd = os.open(sys.argv[1], os.O_WRONLY)\nos.close(fd)\nprint('opened-for-write', sys.argv[1])\n")
	res := execute(t, p, sk, "c-dev", "scripts/open.py", dev)
	if strings.Contains(res.Stdout, "opened-for-write") {
		t.Fatalf("a confined script (%s) opened the block device %s for writing: the disk is writable from the sandbox", p.runner.confinement(), dev)
	}
}

// TestScriptHasNoControllingTerminal: a script runs in a session of its
// own, without the proxy's controlling terminal. In the proxy's session
// it could push keystrokes into the operator's terminal (TIOCSTI) that the
// shell runs, unconfined, once the proxy stops; and the terminals are not
// writable under Landlock (the operator's screen is a pts of the same
// user).
func TestScriptHasNoControllingTerminal(t *testing.T) {
	requireProgram(t, "python3")
	p, _ := newTestProvider(t, nil)
	sk := scriptSkill(t, "tty", "tty.py",
		"import os\nprint('sid', os.getsid(0))\ntry:\n    os.close(os.open('/dev/tty', os.O_RDWR))\n    print('tty-opened')\nexcept OSError as e:\n    print('no-tty', e.errno)\n")
	res := execute(t, p, sk, "c-tty", "scripts/tty.py")
	sid, _ := unix.Getsid(0)
	if !strings.Contains(res.Stdout, "sid ") || strings.Contains(res.Stdout, "sid "+strconv.Itoa(sid)+"\n") {
		t.Errorf("the script (%s) runs in the proxy's session %d:\n%s", p.runner.confinement(), sid, res.Stdout)
	}
	if strings.Contains(res.Stdout, "tty-opened") {
		t.Errorf("the script (%s) opened /dev/tty:\n%s", p.runner.confinement(), res.Stdout)
	}
}

// TestScriptCannotSignalItsSupervisor: the script's Landlock domain is its
// own, below the supervisor (the confiner applies it), so from ABI 6 the
// domain's signal scoping keeps the script from stopping or killing the
// supervisor, which then kills what the script left, descendants in new
// sessions included. In one domain with it, a script that killed it left
// them running past the timeout.
func TestScriptCannotSignalItsSupervisor(t *testing.T) {
	if landlockABI() < 6 {
		t.Skip("Landlock signal scoping needs ABI 6")
	}
	p, _ := newTestProvider(t, nil)
	if p.runner.confinement() == "none" {
		t.Skip("no Landlock here")
	}
	sk := scriptSkill(t, "sig", "sig.sh", "#!/bin/sh\nkill -STOP $PPID 2>/dev/null; echo stop=$?\nkill -9 $PPID 2>/dev/null; echo kill=$?\n")
	res := execute(t, p, sk, "c-sig", "scripts/sig.sh")
	if !strings.Contains(res.Stdout, "stop=1") || !strings.Contains(res.Stdout, "kill=1") {
		t.Errorf("the script signalled its supervisor (%s):\n%+v", p.runner.confinement(), res)
	}
	if res.ExitCode != 0 {
		t.Errorf("the run did not end as the script did: %+v", res)
	}
}

// TestScriptCannotReachUnixSockets: Landlock does not restrict connect()
// to a Unix socket named by a path, through which a service of the
// proxy's user (tmux, systemd --user, Docker) would act for the script
// outside the sandbox. The confiner's seccomp filter refuses to create
// one; socketpair, an internet socket and io_uring's absence leave the
// rest of a script's work alone.
func TestScriptCannotReachUnixSockets(t *testing.T) {
	p := filteredProvider(t)
	sock := filepath.Join(t.TempDir(), "svc.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("ran outside the sandbox\n"))
			c.Close()
		}
	}()
	sk := scriptSkill(t, "sock", "sock.py", `import socket, sys
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    print("unix:", s.recv(100).decode().strip())
except OSError as e:
    print("unix refused", e.errno)
a, b = socket.socketpair()
a.sendall(b"x"); print("socketpair", b.recv(1).decode())
socket.socket(socket.AF_INET, socket.SOCK_STREAM).close(); print("inet ok")
`)
	res := execute(t, p, sk, "c-sock", "scripts/sock.py", sock)
	if strings.Contains(res.Stdout, "ran outside") || !strings.Contains(res.Stdout, "unix refused 13") {
		t.Errorf("a confined script reached a Unix socket:\n%+v", res)
	}
	if !strings.Contains(res.Stdout, "socketpair x") || !strings.Contains(res.Stdout, "inet ok") {
		t.Errorf("socketpair or an internet socket refused:\n%+v", res)
	}
}

// TestScriptCannotReachUnixDatagramSockets: socketpair stays allowed for a
// process and its children, but a datagram socket of a pair is not tied to
// its peer: sendto() with a path, or connect() again, reaches any datagram
// socket named by a path (syslog's /dev/log, journald's), which the filter
// keeps socket(AF_UNIX) from reaching. A datagram pair is refused (also
// asked for as SOCK_RAW, which the kernel makes a datagram socket); stream
// and seqpacket pairs, which cannot be pointed elsewhere, are not.
func TestScriptCannotReachUnixDatagramSockets(t *testing.T) {
	p := filteredProvider(t)
	sock := filepath.Join(t.TempDir(), "dgram.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 4)
	go func() {
		buf := make([]byte, 100)
		for {
			n, _, err := ln.ReadFromUnix(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	sk := scriptSkill(t, "dgram", "dgram.py", `import socket, sys
for name, kind in (("dgram", socket.SOCK_DGRAM), ("dgram-nonblock", socket.SOCK_DGRAM | socket.SOCK_NONBLOCK), ("raw", socket.SOCK_RAW)):
    try:
        a, b = socket.socketpair(socket.AF_UNIX, kind)
    except OSError as e:
        print(name, "refused", e.errno)
        continue
    try:
        a.sendto(b"sent past the sandbox", sys.argv[1]); print(name, "sent")
    except OSError as e:
        print(name, "send failed", e.errno)
for name, kind in (("stream", socket.SOCK_STREAM), ("seqpacket", socket.SOCK_SEQPACKET)):
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    a.sendall(b"x"); print(name, "pair", b.recv(1).decode())
`)
	res := execute(t, p, sk, "c-dgram", "scripts/dgram.py", sock)
	select {
	case m := <-got:
		t.Errorf("a confined script sent %q to a Unix datagram socket outside the sandbox:\n%+v", m, res)
	case <-time.After(200 * time.Millisecond):
	}
	for _, want := range []string{"dgram refused 13", "dgram-nonblock refused 13", "raw refused 13", "stream pair x", "seqpacket pair x"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("want %q in the script's output:\n%+v", want, res)
		}
	}
}

// TestScriptDeviceIoctls: from Landlock ABI 5 a script may not issue ioctl
// commands on devices it opened for reading (the rest of /dev is not
// writable), but may on the devices it can write, so isatty() and friends
// on /dev/null work.
func TestScriptDeviceIoctls(t *testing.T) {
	requireProgram(t, "python3")
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skip("no /dev/ptmx")
	}
	p, _ := newTestProvider(t, nil)
	if p.runner.confinement() == "none" || landlockABI() < 5 {
		t.Skip("no Landlock ABI 5 here")
	}
	sk := scriptSkill(t, "ioctl", "ioctl.py", `import fcntl, os, struct, termios
print('null-tty', os.isatty(os.open('/dev/null', os.O_RDONLY)))
fd = os.open('/dev/ptmx', os.O_RDONLY | os.O_NOCTTY)
try:
    fcntl.ioctl(fd, 0x80045430, struct.pack('I', 0))  # TIOCGPTN
    print('ioctl-allowed')
except OSError as e:
    print('ioctl-refused', e.errno)
`)
	res := execute(t, p, sk, "c-ioctl", "scripts/ioctl.py")
	if !strings.Contains(res.Stdout, "null-tty False") {
		t.Errorf("isatty on /dev/null failed:\n%s\n%s", res.Stdout, res.Stderr)
	}
	if !strings.Contains(res.Stdout, "ioctl-refused 13") {
		t.Errorf("an ioctl on a device opened for reading, want EACCES:\n%s\n%s", res.Stdout, res.Stderr)
	}
}
