package e2e

// Node clients, installed once per machine from testdata/node's lockfile
// into a cache folder outside the work tree, keyed by the lockfile's hash,
// under a file lock so concurrent test runs do not install twice.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const nodeDir = "testdata/node"

// nodeCache returns the folder holding node_modules for the lockfile.
func nodeCache(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed: skipping the MCP end-to-end tests with Node clients", bin)
		}
	}
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(nodeDir, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		if home, err := os.UserHomeDir(); err == nil {
			base = filepath.Join(home, ".cache")
		} else {
			base = os.TempDir()
		}
	}
	dir := filepath.Join(base, "skillrouter", "node-mcp", hex.EncodeToString(h.Sum(nil))[:16])
	done := filepath.Join(dir, ".installed")
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(done); err == nil {
		return dir // another run installed it while we waited
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, _ := os.ReadFile(filepath.Join(nodeDir, f))
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// nodeScript copies a script from testdata/node next to a link to the
// cached node_modules, so its imports resolve, and returns its path.
func nodeScript(t *testing.T, name string) string {
	t.Helper()
	cache := nodeCache(t)
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(cache, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(nodeDir, name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// nodeBin is an executable the cached packages installed (claude).
func nodeBin(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(nodeCache(t), "node_modules", ".bin", name)
}

// runNode runs a script and returns its stdout; a failure shows both streams.
func runNode(t *testing.T, timeout time.Duration, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(script), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
