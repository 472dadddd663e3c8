//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The supervisor is this same binary re-executed (/proc/self/exe) with
// argv[0] = supervisorArg0. Go cannot run code in a forked child before exec,
// so the tree clean-up that needs a living parent (child subreaper) happens
// here, and confinement that must be applied by the process itself
// (Landlock) in a second re-execution, the confiner, which then becomes the
// script (execve):
//
//	proxy ──▶ supervisor (own session, no capabilities, subreaper, fd 3 = status)
//	              └──▶ confiner (Landlock, no capabilities) ═exec═▶ script (own process group) ──▶ its children …
//
// The supervisor stays outside the script's Landlock domain: from ABI 6 the
// domain's signal scoping keeps the script from stopping or killing it (in
// one domain with it, a script that killed it left its escaped descendants
// running past the timeout), and at any ABI from ptracing it.
//
// When the script exits the supervisor kills the script's process group and
// then every process re-parented to it — descendants that left the group
// with setsid() included — and reports the script's exit status as one JSON
// line on fd 3. On SIGTERM (the proxy's timeout) it does the same at once.
const (
	supervisorArg0 = "skillrouter-sandbox-supervisor"
	confinerArg0   = "skillrouter-sandbox-confine"
)

func init() {
	// Only the supervisor and confiner invocations are affected; they never
	// return to the program's main.
	if len(os.Args) > 1 {
		switch os.Args[0] {
		case supervisorArg0:
			runtime.LockOSThread() // no_new_privs and capabilities are per thread; the confiner is forked from this one.
			exitSupervisor(supervise(os.Args[1:]))
		case confinerArg0:
			runtime.LockOSThread() // Landlock is per thread; the script is this thread, exec'd.
			os.Exit(confine(os.Args[1:]))
		}
	}
}

// supervisorStatus is the supervisor's report on fd 3.
type supervisorStatus struct {
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	Stage    string `json:"stage,omitempty"` // where it failed: args | confine | start
	Error    string `json:"error,omitempty"`
	Reaped   int    `json:"reaped,omitempty"`
}

// confinementSpec is what the supervisor and the confiner are told on
// their command lines: the Landlock ABI (0: none), the writable
// directories, the limits and the script's argv.
type confinementSpec struct {
	abi      int
	writable []string
	limits   Limits
	argv     []string
}

// supervisorArgs encodes the supervisor command line: ABI, -w dirs, -l
// limits, --, argv. The confiner's is the same under its own name.
func supervisorArgs(c confinementSpec) []string {
	return confinementArgs(supervisorArg0, c)
}

func confinementArgs(arg0 string, c confinementSpec) []string {
	args := []string{arg0, strconv.Itoa(c.abi)}
	for _, w := range c.writable {
		args = append(args, "-w", w)
	}
	args = append(args, c.limits.args()...)
	args = append(args, "--")
	return append(args, c.argv...)
}

func parseSupervisorArgs(args []string) (confinementSpec, error) {
	var c confinementSpec
	if len(args) == 0 {
		return c, errors.New("missing ABI")
	}
	var err error
	if c.abi, err = strconv.Atoi(args[0]); err != nil {
		return c, fmt.Errorf("ABI %q: %w", args[0], err)
	}
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "-w", "-l":
			if i+1 >= len(args) {
				return c, fmt.Errorf("%s needs a value", args[i])
			}
			if args[i] == "-w" {
				c.writable = append(c.writable, args[i+1])
			} else if err := c.limits.set(args[i+1]); err != nil {
				return c, err
			}
			i++
		case "--":
			if i+1 >= len(args) {
				return c, errors.New("no command after --")
			}
			c.argv = args[i+1:]
			return c, nil
		default:
			return c, fmt.Errorf("unexpected argument %q", args[i])
		}
	}
	return c, errors.New("no command")
}

func supervise(args []string) int {
	status := os.NewFile(3, "status")
	syscall.CloseOnExec(3) // never leak the status pipe to the script's tree
	report := func(st supervisorStatus) { _ = json.NewEncoder(status).Encode(st) }
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	spec, err := parseSupervisorArgs(args)
	if err != nil {
		report(supervisorStatus{ExitCode: -1, Stage: "args", Error: err.Error()})
		return 125
	}
	// no_new_privs: setuid programs (sudo) cannot give the script more
	// rights; no capabilities, even as root (see dropCapabilities). The
	// confiner does both again for itself, with Landlock.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		report(supervisorStatus{ExitCode: -1, Stage: "confine", Error: "no_new_privs: " + err.Error()})
		return 125
	}
	if err := dropCapabilities(); err != nil {
		report(supervisorStatus{ExitCode: -1, Stage: "confine", Error: "capabilities: " + err.Error()})
		return 125
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		report(supervisorStatus{ExitCode: -1, Stage: "start", Error: "child subreaper: " + err.Error()})
		return 125
	}
	closeInheritedOnExec()
	// The confiner reports a failure before its exec on this pipe; a
	// successful exec closes it (close-on-exec) with nothing written.
	failR, failW, err := os.Pipe()
	if err != nil {
		report(supervisorStatus{ExitCode: -1, Stage: "start", Error: err.Error()})
		return 125
	}
	cmd := &exec.Cmd{
		Path: "/proc/self/exe", Args: confinementArgs(confinerArg0, spec), Env: os.Environ(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		ExtraFiles:  []*os.File{failW},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	err = cmd.Start()
	failW.Close()
	if err != nil {
		failR.Close()
		report(supervisorStatus{ExitCode: -1, Stage: "start", Error: err.Error()})
		return 0
	}
	failed, _ := io.ReadAll(failR)
	failR.Close()
	if stage, msg, ok := bytes.Cut(failed, []byte{'\n'}); ok {
		_ = cmd.Wait()
		report(supervisorStatus{ExitCode: -1, Stage: string(stage), Error: string(msg)})
		return 0
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { waitExited(pid); close(exited) }()
	select {
	case <-exited:
	case <-sigs:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
	// The script is a zombie until Wait, so its group id cannot have been
	// reused: kill what it left running in its group.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = cmd.Wait()
	st := exitStatus(cmd.ProcessState)
	st.Reaped = reapOrphans()
	report(st)
	return 0
}

// confine is the confiner: it gives up the script's rights for itself
// (no_new_privs, Landlock with the writable directories, capabilities) and
// becomes the script. A failure before the exec is written to fd 3 as
// "stage\nmessage" (stage: args, confine or start).
func confine(args []string) int {
	fail := os.NewFile(3, "fail")
	syscall.CloseOnExec(3)
	report := func(stage string, err error) int {
		fmt.Fprintf(fail, "%s\n%s", stage, err)
		return 125
	}
	spec, err := parseSupervisorArgs(args)
	if err != nil {
		return report("args", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return report("confine", fmt.Errorf("no_new_privs: %w", err))
	}
	sacrifice() // before Landlock, which would refuse the write to /proc
	if spec.abi > 0 {
		if err := restrictWrites(spec.abi, spec.writable); err != nil {
			return report("confine", err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return report("confine", fmt.Errorf("capabilities: %w", err))
	}
	if err := refuseUnixSockets(); err != nil && !errors.Is(err, errNoSeccompArch) {
		return report("confine", fmt.Errorf("seccomp: %w", err))
	}
	closeInheritedOnExec()
	// Last: a memory limit below what this Go process has mapped already
	// would fail its next allocation; the exec starts the script afresh.
	if err := setLimits(spec.limits); err != nil {
		return report("confine", err)
	}
	err = unix.Exec(spec.argv[0], spec.argv, os.Environ())
	return report("start", &os.PathError{Op: "fork/exec", Path: spec.argv[0], Err: err})
}

// dropCapabilities leaves the calling thread — and so the script it forks —
// without capabilities, even when the proxy runs as root: no
// CAP_SYS_PTRACE to read the non-dumpable proxy's /proc/<pid>/environ or
// memory, no CAP_DAC_OVERRIDE, CAP_KILL, CAP_SYS_ADMIN. Dropping them from
// the bounding set keeps a root script from regaining them at exec.
func dropCapabilities() error {
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EINVAL {
			break // past the kernel's last capability
		}
		if err == unix.EPERM {
			break // no CAP_SETPCAP: not privileged, nothing to drop
		}
		if err != nil {
			return fmt.Errorf("drop %d from the bounding set: %w", c, err)
		}
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// waitExited blocks until pid has exited without reaping it (WNOWAIT), so
// its pid — and the process group named after it — stay reserved.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

func exitStatus(ps *os.ProcessState) supervisorStatus {
	if ps == nil {
		return supervisorStatus{ExitCode: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return supervisorStatus{ExitCode: -1, Signal: ws.Signal().String()}
	}
	return supervisorStatus{ExitCode: ps.ExitCode()}
}

// reapOrphans kills and reaps every remaining child of the supervisor: as a
// child subreaper it inherits all descendants whose parents died, whatever
// process group or session they moved to. Rounds repeat because killing a
// process re-parents its children to us.
func reapOrphans() int {
	self := os.Getpid()
	n := 0
	for round := 0; round < 1000; round++ {
		kids := childrenOf(self)
		if len(kids) == 0 {
			break
		}
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		for _, k := range kids {
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(k, &ws, 0, nil); err == nil {
				n++
			}
		}
	}
	return n
}

// childrenOf lists the processes whose parent is ppid, from /proc/*/stat.
func childrenOf(ppid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if parentOf(b) == ppid {
			kids = append(kids, pid)
		}
	}
	return kids
}

// parentOf parses the ppid from a /proc/<pid>/stat line: "pid (comm) S ppid …";
// comm may hold spaces and parentheses, so fields start after the last ')'.
func parentOf(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return -1
	}
	return ppid
}
