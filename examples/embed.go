// Package examples carries the example skill library (examples/skills) in
// the binary, so `router demo` and `--skills builtin:examples` work from any
// folder, with no checkout of this repository.
//
// The library is unpacked into a folder rather than read through an fs.FS:
// everything downstream works on real paths (the watcher, the sandbox that
// runs a skill's scripts, the anthropic catalog format that shows where
// SKILL.md lives), and one unpacked copy keeps it that way.
package examples

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

//go:embed skills
var files embed.FS

// Skills returns the example library: one folder per skill.
func Skills() fs.FS {
	sub, err := fs.Sub(files, "skills")
	if err != nil {
		panic(err) // the embedded tree always has it
	}
	return sub
}

// Unpack writes the example library under parent, in a folder named for
// its content (examples-<hash>), and returns that folder. A folder already
// there is reused as it is, so every run of the same binary shares one copy
// and a newer binary gets its own. The copy is written beside its final
// name and renamed into place, so a concurrent or interrupted run never
// leaves a half-written library behind.
func Unpack(parent string) (string, error) {
	lib := Skills()
	sum, err := digest(lib)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(parent, "examples-"+sum)
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir, nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("unpacking the example library: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".examples-*")
	if err != nil {
		return "", fmt.Errorf("unpacking the example library: %w", err)
	}
	if err := writeTree(lib, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("unpacking the example library into %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp made it 0700
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		// Another process won the race: its copy is identical.
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
			return dir, nil
		}
		return "", fmt.Errorf("unpacking the example library: %w", err)
	}
	return dir, nil
}

// writeTree copies every file of lib under dir. embed.FS keeps no file
// modes: a file starting with "#!" is a script and becomes executable.
func writeTree(lib fs.FS, dir string) error {
	return fs.WalkDir(lib, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(lib, p)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if bytes.HasPrefix(b, []byte("#!")) {
			mode = 0o755
		}
		return os.WriteFile(dst, b, mode)
	})
}

// digest hashes every path and content of lib, in path order.
func digest(lib fs.FS) (string, error) {
	var paths []string
	err := fs.WalkDir(lib, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if len(paths) == 0 {
		return "", errors.New("the embedded example library is empty")
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		b, err := fs.ReadFile(lib, p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}
