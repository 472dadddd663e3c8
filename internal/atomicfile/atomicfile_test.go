package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
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

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	files := []struct {
		name  string
		old   bool
		stays bool
	}{
		{".tmp-1", true, false},   // a killed writer's
		{".tmp-2", false, true},   // a live writer's
		{"index.bin", true, true}, // not a temporary file
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		os.WriteFile(p, []byte("x"), 0o644)
		if f.old {
			os.Chtimes(p, old, old)
		}
	}
	os.Mkdir(filepath.Join(dir, ".tmp-dir"), 0o755)
	os.Chtimes(filepath.Join(dir, ".tmp-dir"), old, old)
	RemoveStale(dir, time.Now().Add(-time.Minute))
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if stays := err == nil; stays != f.stays {
			t.Errorf("%s: kept %v, want %v", f.name, stays, f.stays)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".tmp-dir")); err != nil {
		t.Errorf("a folder was removed: %v", err)
	}
}
