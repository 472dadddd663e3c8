//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptCannotLoosenFileModes: Landlock makes everything but the
// conversation's folders read-only, but it does not restrict a file's
// metadata: the owner of a file changes its mode whatever the rules. A
// confined script of a proxy running as root made a root-owned program
// setuid-root and world-writable, /etc/shadow writable by every user; as
// any user, it could open the skill folder, the configuration or
// ~/.bashrc to other users' writes (with chmod, or an ACL: an extended
// attribute), or create a setuid program in its output folder. The
// filter refuses those; ordinary modes keep working.
func TestScriptCannotLoosenFileModes(t *testing.T) {
	p := filteredProvider(t)
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sk := scriptSkill(t, "modes", "modes.py", `import errno, os, stat, sys
victim = sys.argv[1]
def attempt(name, f):
    try:
        f(); print(name, "done")
    except OSError as e:
        print(name, "refused", errno.errorcode.get(e.errno, e.errno))
attempt("chmod-o+w", lambda: os.chmod(victim, 0o606))
attempt("chmod-setuid", lambda: os.chmod(victim, 0o4700))
attempt("chmod-setgid", lambda: os.chmod(victim, 0o2700))
fd = os.open(victim, os.O_RDONLY)
attempt("fchmod-o+w", lambda: os.fchmod(fd, 0o666))
attempt("fchmodat-setuid", lambda: os.chmod(os.path.basename(victim), 0o4755, dir_fd=os.open(os.path.dirname(victim), os.O_RDONLY)))
attempt("setxattr-acl", lambda: os.setxattr(victim, "system.posix_acl_access", b"\x02\x00\x00\x00"))
attempt("setxattr-user", lambda: os.setxattr(victim, "user.x", b"1"))
attempt("create-setuid", lambda: os.close(os.open("suid", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("mknod-setgid", lambda: os.mknod("sgid", stat.S_IFREG | 0o2755))
# Ordinary work in the output folder.
attempt("create-0666", lambda: os.close(os.open("plain", os.O_CREAT | os.O_WRONLY, 0o666)))
attempt("chmod-0755", lambda: os.chmod("plain", 0o755))
attempt("chmod-0664", lambda: os.chmod("plain", 0o664))
attempt("mkdir-0777", lambda: os.mkdir("dir", 0o777))
# openat as a program that does not zero the mode of an open that creates
# nothing (Go's os.OpenFile passes its perm as given; a raw syscall() leaves
# whatever the register held): the kernel ignores that mode.
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
OPENAT = {"x86_64": 257, "aarch64": 56}.get(os.uname().machine)
def raw_openat(path, flags, mode):
    fd = libc.syscall(OPENAT, -100, path.encode(), flags, mode)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    os.close(fd)
if OPENAT:
    attempt("open-rdonly-setid-mode", lambda: raw_openat("plain", os.O_RDONLY, 0o6755))
    attempt("openat-create-setuid", lambda: raw_openat("suid2", os.O_CREAT | os.O_WRONLY, 0o4755))
    attempt("tmpfile-setuid", lambda: raw_openat(".", os.O_TMPFILE | os.O_WRONLY, 0o4755))
`)
	res := execute(t, p, sk, "c-modes", "scripts/modes.py", outside)
	for _, want := range []string{
		"chmod-o+w refused EPERM", "chmod-setuid refused EPERM", "chmod-setgid refused EPERM",
		"fchmod-o+w refused EPERM", "fchmodat-setuid refused EPERM",
		"setxattr-acl refused", "setxattr-user refused",
		"create-setuid refused EPERM", "mknod-setgid refused EPERM",
		"create-0666 done", "chmod-0755 done", "chmod-0664 done", "mkdir-0777 done",
		"open-rdonly-setid-mode done", "openat-create-setuid refused EPERM", "tmpfile-setuid refused EPERM",
	} {
		if !strings.Contains("\n"+res.Stdout, "\n"+want) {
			t.Errorf("want %q:\n%s%s", want, res.Stdout, res.Stderr)
		}
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode() != 0o600 {
		t.Errorf("the file outside the sandbox is now %v (%v), want -rw-------", fi.Mode(), err)
	}
	for _, f := range []string{"suid", "sgid", "suid2"} {
		if fi, err := os.Stat(filepath.Join(res.OutputDir, f)); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("the script created %s %v", f, fi.Mode())
		}
	}
}

// filteredProvider is a provider whose scripts run under the confiner's
// seccomp filter (with Landlock, on an architecture the filter is written
// for), running python3 scripts; the test is skipped elsewhere.
func filteredProvider(t *testing.T) *Provider {
	t.Helper()
	requireProgram(t, "python3")
	if seccompArch() == 0 {
		t.Skip("no seccomp filter for this architecture")
	}
	p, _ := newTestProvider(t, nil)
	if p.runner.confinement() == "none" {
		t.Skip("no Landlock here: the filter comes with it")
	}
	return p
}
