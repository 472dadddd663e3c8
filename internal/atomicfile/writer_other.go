//go:build !linux

package atomicfile

// machineID is unknown outside Linux (no boot id and pid namespace to tell
// this machine's processes from another's): every temporary file waits
// for othersAfter.
func machineID() string { return "" }

func processAlive(int) bool { return true }
