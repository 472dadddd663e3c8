package bench

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// residentMB returns the process's resident memory in MB after a collection
// that returns freed memory to the system: what the current library, its
// indexes and the harness hold, not garbage of earlier sizes. 0 where
// /proc/self/status is not there (outside Linux).
func residentMB() float64 {
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				kb, err := strconv.ParseFloat(fields[0], 64)
				if err == nil {
					return round(kb/1024, 1)
				}
			}
		}
	}
	return 0
}
