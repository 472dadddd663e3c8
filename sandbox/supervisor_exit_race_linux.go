//go:build race

package sandbox

import "syscall"

// exitSupervisor ends the supervisor. In a race-detector build os.Exit(0)
// finalizes the detector, which sleeps a second (GORACE atexit_sleep_ms)
// whenever more than one thread runs, to let other threads report races;
// the supervisor has reported on fd 3 by then and has nothing to flush (a
// race it ran into is reported when found, on the script's stderr), so
// under `go test -race` that second was only a wait added to every script
// execution. syscall.Exit skips exit hooks: a -cover build's supervisor
// writes no coverage.
func exitSupervisor(code int) { syscall.Exit(code) }
