//go:build !unix

package private

import "os"

// Check: without Unix ownership there is nothing to check here.
func Check(string) error { return nil }

// SharedAncestor: without Unix permissions there is nothing to check here.
func SharedAncestor(string) string { return "" }

// Foreign: without Unix ownership there is nothing to check here.
func Foreign(os.FileInfo) (int, bool) { return 0, false }
