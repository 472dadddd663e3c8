package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/skillrouter/skillrouter/skills"
)

// defaultRootsHelp names the default roots the way users write them.
const defaultRootsHelp = "./.claude/skills, ./.agents/skills, ~/.claude/skills, ~/.codex/skills, $XDG_CONFIG_HOME/skillrouter/skills"

// addSkillsFlag registers the repeatable --skills flag shared by every
// command that reads a library. StringArray, not StringSlice: a folder name
// may contain a comma.
func addSkillsFlag(fs *pflag.FlagSet, dst *[]string) {
	fs.StringArrayVar(dst, "skills", nil,
		"skill library folder; repeat for several (on duplicate ids the earlier one wins). "+
			"Replaces the defaults, which are those of "+defaultRootsHelp+" that exist")
}

// resolveRoots returns dirs when given, else the default roots that exist.
func resolveRoots(dirs []string) []string {
	if len(dirs) > 0 {
		return dirs
	}
	return skills.DefaultRoots()
}

// requireRoots is resolveRoots for commands that need a library: it fails
// with a message saying what to do when there is nothing to scan.
func requireRoots(dirs []string) ([]string, error) {
	roots := resolveRoots(dirs)
	if len(dirs) == 0 && len(roots) == 0 {
		return nil, errors.New("no skill library found: none of the default folders exists (" + defaultRootsHelp +
			"); pass --skills DIR, e.g. --skills examples/skills")
	}
	for _, r := range roots {
		if info, err := os.Stat(r); err == nil && info.IsDir() {
			return roots, nil
		}
	}
	quoted := make([]string, len(roots))
	for i, r := range roots {
		quoted[i] = fmt.Sprintf("%q", r)
	}
	return nil, fmt.Errorf("no skill library found: --skills %s: no such folder", strings.Join(quoted, ", "))
}
