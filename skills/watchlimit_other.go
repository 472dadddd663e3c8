//go:build !linux

package skills

// watchLimitHint says which limit to raise: kqueue opens every watched
// folder and file.
func watchLimitHint() string {
	return "raise the open-file limit (ulimit -n; launchctl limit maxfiles on macOS), or watch: false"
}
