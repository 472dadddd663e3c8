//go:build unix

package e2e

import (
	"os/exec"
	"syscall"
	"time"
)

// killGroupOnCancel runs cmd in its own process group and kills the whole
// group when its context ends: a host starts children (Codex's native
// binary behind its node launcher, the stdio MCP server).
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
}
