// Package npmcache installs the npm packages of a package-lock.json once per
// machine, into a cache folder outside the work tree that every later run
// and every clean clone reuses, and links a folder's node_modules to it.
//
// The cache folder is $SKILLROUTER_NODE_CACHE, else
// $XDG_CACHE_HOME/skillrouter/node, else ~/.cache/skillrouter/node; each
// lock file gets its own subfolder named by the hash of package.json and
// package-lock.json, so a change of versions installs anew and never
// disturbs a checkout that still uses the old ones. Concurrent installers
// (go test runs packages in parallel processes) take a file lock, and npm
// installs into a temporary folder that is renamed into place only when
// complete: a killed install leaves nothing that looks finished.
package npmcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillrouter/skillrouter/internal/procgroup"
)

// EnvRoot names the variable that overrides the cache folder.
const EnvRoot = "SKILLROUTER_NODE_CACHE"

// marker is written last into a finished install.
const marker = ".skillrouter-installed"

// Root returns the cache folder (a folder under the system's temporary
// folder where no home is known).
func Root() (string, error) {
	if d := os.Getenv(EnvRoot); d != "" {
		return filepath.Abs(d)
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "skillrouter-node-cache"), nil
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "skillrouter", "node"), nil
}

// Hash names the install of dir's package.json and package-lock.json.
func Hash(dir string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("npm cache: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Ensure makes dir's pinned packages available: it installs them into the
// cache unless a finished install is there (npm ci, run with the caller's
// deadline), then points dir/node_modules at it with a symlink (replacing
// whatever node_modules was there). It returns the node_modules folder in
// the cache.
func Ensure(ctx context.Context, dir string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	hash, err := Hash(dir)
	if err != nil {
		return "", err
	}
	target := filepath.Join(root, hash)
	if !finished(target) {
		if err := install(ctx, dir, root, hash); err != nil {
			return "", err
		}
	}
	modules := filepath.Join(target, "node_modules")
	if err := link(modules, filepath.Join(dir, "node_modules")); err != nil {
		return "", err
	}
	return modules, nil
}

func finished(target string) bool {
	_, err := os.Stat(filepath.Join(target, marker))
	return err == nil
}

func install(ctx context.Context, dir, root, hash string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("npm cache: %w", err)
	}
	unlock, err := lock(ctx, filepath.Join(root, hash+".lock"))
	if err != nil {
		return fmt.Errorf("npm cache: lock: %w", err)
	}
	defer unlock()
	target := filepath.Join(root, hash)
	if finished(target) { // another process finished it while we waited
		return nil
	}
	// Leftovers of killed installs of this hash: nobody else holds the lock.
	old, _ := filepath.Glob(filepath.Join(root, hash+".tmp-*"))
	for _, o := range old {
		_ = os.RemoveAll(o)
	}
	_ = os.RemoveAll(target)
	tmp, err := os.MkdirTemp(root, hash+".tmp-")
	if err != nil {
		return fmt.Errorf("npm cache: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; cleans up a failure
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("npm cache: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return fmt.Errorf("npm cache: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	procgroup.KillOnCancel(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci for %s: %w\n%s", dir, err, tail(out, 4000))
	}
	if err := os.WriteFile(filepath.Join(tmp, marker), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return fmt.Errorf("npm cache: %w", err)
	}
	if err := os.Rename(tmp, target); err != nil {
		return fmt.Errorf("npm cache: %w", err)
	}
	return nil
}

// link makes name a symlink to target, atomically replacing a symlink that
// is there; a real folder left by an older layout is removed first. Callers
// racing on the same name (parallel test processes of one checkout) all
// succeed once one of them has made the link.
func link(target, name string) error {
	var err error
	for range 3 {
		if cur, e := os.Readlink(name); e == nil && cur == target {
			return nil
		}
		if err = tryLink(target, name); err == nil {
			return nil
		}
	}
	return err
}

func tryLink(target, name string) error {
	if fi, err := os.Lstat(name); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		if err := os.RemoveAll(name); err != nil {
			return fmt.Errorf("npm cache: replace %s: %w", name, err)
		}
	}
	f, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp-")
	if err != nil {
		return fmt.Errorf("npm cache: %w", err)
	}
	tmp := f.Name()
	f.Close()
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("npm cache: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("npm cache: %w", err)
	}
	return nil
}

func tail(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// errLockTimeout is returned when the context ends while waiting for
// another installer.
var errLockTimeout = errors.New("waiting for another npm install")
