//go:build !unix

package main

// openFileLimit: no open-file limit to read on this system.
func openFileLimit() (uint64, bool) { return 0, false }
