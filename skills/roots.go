package skills

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/skillrouter/skillrouter/internal/private"
)

// Root is a folder searched for skills when none is given, and whose
// convention it follows.
type Root struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// DefaultRootCandidates lists the ecosystem's conventional skill folders in
// search order, whether or not they exist (for `router skills roots`, help
// texts and messages). Project folders come first so a repository can
// override a user's skills; plugin skills come after the user's own.
func DefaultRootCandidates() []Root {
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	return rootCandidates(wd, home, os.Getenv)
}

// DefaultRoots returns the conventional roots that exist, in order. A folder
// reachable under two names (run from $HOME, ./.claude/skills is
// ~/.claude/skills) is returned once, under its first name. One another
// user owns is left out (see ForeignDefaultRoots).
func DefaultRoots() []string {
	roots, _ := defaultRoots()
	return roots
}

// ForeignDefaultRoots lists the conventional folders that exist but belong
// to a user other than this one and root, which DefaultRoots leaves out:
// run from a shared folder (/tmp), ./.claude/skills may be anyone's, and its
// skills would go into this user's prompts (and with script execution, run
// as this user). Given with --skills, such a folder is read.
func ForeignDefaultRoots() []string {
	_, foreign := defaultRoots()
	return foreign
}

func defaultRoots() (roots, foreign []string) {
	var infos []os.FileInfo
outer:
	for _, r := range DefaultRootCandidates() {
		info, err := os.Stat(r.Path)
		if err != nil || !info.IsDir() {
			continue
		}
		for _, prev := range infos {
			if os.SameFile(prev, info) {
				continue outer
			}
		}
		infos = append(infos, info)
		if _, other := private.Foreign(info); other {
			foreign = append(foreign, r.Path)
			continue
		}
		roots = append(roots, r.Path)
	}
	return roots, foreign
}

// rootCandidates is DefaultRootCandidates for a working directory, a home
// folder and an environment.
func rootCandidates(wd, home string, getenv func(string) string) []Root {
	out := []Root{{filepath.Join(".", ".claude", "skills"), "Claude Code project skills"}}
	// Codex reads .agents/skills in every folder from the working directory
	// up to the repository root, nearest first.
	for i, dir := range upToRepoRoot(wd) {
		if i == 0 {
			out = append(out, Root{filepath.Join(".", ".agents", "skills"), "Agent Skills project skills (Codex)"})
			continue
		}
		out = append(out, Root{filepath.Join(dir, ".agents", "skills"), "Agent Skills project skills, parent folder (Codex)"})
	}
	claude := getenv("CLAUDE_CONFIG_DIR")
	if claude == "" && home != "" {
		claude = filepath.Join(home, ".claude")
	}
	codex := getenv("CODEX_HOME")
	if codex == "" && home != "" {
		codex = filepath.Join(home, ".codex")
	}
	if claude != "" {
		out = append(out, Root{filepath.Join(claude, "skills"), "Claude Code user skills"})
	}
	if home != "" {
		out = append(out, Root{filepath.Join(home, ".agents", "skills"), "Agent Skills user skills (Codex)"})
	}
	if codex != "" {
		out = append(out, Root{filepath.Join(codex, "skills"), "Codex user skills (older location)"})
	}
	if claude != "" {
		out = append(out, claudePluginRoots(claude, wd)...)
	}
	if cfg := xdgConfigHome(home, getenv); cfg != "" {
		out = append(out, Root{filepath.Join(cfg, "skillrouter", "skills"), "skillrouter user skills"})
	}
	return out
}

// upToRepoRoot lists wd and its parents up to the nearest one holding .git
// (a folder, or a file in worktrees and submodules). Outside a repository
// it is wd alone.
func upToRepoRoot(wd string) []string {
	if wd == "" {
		return []string{""}
	}
	var chain []string
	for dir := filepath.Clean(wd); ; {
		chain = append(chain, dir)
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return chain
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return chain[:1]
		}
		dir = parent
	}
}

// xdgConfigHome follows the XDG base directory spec: $XDG_CONFIG_HOME when
// set to an absolute path, else ~/.config.
func xdgConfigHome(home string, getenv func(string) string) string {
	if v := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(v) {
		return v
	}
	if home != "" {
		return filepath.Join(home, ".config")
	}
	return ""
}

// pluginInstall is one installation of a plugin in Claude Code's
// plugins/installed_plugins.json.
type pluginInstall struct {
	Scope       string `json:"scope"`       // user, project, local
	ProjectPath string `json:"projectPath"` // for project and local scopes
	InstallPath string `json:"installPath"`
}

// claudePluginRoots lists the skill folders of the Claude Code plugins
// installed under claude (its config folder) that apply in wd: every
// user-scope install, and project or local ones whose project holds wd.
// Plugins switched off in settings.json (enabledPlugins: false) are left
// out. No file, or one that does not parse, gives none: Claude Code may
// not be installed, and its internal files are not ours to complain about.
func claudePluginRoots(claude, wd string) []Root {
	b, err := os.ReadFile(filepath.Join(claude, "plugins", "installed_plugins.json"))
	if err != nil {
		return nil
	}
	var file struct {
		Plugins map[string]json.RawMessage `json:"plugins"`
	}
	if json.Unmarshal(b, &file) != nil {
		return nil
	}
	var settings struct {
		EnabledPlugins map[string]bool `json:"enabledPlugins"`
	}
	if sb, err := os.ReadFile(filepath.Join(claude, "settings.json")); err == nil {
		_ = json.Unmarshal(sb, &settings)
	}
	ids := make([]string, 0, len(file.Plugins))
	for id := range file.Plugins {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []Root
	for _, id := range ids {
		if on, ok := settings.EnabledPlugins[id]; ok && !on {
			continue
		}
		// Version 2 keeps a list of installs per plugin; version 1 one object.
		var installs []pluginInstall
		raw := file.Plugins[id]
		if json.Unmarshal(raw, &installs) != nil {
			var one pluginInstall
			if json.Unmarshal(raw, &one) != nil {
				continue
			}
			installs = []pluginInstall{one}
		}
		for _, in := range installs {
			if in.InstallPath == "" || !appliesIn(in, wd) {
				continue
			}
			for _, dir := range pluginSkillDirs(in.InstallPath) {
				r := Root{dir, "Claude Code plugin " + id}
				if !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

func appliesIn(in pluginInstall, wd string) bool {
	if in.Scope == "" || in.Scope == "user" || in.ProjectPath == "" {
		return true
	}
	p := filepath.Clean(in.ProjectPath)
	return wd == p || strings.HasPrefix(wd, p+string(filepath.Separator))
}

// pluginSkillDirs is a plugin's skills/ folder plus any folders its
// manifest (.claude-plugin/plugin.json "skills": a path or a list) adds.
func pluginSkillDirs(install string) []string {
	install = filepath.Clean(install)
	dirs := []string{filepath.Join(install, "skills")}
	b, err := os.ReadFile(filepath.Join(install, ".claude-plugin", "plugin.json"))
	if err != nil {
		return dirs
	}
	var m struct {
		Skills json.RawMessage `json:"skills"`
	}
	if json.Unmarshal(b, &m) != nil || len(m.Skills) == 0 {
		return dirs
	}
	var extra []string
	var one string
	if json.Unmarshal(m.Skills, &one) == nil {
		extra = []string{one}
	} else {
		_ = json.Unmarshal(m.Skills, &extra)
	}
	for _, e := range extra {
		if e == "" {
			continue
		}
		d := filepath.Clean(filepath.Join(install, e))
		if !within(install, d) {
			continue // a manifest names folders of its own plugin only
		}
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}
