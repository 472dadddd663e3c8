//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestInheritedDescriptorsNotPassedToScripts: Go marks the descriptors it
// opens close-on-exec, but not those the proxy inherited: a socket or log
// file from a service manager or wrapper script, a pipe of the MCP host
// that launched `router mcp`. Neither the proxy nor the supervisor closes
// them before exec, so every script gets them open — seen on a real
// `router serve` (fds 10 and 251 of the shell that started it, in the
// script's /proc/self/fd). Landlock checks paths at open time only, so a
// descriptor the script inherits for writing is a way around the write
// confinement docs/sandbox.md promises ("everything else ... is
// read-only"). Here the proxy (the test process) holds a file outside the
// output folder open without close-on-exec, as an inherited descriptor is.
func TestInheritedDescriptorsNotPassedToScripts(t *testing.T) {
	requireProgram(t, "bash")
	target := filepath.Join(t.TempDir(), "outside.log")
	fd, err := syscall.Open(target, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND, 0o600) // no O_CLOEXEC: inherited
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)

	p, _ := newTestProvider(t, nil)
	sk := scriptSkill(t, "fdleak", "w.sh",
		"ls /proc/self/fd | tr '\\n' ' '\necho written-through-an-inherited-descriptor >&\"$1\" && echo WROTE\n")
	res := execute(t, p, sk, "c-fd", "scripts/w.sh", strconv.Itoa(fd))
	b, _ := os.ReadFile(target)
	if strings.Contains(string(b), "written-through") || strings.Contains(res.Stdout, "WROTE") {
		t.Fatalf("the script (confinement %s) got the proxy's descriptor %d and wrote %s, outside its output folder (fds it had: %s)",
			p.runner.confinement(), fd, target, strings.TrimSpace(strings.Split(res.Stdout, "\n")[0]))
	}
}
