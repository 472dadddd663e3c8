package atomicfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"syscall"
)

// machineID is a digest of the kernel's boot id and this process's pid
// namespace: the processes whose pids mean the same to this process.
// Replicas on other machines differ in the boot id (hostnames can repeat);
// containers on one kernel share it and differ in the namespace. A dead
// namespace's number may be given to a new one, whose processes then take
// the files of the dead one's, whose writers are all gone, for their own.
func machineID() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + "\x00" + ns))
	return hex.EncodeToString(h[:6])
}

// processAlive reports whether pid runs (or is a zombie) in this process's
// pid namespace; EPERM means it runs as another user.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
