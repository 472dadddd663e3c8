//go:build !unix

package e2e

import (
	"os/exec"
	"time"
)

func killGroupOnCancel(cmd *exec.Cmd) { cmd.WaitDelay = 5 * time.Second }
