//go:build unix

package skills

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"
)

// TestLoadSpecialFiles: a FIFO named SKILL.md would block a naive reader
// forever; it and other non-files are reported, never opened.
func TestLoadSpecialFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo", SkillFile), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "dir", SkillFile), 0o755); err != nil {
		t.Fatal(err)
	}
	sk := filepath.Join(root, "ok")
	writeSkill(t, sk, "")
	if err := syscall.Mkfifo(filepath.Join(sk, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := Load(context.Background(), []string{root}, Options{})
	if got := ids(snap.Skills()); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Fatalf("loaded %q", got)
	}
	ps := snap.Problems()
	mustProblem(t, ps, SeverityError, "fifo/SKILL.md", "not a regular file")
	mustProblem(t, ps, SeverityError, "dir/SKILL.md", "is a directory, not a file")
	mustProblem(t, ps, SeverityWarning, "ok/pipe", "not a regular file")
}

// processCPU is the user+system CPU time of this process, so benchmarks can
// report work done independent of how busy the machine is.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
