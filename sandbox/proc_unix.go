//go:build unix

package sandbox

import (
	"context"
	"os/exec"
	"syscall"
)

// directRunner runs the program itself in a new process group: the timeout
// and the clean-up after exit kill that group. It applies no write
// confinement and cannot reach descendants that leave the group (setsid);
// it is the fallback where the supervisor cannot run.
type directRunner struct{}

func (directRunner) confinement() string { return "none" }

func (directRunner) run(ctx context.Context, s procSpec) procResult {
	cmd := &exec.Cmd{
		Path: s.argv[0], Args: s.argv, Env: s.env, Dir: s.dir,
		Stdout: s.stdout, Stderr: s.stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}, // no controlling terminal (see the supervisor's)
		WaitDelay:   waitDelay,
	}
	closeInheritedOnExec()
	if err := cmd.Start(); err != nil {
		return procResult{exitCode: -1, startErr: err}
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	killed := awaitExit(ctx, s.timeout, s.over, done)
	if killed != "" {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
	// Background children left in the group. Wait has reaped the leader, so
	// in theory the id could be reused; this fallback accepts that risk.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	res := procResult{killed: killed, exitCode: -1}
	if ps := cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.signal = ws.Signal().String()
		} else {
			res.exitCode = ps.ExitCode()
		}
	}
	return res
}
