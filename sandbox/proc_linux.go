//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const selfExe = "/proc/self/exe"

// newRunner picks the Linux runner: the supervisor (with Landlock when the
// kernel offers it and the configuration allows), or plain process groups
// when /proc/self/exe cannot be executed. Each candidate must pass a trial
// run (probe) before it is used, so a kernel or container that refuses part
// of the set-up is found at start-up, not on the first tool call.
func newRunner(c Confinement, log *slog.Logger) (runner, error) {
	hardenProxy(log)
	abi := landlockABI()
	if c == ConfineLandlock && abi < 1 {
		return nil, errors.New("sandbox: confinement landlock requested but the kernel does not offer Landlock (Linux ≥ 5.13 with landlock in the lsm= list)")
	}
	if c == ConfineNone {
		abi = 0
	}
	var candidates []runner
	if _, err := os.Stat(selfExe); err == nil {
		candidates = append(candidates, supervisorRunner{abi: abi})
		if abi > 0 && c == ConfineAuto {
			candidates = append(candidates, supervisorRunner{abi: 0})
		}
	}
	if c != ConfineLandlock {
		candidates = append(candidates, directRunner{})
	}
	var errs []error
	for _, r := range candidates {
		err := probe(r)
		if err == nil {
			if len(errs) > 0 || r.confinement() == "none" {
				log.Warn("sandbox: scripts run without write confinement: they can write outside their output directory (including the skill folder) wherever file permissions allow",
					"runner", fmt.Sprintf("%T", r), "unavailable", errors.Join(errs...))
			}
			return r, nil
		}
		errs = append(errs, fmt.Errorf("%T (%s): %w", r, r.confinement(), err))
	}
	return nil, fmt.Errorf("sandbox: no usable way to run scripts: %w", errors.Join(errs...))
}

// probe runs `true` (a no-op every Unix has) with r; nil means r works here.
func probe(r runner) error {
	prog, err := exec.LookPath("true")
	if err != nil {
		return nil // nothing harmless to try; the first real call will tell
	}
	dir, err := os.MkdirTemp("", "skillrouter-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var out strings.Builder
	res := r.run(context.Background(), procSpec{
		argv: []string{prog}, env: []string{"PATH=/usr/bin:/bin"}, dir: dir, writable: []string{dir},
		timeout: 10 * time.Second, stdout: &out, stderr: &out, over: make(chan struct{}),
	})
	switch {
	case res.startErr != nil:
		return res.startErr
	case res.exitCode != 0 || res.killed != "":
		return fmt.Errorf("trial run: exit %d %s %s: %s", res.exitCode, res.signal, res.killed, out.String())
	}
	return nil
}

// hardenProxy marks the proxy process non-dumpable. Processes of the same
// user then need CAP_SYS_PTRACE — which scripts never have (see
// dropCapabilities) — to read its /proc/<pid>/environ, where API keys given
// at start-up live, or its memory. Side effect: the proxy writes no core
// dumps.
func hardenProxy(log *slog.Logger) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		log.Warn("sandbox: could not make the proxy non-dumpable; scripts of the same user may read its environment from /proc", "err", err)
	}
}

// supervisorRunner runs each script under a supervisor process (see
// supervisor_linux.go).
type supervisorRunner struct{ abi int }

func (r supervisorRunner) confinement() string {
	if r.abi < 1 {
		return "none"
	}
	return fmt.Sprintf("landlock ABI %d", r.abi)
}

// appliesLimits: the confiner sets them before it becomes the script.
func (supervisorRunner) appliesLimits() bool { return true }

func (r supervisorRunner) run(ctx context.Context, s procSpec) procResult {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return procResult{exitCode: -1, startErr: err}
	}
	defer statusR.Close()
	args := supervisorArgs(confinementSpec{abi: r.abi, writable: s.writable, limits: s.limits, argv: s.argv})
	cmd := &exec.Cmd{
		Path: selfExe, Args: args, Env: s.env, Dir: s.dir,
		Stdout: s.stdout, Stderr: s.stderr,
		ExtraFiles: []*os.File{statusW},
		// A session of its own: no controlling terminal for the supervisor
		// or the script under it (which, not a session leader, can never
		// acquire one), so a script cannot push keystrokes into the
		// operator's terminal (TIOCSTI) for the shell to run unconfined
		// once the proxy stops. The group id is still the pid.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
		WaitDelay:   waitDelay,
	}
	err = cmd.Start()
	statusW.Close()
	if err != nil {
		return procResult{exitCode: -1, startErr: err}
	}
	pid := cmd.Process.Pid
	statusCh := make(chan supervisorStatus, 1)
	go func() { statusCh <- readStatus(statusR) }()
	exited := make(chan struct{})
	go func() { waitExited(pid); close(exited) }()

	killed := awaitExit(ctx, s.timeout, s.over, exited)
	if killed != "" {
		// Ask the supervisor to tear the tree down (it can reach escaped
		// descendants); kill its group outright if it does not finish.
		_ = syscall.Kill(pid, syscall.SIGTERM)
		t := time.NewTimer(killGrace)
		select {
		case <-exited:
		case <-t.C:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-exited
		}
		t.Stop()
	}
	// Backstop; the supervisor is not reaped yet, so this group id is ours.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	werr := cmd.Wait()
	st := <-statusCh

	res := procResult{killed: killed, exitCode: st.ExitCode, signal: st.Signal, reaped: st.Reaped}
	switch {
	case st.Stage == "start":
		res.startErr = errors.New(strings.TrimPrefix(st.Error, "fork/exec "))
	case st.Stage != "":
		res.startErr = fmt.Errorf("sandbox supervisor (%s): %s", st.Stage, st.Error)
	case st == (supervisorStatus{}) && cmd.ProcessState != nil && !cmd.ProcessState.Success():
		// No report: the supervisor itself died (killed after the grace
		// period, or never got going).
		res.exitCode, res.signal = -1, "killed"
		if killed == "" {
			res.startErr = fmt.Errorf("sandbox supervisor failed: %v", werr)
		}
	}
	return res
}

func readStatus(r io.Reader) supervisorStatus {
	var st supervisorStatus
	b, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	if len(b) > 0 {
		_ = json.Unmarshal(b, &st)
	}
	return st
}
