package skills

import (
	"os"
	"path/filepath"
)

// DefaultRootCandidates lists the ecosystem's conventional skill folders in
// search order, whether or not they exist (for help texts and messages).
// Project folders come first so a repository can override a user's skills.
func DefaultRootCandidates() []string {
	out := []string{
		filepath.Join(".", ".claude", "skills"),
		filepath.Join(".", ".agents", "skills"),
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		out = append(out,
			filepath.Join(home, ".claude", "skills"),
			filepath.Join(home, ".codex", "skills"))
	}
	if cfg := xdgConfigHome(); cfg != "" {
		out = append(out, filepath.Join(cfg, "skillrouter", "skills"))
	}
	return out
}

// xdgConfigHome follows the XDG base directory spec: $XDG_CONFIG_HOME when
// set to an absolute path, else ~/.config.
func xdgConfigHome() string {
	if v := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(v) {
		return v
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".config")
	}
	return ""
}

// DefaultRoots returns the ecosystem's conventional roots that exist, in order.
// A folder reachable under two names (run from $HOME, ./.claude/skills is
// ~/.claude/skills) is returned once, under its first name.
func DefaultRoots() []string {
	var out []string
	var infos []os.FileInfo
outer:
	for _, dir := range DefaultRootCandidates() {
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			continue
		}
		for _, prev := range infos {
			if os.SameFile(prev, info) {
				continue outer
			}
		}
		infos = append(infos, info)
		out = append(out, dir)
	}
	return out
}
