//go:build !unix

package private

import "os"

// Check: without Unix ownership there is nothing to check here.
func Check(string) error { return nil }

// WritableByOthers: without Unix permissions there is nothing to check here.
func WritableByOthers(os.FileInfo) bool { return false }

// Mode: without Unix permissions there is nothing to show.
func Mode(fi os.FileInfo) string { return fi.Mode().String() }

// CheckPath: without Unix ownership there is nothing to check here.
func CheckPath(string, string) error { return nil }

// CheckEntry: without Unix ownership there is nothing to check here.
func CheckEntry(string, os.FileInfo) error { return nil }

// SharedAncestor: without Unix permissions there is nothing to check here.
func SharedAncestor(string) string { return "" }

// Foreign: without Unix ownership there is nothing to check here.
func Foreign(os.FileInfo) (int, bool) { return 0, false }

// Exposed: without Unix permissions there is nothing to check here.
func Exposed(string) (string, error) { return "", nil }
