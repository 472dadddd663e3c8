// Package privatetest gives tests of the private rules files whose group
// other users share.
package privatetest

import (
	"os"
	"testing"
)

// ShareGroup gives path a group that is no user's private group (which
// the private rules count as its owner alone), so that its group
// permissions reach other users: for root a group no user has, for others
// one of their supplementary groups (a private group is its user's
// primary one). It skips t when this user has none.
func ShareGroup(t testing.TB, path string) {
	t.Helper()
	gid := -1
	if os.Geteuid() == 0 {
		gid = 4242
	} else if groups, err := os.Getgroups(); err == nil {
		for _, g := range groups {
			if g != os.Getegid() {
				gid = g
				break
			}
		}
	}
	if gid < 0 {
		t.Skip("this user is in no group but its primary one to give a file")
	}
	if err := os.Lchown(path, -1, gid); err != nil {
		t.Fatal(err)
	}
}
