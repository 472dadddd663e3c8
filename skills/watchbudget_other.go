//go:build !(darwin || dragonfly || freebsd || netbsd || openbsd)

package skills

// watchBudget is 0 where watches take no open files from the process's
// limit: inotify counts them against its own (ENOSPC), and Windows gives
// each watched folder a handle, which no small limit bounds.
func watchBudget() int { return 0 }
