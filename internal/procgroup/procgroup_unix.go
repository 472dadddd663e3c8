//go:build unix

// Package procgroup runs a command in its own process group, so that
// ending its context ends every process it started, not only the first.
package procgroup

import (
	"os/exec"
	"syscall"
	"time"
)

// KillOnCancel runs cmd (made with exec.CommandContext) in its own process
// group and kills the whole group when the context ends: npm, Codex and
// Claude Code start children (install scripts, a native binary behind a
// node launcher, shells, MCP servers) that would otherwise outlive it and
// hold its output pipes open. Wait then gives up on those pipes after 5 s.
func KillOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
}
