//go:build !unix

package npmcache

import (
	"context"
	"os/exec"
)

// lock is a no-op where flock is missing: the rename into place still keeps
// a half-done install from being used.
func lock(context.Context, string) (func(), error) { return func() {}, nil }

func setProcessGroup(*exec.Cmd) {}
