//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSnapshotStaysInsideWhileFoldersTurnIntoLinks: the snapshot runs
// while another execution of the conversation may run, and that script
// owns the output folder: it can turn a folder the snapshot listed as
// one into a symlink before the snapshot opens it. The snapshot must not
// list (and report) the files of where the link leads, outside.
func TestSnapshotStaysInsideWhileFoldersTurnIntoLinks(t *testing.T) {
	out := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret-name"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(out, "a", "sub")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	link := filepath.Join(out, "a", "l")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		for !stop.Load() {
			// sub: a folder, then a link to outside, and back.
			if err := unix.Renameat2(unix.AT_FDCWD, link, unix.AT_FDCWD, sub, unix.RENAME_EXCHANGE); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { stop.Store(true); <-done }()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := snapshot(out)
		for p := range files {
			if strings.Contains(p, "secret-name") {
				t.Fatalf("the snapshot listed %s, a file outside the output folder", p)
			}
		}
	}
}
