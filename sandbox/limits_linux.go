//go:build linux

package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// sacrifice makes the calling process, and so the script and what it
// starts, the OOM killer's first choice (oom_score_adj 1000, which any
// process may raise for itself): a script that exhausts the machine's, or a
// container's, memory is killed before the proxy or anything else. Best
// effort: it only ever protects others.
func sacrifice() {
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
}

// setLimits applies l to the calling process, soft and hard limit alike so
// the script cannot raise them, never above a hard limit already set; and
// no core dumps, which would write a crashed script's memory to its folder
// or the system's crash collector.
func setLimits(l Limits) error {
	if err := setLimit("core dumps", unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	for i, v := range l.fields() {
		if *v > 0 {
			if err := setLimit(limitNames[i], limitResources[i], *v); err != nil {
				return err
			}
		}
	}
	return nil
}

// limitResources are the resources Limits' fields set, in the order of
// limitNames.
var limitResources = [len(limitNames)]int{unix.RLIMIT_DATA, unix.RLIMIT_FSIZE, unix.RLIMIT_NPROC}

// setLimit sets resource's soft and hard limit to value, or to its hard
// limit when that is lower.
func setLimit(name string, resource int, value int64) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(resource, &cur); err != nil {
		return fmt.Errorf("%s limit: %w", name, err)
	}
	v := min(uint64(value), cur.Max)
	if err := unix.Setrlimit(resource, &unix.Rlimit{Cur: v, Max: v}); err != nil {
		return fmt.Errorf("%s limit %d: %w", name, v, err)
	}
	return nil
}
