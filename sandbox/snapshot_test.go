package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotBounded: a script owns its output directory, and the proxy
// walks it before and after every execution of the conversation, outside
// the script's timeout. Folders count against the walk's budget as files
// do: a tree of empty folders (no file at all) must not be walked to its
// end (on the old code it was, complete, however large).
func TestSnapshotBounded(t *testing.T) {
	over := maxSnapshotEntries + 10
	cases := []struct {
		name         string
		make         func(t *testing.T, dir string)
		wantComplete bool
		wantFiles    int // -1: at most maxSnapshotEntries
	}{
		{"few files and folders", func(t *testing.T, dir string) {
			mkdirs(t, filepath.Join(dir, "a", "b"))
			write(t, filepath.Join(dir, "top.txt"), "x")
			write(t, filepath.Join(dir, "a", "b", "deep.txt"), "y")
		}, true, 2},
		{"symlink to a folder is not followed", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "f"), "x")
			if err := os.Symlink("/", filepath.Join(dir, "root")); err != nil {
				t.Fatal(err)
			}
		}, true, 2},
		{"nested empty folders", func(t *testing.T, dir string) {
			for i := range over / 100 {
				for j := range 100 {
					mkdirs(t, filepath.Join(dir, fmt.Sprintf("d%d", i), fmt.Sprintf("e%d", j)))
				}
			}
		}, false, 0},
		{"folders nested deeper than the walk goes", func(t *testing.T, dir string) {
			deep := filepath.Join(dir, strings.Repeat("d/", maxSnapshotDepth+2))
			mkdirs(t, deep)
			write(t, filepath.Join(deep, "bottom.txt"), "x")
			write(t, filepath.Join(dir, "d", "top.txt"), "x")
		}, false, 1},
		{"one folder of many files", func(t *testing.T, dir string) {
			for i := range over {
				write(t, filepath.Join(dir, fmt.Sprintf("f%d", i)), "")
			}
		}, false, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.make(t, dir)
			files, complete := snapshot(dir)
			if complete != c.wantComplete {
				t.Errorf("complete = %v, want %v", complete, c.wantComplete)
			}
			if c.wantFiles >= 0 && len(files) != c.wantFiles {
				t.Errorf("%d files, want %d: %v", len(files), c.wantFiles, files)
			}
			if len(files) > maxSnapshotEntries {
				t.Errorf("%d files, more than the budget %d", len(files), maxSnapshotEntries)
			}
		})
	}
}

func mkdirs(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFilesTruncatedWhenBeforeIsIncomplete: when the walk before a run
// stopped at its budget, the files it did not reach would read as created
// by the run; the result says the list is incomplete, even when the walk
// after it (the script removed files) completes.
func TestFilesTruncatedWhenBeforeIsIncomplete(t *testing.T) {
	requireProgram(t, "python3")
	p, _ := newTestProvider(t, nil)
	sk := scriptSkill(t, "many", "many.py", `import os, sys
n = int(sys.argv[1])
if n > 0:
    for i in range(n):
        open('f%d' % i, 'w').close()
else:
    for i in range(-n):
        os.remove('f%d' % i)
print('ok')
`)
	first := execute(t, p, sk, "c-many", "scripts/many.py", fmt.Sprint(maxSnapshotEntries+5))
	if !first.OK || !first.FilesTruncated {
		t.Fatalf("making more files than the budget: ok %v, files_truncated %v", first.OK, first.FilesTruncated)
	}
	second := execute(t, p, sk, "c-many", "scripts/many.py", "-50")
	if !second.OK || !second.FilesTruncated {
		t.Errorf("after a run that started over the budget: ok %v, files_truncated %v (%d files listed)", second.OK, second.FilesTruncated, len(second.Files))
	}
}
