//go:build unix

package private

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(mk("target", 0o700), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir, want string
	}{
		{"private", mk("ok", 0o700), ""},
		{"readable by others is fine", mk("ro", 0o755), ""},
		{"group-writable", mk("gw", 0o770), "writable by other users"},
		{"world-writable", mk("ww", 0o777), "writable by other users"},
		{"symlink", link, "not a directory"},
		{"missing", filepath.Join(base, "nope"), "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.dir)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check(%s) = %v, want %q", c.dir, err, c.want)
			}
		})
	}
}

func TestSharedAncestor(t *testing.T) {
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	own := filepath.Join(shared, "own", "out")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	if got := SharedAncestor(own); got != shared {
		t.Errorf("SharedAncestor(%s) = %q, want %q", own, got, shared)
	}
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := SharedAncestor(own); got != "" && !strings.HasPrefix(base, got) {
		t.Errorf("SharedAncestor(%s) = %q below %s, none of whose folders others can write", own, got, base)
	}
}
