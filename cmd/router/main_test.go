package main

import (
	"os"
	"testing"
)

// userCache is the user's cache folder as it was before TestMain moved
// XDG_CACHE_HOME: tools built once per machine (helm) stay there.
var userCache, userCacheErr = os.UserCacheDir()

// TestMain points XDG_CACHE_HOME at a folder of this run, so the embedding
// cache and the routing indexes kept for warm starts neither leak between
// tests and runs nor pile up in the user's cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skillrouter-cmd-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
