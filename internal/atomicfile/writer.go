package atomicfile

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// othersAfter is how long a temporary file whose writer cannot be checked
// (another machine's or container's, or a name without a writer) is kept
// after its last write. An index write takes seconds; an hour leaves a
// stalled network file system sixty times what the former minute did, and
// bounds what a killed writer elsewhere costs in space to an hour.
var othersAfter = time.Hour

// machine identifies the set of processes whose liveness this process can
// check (machineID); "" where it cannot be known.
var machine = sync.OnceValue(machineID)

// writerTag names this process in its temporary files: "<machine>-<pid>-",
// or "" (the file name carries no writer) when machine is unknown.
func writerTag() string {
	m := machine()
	if m == "" {
		return ""
	}
	return m + "-" + strconv.Itoa(os.Getpid()) + "-"
}

// writerGone reports whether the temporary file whose name after the
// prefix is rest was written by a process of this machine that no longer
// runs. A reused pid keeps the file (as alive) until othersAfter.
func writerGone(rest string) bool {
	m := machine()
	if m == "" {
		return false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 || parts[0] != m {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	return !processAlive(pid)
}
