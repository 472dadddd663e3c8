//go:build !(darwin || dragonfly || freebsd || netbsd || openbsd)

package skills

// watchBudget is 0 where a watch holds no open file (inotify's are counted
// by their own limit; ReadDirectoryChangesW holds one handle per root).
func watchBudget() int { return 0 }
