package sandbox

import (
	"context"
	"io"
	"time"
)

// Why a process was stopped before it finished.
const (
	KilledTimeout   = "timeout"
	KilledOutput    = "output_limit"
	KilledCancelled = "cancelled"
)

const (
	// waitDelay bounds how long output pipes are drained after the process
	// tree is gone: a descendant that escaped every kill must not hold a
	// tool call open.
	waitDelay = 2 * time.Second
	// killGrace is how long the supervisor gets to tear the tree down after
	// being asked before its whole process group is killed outright.
	killGrace = 3 * time.Second
)

// procSpec is one process to run under the sandbox rules.
type procSpec struct {
	argv     []string // argv[0]: absolute program path
	env      []string
	dir      string   // working directory
	writable []string // the only directories the process may write (when confined)
	limits   Limits   // per process, under the supervisor
	timeout  time.Duration
	stdout   io.Writer
	stderr   io.Writer
	over     <-chan struct{} // closed when the output cap is reached
}

// procResult is how a process ended.
type procResult struct {
	exitCode int    // -1 when killed by a signal or never started
	signal   string // "killed", "segmentation fault", ...
	killed   string // set when we stopped it: timeout | output_limit | cancelled
	startErr error  // the program could not be started
	reaped   int    // descendants that outlived the script and were killed
}

// runner starts processes; one implementation per platform capability.
type runner interface {
	run(ctx context.Context, s procSpec) procResult
	// confinement names the write restriction applied: "landlock ABI n" or "none".
	confinement() string
}

// awaitExit waits for exited, or decides why the process must be stopped.
func awaitExit(ctx context.Context, timeout time.Duration, over <-chan struct{}, exited <-chan struct{}) string {
	t := time.NewTimer(timeout)
	defer t.Stop()
	var reason string
	select {
	case <-exited:
		return ""
	case <-t.C:
		reason = KilledTimeout
	case <-ctx.Done():
		reason = KilledCancelled
	case <-over:
		reason = KilledOutput
	}
	select {
	case <-exited: // finished on its own meanwhile
		return ""
	default:
		return reason
	}
}
