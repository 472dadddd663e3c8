//go:build !unix

package private

// Check: without Unix ownership there is nothing to check here.
func Check(string) error { return nil }

// SharedAncestor: without Unix permissions there is nothing to check here.
func SharedAncestor(string) string { return "" }
