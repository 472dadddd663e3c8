//go:build unix

package npmcache

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeNpm puts an npm on PATH that records each call in log and creates
// node_modules/pkg, as npm ci would.
func fakeNpm(t *testing.T, log string) {
	t.Helper()
	bin := t.TempDir()
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\nsleep 0.2\nmkdir -p node_modules/pkg && echo ok > node_modules/pkg/index.js\n"
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func project(t *testing.T, lock string) string {
	t.Helper()
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"p"}`), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(lock), 0o644)
	return dir
}

// TestEnsureInstallsOnce: concurrent callers and later checkouts share one
// install; node_modules becomes a symlink into the cache.
func TestEnsureInstallsOnce(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(EnvRoot, cache)
	log := filepath.Join(t.TempDir(), "npm.log")
	fakeNpm(t, log)
	a, b := project(t, `{"v":1}`), project(t, `{"v":1}`)
	// An old layout: a real node_modules folder in the work tree.
	_ = os.MkdirAll(filepath.Join(a, "node_modules", "stale"), 0o755)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(dir string) {
			defer wg.Done()
			if _, err := Ensure(context.Background(), dir); err != nil {
				errs <- err
			}
		}([]string{a, b}[i%2])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(log)
	if n := strings.Count(string(calls), "\n"); n != 1 || !strings.HasPrefix(string(calls), "ci ") {
		t.Fatalf("npm ran %d times: %q", n, calls)
	}
	for _, dir := range []string{a, b} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "pkg", "index.js")); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if fi, _ := os.Lstat(filepath.Join(dir, "node_modules")); fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s/node_modules is not a symlink", dir)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "*.tmp-*")); len(left) > 0 {
		t.Fatalf("temporary folders left: %v", left)
	}

	// Another lock file installs beside the first.
	c := project(t, `{"v":2}`)
	if _, err := Ensure(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	calls, _ = os.ReadFile(log)
	if n := strings.Count(string(calls), "\n"); n != 2 {
		t.Fatalf("npm ran %d times, want 2", n)
	}
}

// TestEnsureFailureLeavesNothing: a failed npm ci is reported with its
// output and leaves no install that looks finished.
func TestEnsureFailureLeavesNothing(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(EnvRoot, cache)
	bin := t.TempDir()
	_ = os.WriteFile(filepath.Join(bin, "npm"), []byte("#!/bin/sh\nmkdir -p node_modules\necho registry unreachable >&2\nexit 1\n"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := project(t, `{}`)
	_, err := Ensure(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "registry unreachable") {
		t.Fatalf("err %v", err)
	}
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			t.Fatalf("left %s in the cache", e.Name())
		}
	}
}
