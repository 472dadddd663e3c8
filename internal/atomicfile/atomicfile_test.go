package atomicfile

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	for _, tt := range []struct {
		name  string
		write func(string, func(io.Writer) error) error
		fail  bool
	}{
		{"durable", Write, false},
		{"unsynced", WriteUnsynced, false},
		{"durable, the writer fails", Write, true},
		{"unsynced, the writer fails", WriteUnsynced, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "sub", "f")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, []byte("old"), 0o600)
			boom := errors.New("boom")
			err := tt.write(path, func(w io.Writer) error {
				io.WriteString(w, "new")
				if tt.fail {
					return boom
				}
				return nil
			})
			want := "new"
			if tt.fail {
				want = "old"
				if !errors.Is(err, boom) {
					t.Errorf("err = %v, want the writer's", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); string(b) != want {
				t.Errorf("file holds %q, want %q", b, want)
			}
			if fi, err := os.Stat(path); err == nil && !tt.fail && fi.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want 0644", fi.Mode().Perm())
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "sub", tempPattern)); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// TestRemoveStale: a temporary file goes at once when its writer is a
// process of this machine that is gone, and otherwise only once nothing
// has written to it for othersAfter (its writer may be another replica's
// write in progress, stalled in a network file system's fsync).
func TestRemoveStale(t *testing.T) {
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := dead.ProcessState.Pid()
	tag := func(m string, pid int) string { return tempPrefix + m + "-" + strconv.Itoa(pid) + "-12345" }
	const elsewhere = "0123456789ab" // another machine's or container's
	var (
		now     = time.Duration(0)
		minutes = 10 * time.Minute // past the former one-minute cutoff
		long    = othersAfter + time.Minute
	)
	type file struct {
		name  string
		age   time.Duration
		stays bool
	}
	files := []file{
		{tempPrefix + "1234567890", minutes, true}, // no writer in the name (an earlier version's)
		{tempPrefix + "1234567891", long, false},
		{tag(elsewhere, deadPid), minutes, true}, // its pid means nothing here
		{tag(elsewhere, os.Getpid()), long, false},
		{"index.bin", long, true}, // not a temporary file
	}
	if m := machine(); m != "" {
		files = append(files,
			file{tag(m, deadPid), now, false},            // a writer of this machine that is gone
			file{tag(m, os.Getpid()), minutes, true},     // this process's write in progress
			file{tag(m, os.Getppid()), minutes, true},    // another live process's
			file{tag(m, os.Getppid()), long, false},      // alive, or a pid reused: the cutoff holds
			file{tag(m, 0), minutes, true},               // not a pid
			file{tempPrefix + m + "-x-1", minutes, true}, // not a pid
		)
	} else {
		t.Log("no machine identity on this system: only the cutoff applies")
	}
	dir := t.TempDir()
	for i, f := range files {
		f.name += strings.Repeat("0", i) // one file per row
		files[i] = f
		p := filepath.Join(dir, f.name)
		os.WriteFile(p, []byte("x"), 0o644)
		at := time.Now().Add(-f.age)
		os.Chtimes(p, at, at)
	}
	old := time.Now().Add(-2 * othersAfter)
	os.Mkdir(filepath.Join(dir, tempPrefix+"dir"), 0o755)
	os.Chtimes(filepath.Join(dir, tempPrefix+"dir"), old, old)
	RemoveStale(dir)
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if stays := err == nil; stays != f.stays {
			t.Errorf("%s, last written %v ago: kept %v, want %v", f.name, f.age, stays, f.stays)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, tempPrefix+"dir")); err != nil {
		t.Errorf("a folder was removed: %v", err)
	}
}

// TestRemoveStaleBesideWrite: RemoveStale run while this process writes
// (another goroutine's save into the same folder) leaves the write whole.
func TestRemoveStaleBesideWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	err := Write(path, func(w io.Writer) error {
		tmps, _ := filepath.Glob(filepath.Join(dir, tempPattern))
		if len(tmps) != 1 {
			t.Fatalf("temporary files during the write: %v", tmps)
		}
		if m := machine(); m != "" && !strings.HasPrefix(filepath.Base(tmps[0]), tempPrefix+m+"-"+strconv.Itoa(os.Getpid())+"-") {
			t.Errorf("temporary file %s does not name its writer (%s, pid %d)", tmps[0], m, os.Getpid())
		}
		RemoveStale(dir)
		_, err := io.WriteString(w, "new")
		return err
	})
	if err != nil {
		t.Fatalf("the write failed after RemoveStale: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("file holds %q", b)
	}
}
