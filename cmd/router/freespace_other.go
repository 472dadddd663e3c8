//go:build !(linux || darwin || freebsd)

package main

// freeBytes is not read on this system.
func freeBytes(string) (uint64, bool) { return 0, false }
