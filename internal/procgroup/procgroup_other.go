//go:build !unix

// Package procgroup runs a command in its own process group, so that
// ending its context ends every process it started, not only the first.
package procgroup

import (
	"os/exec"
	"time"
)

// KillOnCancel: without process groups, the context's end kills cmd alone
// (exec's default), and Wait gives up on output pipes its children still
// hold after 5 s.
func KillOnCancel(cmd *exec.Cmd) { cmd.WaitDelay = 5 * time.Second }
