package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/skillrouter/skillrouter/skills"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultTimeout     = 60 * time.Second
	DefaultOutputLimit = 100 << 10 // bytes of stdout+stderr kept per execution
	DefaultReadLimit   = 64 << 10  // bytes returned by read_skill_resource
	DefaultOutputTTL   = 24 * time.Hour
)

// Confinement chooses how scripts are kept from writing outside their
// output directories.
type Confinement string

const (
	// ConfineAuto uses Landlock when the kernel offers it and runs
	// unconfined (with a warning at start-up) otherwise.
	ConfineAuto Confinement = "auto"
	// ConfineLandlock requires Landlock; New fails without it.
	ConfineLandlock Confinement = "landlock"
	// ConfineNone never restricts file-system writes.
	ConfineNone Confinement = "none"
)

// Config configures tier 3. The zero value is disabled; zero fields take the
// defaults documented on each field.
type Config struct {
	Enabled bool

	Timeout     time.Duration // per execution, then the whole process tree is killed; default 60s
	OutputLimit int           // bytes of stdout+stderr kept per execution, beyond which the process is stopped; default 100 KiB
	ReadLimit   int           // bytes read_skill_resource returns; default 64 KiB

	// Env names extra variables for scripts: "NAME" passes the proxy's value
	// through (when set), "NAME=value" sets it. Names starting with
	// SKILLROUTER_ are refused: they are the proxy's own settings and secrets.
	Env []string

	Concurrency int // executions running at once; default max(2, NumCPU)
	Queue       int // executions waiting for a slot before new ones are refused; default 2×Concurrency; <0 = none wait

	// OutputRoot holds one directory per conversation (working directory,
	// HOME and TMPDIR of its scripts); default DefaultOutputRoot().
	OutputRoot string
	// OutputTTL removes conversation directories unused for this long;
	// default 24h; <0 keeps them forever.
	OutputTTL time.Duration

	// AllowedTools (exec.allowed_tools) lists the gated tool names: client
	// tools of these names are withheld from upstream requests unless an
	// active skill's allowed-tools frontmatter enables them (see GatedTool
	// and AllowedTools). An entry "x*" covers every name starting with "x";
	// "*" covers all. Applies whether or not Enabled is set.
	AllowedTools []string

	Confinement Confinement // default auto

	// Limits bound each process of a script (memory, file size, the
	// user's processes); none by default.
	Limits Limits

	// LibraryRoots are the folders the skill library is loaded from. The
	// output root may not overlap any of them: a script writing a SKILL.md
	// into its working folder would add a skill to every conversation's
	// prompts (and an executable one, code the proxy runs).
	LibraryRoots []string

	// Lookup resolves a skill id in the whole library (as load_skill does:
	// skills.Snapshot.Resolve), so a call naming a skill that exists but is
	// not active gets "load it first" rather than "unknown skill". Nil:
	// every inactive id is reported unknown.
	Lookup func(id string) (*skills.Skill, bool)
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Effective validates c and returns it with the values its zero fields
// stand for (for --print-config).
func (c Config) Effective() (Config, error) { return c.withDefaults() }

// withDefaults validates c and fills zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.OutputLimit <= 0 {
		c.OutputLimit = DefaultOutputLimit
	}
	if c.ReadLimit <= 0 {
		c.ReadLimit = DefaultReadLimit
	}
	if c.Concurrency <= 0 {
		c.Concurrency = max(2, runtime.NumCPU())
	}
	switch {
	case c.Queue == 0:
		c.Queue = 2 * c.Concurrency
	case c.Queue < 0:
		c.Queue = 0
	}
	if c.OutputTTL == 0 {
		c.OutputTTL = DefaultOutputTTL
	}
	if c.OutputRoot == "" {
		c.OutputRoot = DefaultOutputRoot()
	}
	abs, err := filepath.Abs(c.OutputRoot)
	if err != nil {
		return c, fmt.Errorf("sandbox: output root %q: %w", c.OutputRoot, err)
	}
	if filepath.Dir(abs) == abs {
		// The sweeper removes old entries under the root; never let it be "/".
		return c, fmt.Errorf("sandbox: output root %q must not be a file-system root", c.OutputRoot)
	}
	c.OutputRoot = abs
	switch c.Confinement {
	case "":
		c.Confinement = ConfineAuto
	case ConfineAuto, ConfineLandlock, ConfineNone:
	default:
		return c, fmt.Errorf("sandbox: confinement %q: want auto, landlock or none", c.Confinement)
	}
	for _, e := range c.Env {
		name, _, _ := strings.Cut(e, "=")
		if !envNameRE.MatchString(name) {
			return c, fmt.Errorf("sandbox: env entry %q: not a valid variable name", name) // the value may be a secret
		}
		if strings.HasPrefix(strings.ToUpper(name), "SKILLROUTER_") {
			return c, fmt.Errorf("sandbox: env %q: SKILLROUTER_* variables are the proxy's own settings and are never passed to scripts", name)
		}
		switch name {
		case "PATH", "HOME", "LANG", "TMPDIR":
			return c, fmt.Errorf("sandbox: env %q: set by the sandbox itself", name)
		}
	}
	return c, c.Limits.validate()
}

// The variables a script gets besides PATH, HOME, LANG and TMPDIR: its
// conversation's out/ folder (also its working directory) and its skill's
// folder.
const (
	EnvOutputDir = "SKILLROUTER_OUTPUT_DIR"
	EnvSkillDir  = "SKILLROUTER_SKILL_DIR"
)

// DefaultOutputRoot is the output root when none is configured: out/ in
// the user's cache folder ($XDG_CACHE_HOME/skillrouter, else
// ~/.cache/skillrouter, beside the index cache), else, without one, a
// folder per user in the temporary directory. Not the temporary directory
// first: every user can write /tmp, and npm (npx tsx) and uv read project
// files from the parent folders of a script's working folder, so a
// /tmp/node_modules of another user's would run as this one (New also
// refuses a root another user owns or can write to).
func DefaultOutputRoot() string {
	if base, err := os.UserCacheDir(); err == nil && filepath.IsAbs(base) {
		return filepath.Join(base, "skillrouter", "out")
	}
	return tempOutputRoot()
}

// tempOutputRoot is the output root in the temporary directory: the
// default without a cache folder, or with one that cannot be written (a
// read-only home or mount).
func tempOutputRoot() string {
	return filepath.Join(os.TempDir(), "skillrouter-out-"+strconv.Itoa(os.Getuid()))
}
