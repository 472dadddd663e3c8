//go:build !unix

package npmcache

import (
	"context"
)

// lock is a no-op where flock is missing: the rename into place still keeps
// a half-done install from being used.
func lock(context.Context, string) (func(), error) { return func() {}, nil }
