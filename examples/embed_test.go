package examples

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// TestUnpack: the unpacked library is byte-identical to examples/skills,
// scripts are executable, and every caller gets the same folder.
func TestUnpack(t *testing.T) {
	parent := t.TempDir()
	dirs := make([]string, 4)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Go(func() {
			d, err := Unpack(parent)
			if err != nil {
				t.Error(err)
			}
			dirs[i] = d
		})
	}
	wg.Wait()
	for _, d := range dirs[1:] {
		if d != dirs[0] {
			t.Fatalf("concurrent unpacks gave different folders: %q", dirs)
		}
	}
	dir := dirs[0]
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("left-over temporary folders in %s: %v", parent, entries)
	}

	n := 0
	err = filepath.WalkDir("skills", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel("skills", p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Errorf("%s not unpacked: %v", rel, err)
			return nil
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from the source", rel)
		}
		src, _ := os.Stat(p)
		dst, _ := os.Stat(filepath.Join(dir, rel))
		if src.Mode().Perm()&0o100 != dst.Mode().Perm()&0o100 {
			t.Errorf("%s: executable bit %v, source %v", rel, dst.Mode(), src.Mode())
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walking the source: %v (%d files)", err, n)
	}

	snap := skills.Load(context.Background(), []string{dir}, skills.Options{})
	if snap.Len() != 10 || len(snap.Problems()) != 0 {
		t.Errorf("unpacked library: %d skills, problems %v", snap.Len(), snap.Problems())
	}
}

// TestUnpackReusesFolder: a second run does not rewrite the library (an
// edit made to the unpacked copy, say by a curious user, stays until the
// binary changes).
func TestUnpackReusesFolder(t *testing.T) {
	parent := t.TempDir()
	dir, err := Unpack(parent)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Unpack(parent)
	if err != nil || again != dir {
		t.Fatalf("second unpack: %q, %v; want %q", again, err, dir)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the folder was rewritten")
	}
}

func TestUnpackUnwritable(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(parent, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Unpack(parent); err == nil {
		t.Fatal("unpacking under a file must fail")
	}
}
