package skills

import (
	"encoding/json"
	"errors"
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
	// base is the folder the convention starts from (the working folder,
	// a parent folder, the home folder, a folder a variable names, /):
	// Check checks the path from there down.
	base string
}

// Check says why DefaultRoots does not read r, a folder found by
// convention (DefaultRootCandidates): nil when it does. Run from a shared
// folder (/tmp), ./.claude/skills may be anyone's, and its skills would go
// into this user's prompts (and with script execution, run as this user).
// So the folder, and every folder on its path from where the convention
// starts (the working folder, or for a parent's .agents/skills that
// parent; the home folder; a folder $CLAUDE_CONFIG_DIR, $CODEX_HOME or
// $XDG_CONFIG_HOME names outside it; / for a plugin installed elsewhere),
// must belong to this user or root and be writable by no one else; a
// symlink among them must be this user's or root's, and the folders it
// leads to pass the same test (private.CheckPath). A root given with
// --skills is not checked: Check of a Root not from
// DefaultRootCandidates is nil.
func (r Root) Check() error { return r.checkBelow(r.Path) }

// checkBelow applies Check's rule to p, r.Path or a path below it, from
// where r's convention starts down to p: the one rule for the root itself
// and for what the scan reads below it (Options.Conventional). nil for a
// root not found by convention.
func (r Root) checkBelow(p string) error {
	if r.base == "" {
		return nil
	}
	return private.CheckPath(r.base, p)
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

// CheckedRoot is one candidate of DefaultRootCandidates as DefaultRoots
// sees it: read when Err, Refused and SameAs are all empty.
type CheckedRoot struct {
	Root
	// Err is why the folder cannot be read at all (it does not exist, it
	// is a file).
	Err error
	// Refused is why the folder is not read though it exists (Check).
	Refused error
	// SameAs is the earlier candidate that is the same folder, read under
	// that name.
	SameAs string
}

// Read reports whether DefaultRoots reads the candidate.
func (c CheckedRoot) Read() bool { return c.Err == nil && c.Refused == nil && c.SameAs == "" }

// CheckDefaultRoots decides, for each candidate of DefaultRootCandidates in
// order, whether DefaultRoots reads it, and why not (CheckRoots, with each
// candidate's Check).
func CheckDefaultRoots() []CheckedRoot {
	return CheckRoots(DefaultRootCandidates(), true)
}

// CheckRoots decides, for each root in order, whether it is read: it must
// be a folder, and with conventional, pass its Check. A folder reachable
// under two names (run from $HOME, ./.claude/skills is ~/.claude/skills)
// is read once, under the first name it is read by: a refused name (a
// symlink of another user's to this user's folder) hides no other.
func CheckRoots(roots []Root, conventional bool) []CheckedRoot {
	out := make([]CheckedRoot, len(roots))
	var infos []os.FileInfo
	var names []string
	for i, r := range roots {
		c := CheckedRoot{Root: r}
		info, err := os.Stat(r.Path)
		switch {
		case err != nil:
			c.Err = err
		case !info.IsDir():
			c.Err = errors.New(r.Path + " is a file, not a folder")
		default:
			if conventional {
				if c.Refused = r.Check(); c.Refused != nil {
					break
				}
			}
			for k, prev := range infos {
				if os.SameFile(prev, info) {
					c.SameAs = names[k]
					break
				}
			}
			if c.SameAs == "" {
				infos, names = append(infos, info), append(names, r.Path)
			}
		}
		out[i] = c
	}
	return out
}

// DefaultRoots returns the conventional roots that exist and that Check
// accepts, in order, each folder once, and those that exist but Check
// refuses (CheckDefaultRoots).
func DefaultRoots() (roots []string, refused []CheckedRoot) {
	for _, c := range CheckDefaultRoots() {
		if c.Refused != nil {
			refused = append(refused, c)
		}
		if c.Read() {
			roots = append(roots, c.Path)
		}
	}
	return roots, refused
}

// rootCandidates is DefaultRootCandidates for a working directory, a home
// folder and an environment.
func rootCandidates(wd, home string, getenv func(string) string) []Root {
	out := []Root{{filepath.Join(".", ".claude", "skills"), "Claude Code project skills", "."}}
	// Codex reads .agents/skills in every folder from the working directory
	// up to the repository root, nearest first.
	for i, dir := range upToRepoRoot(wd) {
		if i == 0 {
			out = append(out, Root{filepath.Join(".", ".agents", "skills"), "Agent Skills project skills (Codex)", "."})
			continue
		}
		out = append(out, Root{filepath.Join(dir, ".agents", "skills"), "Agent Skills project skills, parent folder (Codex)", dir})
	}
	project := len(out)
	claude := getenv("CLAUDE_CONFIG_DIR")
	if claude == "" && home != "" {
		claude = filepath.Join(home, ".claude")
	}
	codex := getenv("CODEX_HOME")
	if codex == "" && home != "" {
		codex = filepath.Join(home, ".codex")
	}
	if claude != "" {
		out = append(out, Root{Path: filepath.Join(claude, "skills"), Source: "Claude Code user skills"})
	}
	if home != "" {
		out = append(out, Root{Path: filepath.Join(home, ".agents", "skills"), Source: "Agent Skills user skills (Codex)"})
	}
	if codex != "" {
		out = append(out, Root{Path: filepath.Join(codex, "skills"), Source: "Codex user skills (older location)"})
	}
	if claude != "" {
		out = append(out, claudePluginRoots(claude, wd)...)
	}
	cfg := xdgConfigHome(home, getenv)
	if cfg != "" {
		out = append(out, Root{Path: filepath.Join(cfg, "skillrouter", "skills"), Source: "skillrouter user skills"})
	}
	// The user's folders are checked from the home folder down; one a
	// variable puts elsewhere from that folder; a plugin installed outside
	// both from /.
	for i := project; i < len(out); i++ {
		out[i].base = string(filepath.Separator)
		for _, b := range []string{home, claude, codex, cfg} {
			if b != "" && within(filepath.Clean(b), filepath.Clean(out[i].Path)) {
				out[i].base = b
				break
			}
		}
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
				r := Root{Path: dir, Source: "Claude Code plugin " + id}
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
