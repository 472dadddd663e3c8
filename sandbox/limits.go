package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Limits bound what each process of a script may take from the machine
// besides time and output (setrlimit, inherited by the processes it starts).
// Zero fields set nothing. They apply where scripts run under the supervisor
// (Linux); the fallback runner warns at start that it cannot apply them.
type Limits struct {
	// Memory caps each process's data segment in bytes: its heap and
	// private writable mappings, thread stacks included (RLIMIT_DATA).
	// Past it allocations fail (MemoryError, ENOMEM). Address space a
	// runtime only reserves, as V8 and Go do, does not count.
	Memory int64
	// FileSize caps the size in bytes of any file a process writes
	// (RLIMIT_FSIZE); a write past it fails and the process gets SIGXFSZ.
	FileSize int64
	// Processes caps the processes and threads the proxy's user may have at
	// once, the proxy's own included, beyond which fork fails
	// (RLIMIT_NPROC). Linux does not enforce it for root.
	Processes int64
}

// minMemoryLimit is the least Memory accepted: below ~48 MiB Node 20
// hangs at start, below ~40 MiB Go programs stop, so a smaller limit would
// only make scripts fail in ways that do not say why.
const minMemoryLimit = 64 << 20

func (l Limits) validate() error {
	var errs []error
	if l.Memory < 0 || (l.Memory > 0 && l.Memory < minMemoryLimit) {
		errs = append(errs, fmt.Errorf("sandbox: exec.memory_limit %d bytes: want 0 (none) or at least 64MiB: Node 20 hangs with less, Go programs stop", l.Memory))
	}
	if l.FileSize < 0 {
		errs = append(errs, fmt.Errorf("sandbox: exec.file_size_limit %d bytes: want 0 (none) or more", l.FileSize))
	}
	if l.Processes < 0 {
		errs = append(errs, fmt.Errorf("sandbox: exec.max_processes %d: want 0 (none) or more", l.Processes))
	}
	return errors.Join(errs...)
}

// limitNames are the names Limits' fields have on the supervisor's command
// line ("-l memory=N"), in the order of fields.
var limitNames = [...]string{"memory", "file_size", "processes"}

func (l *Limits) fields() [len(limitNames)]*int64 {
	return [...]*int64{&l.Memory, &l.FileSize, &l.Processes}
}

// args encodes the set limits as "-l name=value" pairs.
func (l Limits) args() []string {
	var out []string
	for i, v := range l.fields() {
		if *v > 0 {
			out = append(out, "-l", limitNames[i]+"="+strconv.FormatInt(*v, 10))
		}
	}
	return out
}

// set parses one "name=value" of args into l.
func (l *Limits) set(arg string) error {
	name, value, _ := strings.Cut(arg, "=")
	v, err := strconv.ParseInt(value, 10, 64)
	if err != nil || v <= 0 {
		return fmt.Errorf("limit %q: want name=positive integer", arg)
	}
	i := slices.Index(limitNames[:], name)
	if i < 0 {
		return fmt.Errorf("unknown limit %q", name)
	}
	*l.fields()[i] = v
	return nil
}

// warnLimits says at start which of the limits set will not hold: none
// where scripts run without the supervisor (a runner that applies them says
// so), the process count for root.
func warnLimits(log *slog.Logger, r runner, l Limits) {
	if l == (Limits{}) {
		return
	}
	if a, ok := r.(interface{ appliesLimits() bool }); !ok || !a.appliesLimits() {
		log.Warn("sandbox: exec.memory_limit, exec.file_size_limit and exec.max_processes are not applied: scripts run without the supervisor here",
			"runner", fmt.Sprintf("%T", r))
		return
	}
	if l.Processes > 0 && os.Geteuid() == 0 {
		log.Warn("sandbox: exec.max_processes does not hold: Linux does not enforce a process limit for root; run the proxy as a user of its own")
	}
}
