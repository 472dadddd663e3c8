package skills

import (
	"os"
	"strings"
)

// watchLimitHint says which limit to raise: inotify's, per user and
// shared with every other watcher of that user (editors, IDEs).
func watchLimitHint() string {
	now := "its current value"
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
		now = strings.TrimSpace(string(b))
	}
	return "raise fs.inotify.max_user_watches (now " + now + "; e.g. sysctl -w fs.inotify.max_user_watches=524288, kept in /etc/sysctl.d/), or watch: false"
}
