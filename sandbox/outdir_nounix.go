//go:build !unix

package sandbox

// checkPrivate: tier 3 needs a Unix system (New fails elsewhere).
func checkPrivate(string) error { return nil }
