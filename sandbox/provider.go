// Package sandbox is tier 3 of skillrouter: server-side tools that read files
// from a skill's folder and run its scripts under sandbox rules, and
// executable skills (Lazy Skills `type: executable`) registered as
// first-class tools from their `--help-json` schema.
//
// Provider implements router.ToolProvider. Everything is off unless
// Config.Enabled; while off, Tools offers nothing and the session should
// answer calls of tier-3 tool names (IsTool) with DisabledResult. Provider
// is also the router.ToolGate of Config.AllowedTools (client tools gated by
// skills' allowed-tools), which works whether or not execution is enabled.
//
// Sandbox rules, per execution: the command must resolve inside the skill
// folder (no "..", absolute paths or escaping symlinks); the working
// directory is the conversation's output directory; the environment is
// rebuilt from scratch (PATH, HOME, LANG, TMPDIR, SKILLROUTER_OUTPUT_DIR,
// SKILLROUTER_SKILL_DIR and configured names); a timeout kills the whole
// process tree; stdout+stderr are capped and a process exceeding the cap is
// stopped; background processes are killed when the script exits; a limiter
// bounds concurrent and queued executions; on Linux with Landlock the script
// can write only to its conversation's directories (see landlock_linux.go).
package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/skillrouter/skillrouter/internal/private"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// Names of the built-in tier-3 tools.
const (
	ToolReadResource = "read_skill_resource"
	ToolExecute      = "skill_execute"
)

// reservedNames cannot be taken by an executable skill's schema.
var reservedNames = []string{"load_skill", "search_skills", ToolReadResource, ToolExecute}

// IsTool reports whether name is a built-in tier-3 tool. The session answers
// such calls itself even when execution is disabled (with DisabledResult), so
// they never reach the client.
func IsTool(name string) bool { return name == ToolReadResource || name == ToolExecute }

// Provider offers the tier-3 tools. It is safe for concurrent use; a nil
// *Provider offers nothing.
type Provider struct {
	cfg      Config
	log      *slog.Logger
	runner   runner
	lim      *limiter
	lookPath lookPathFunc

	lastSweep atomic.Int64 // unix nanos of the last output-directory sweep

	schemaMu sync.Mutex
	schemas  map[string]*schemaEntry // by execute-file hash
}

var (
	_ router.ToolProvider = (*Provider)(nil)
	_ router.ToolGate     = (*Provider)(nil)
)

// New builds a Provider. With cfg.Enabled false it only validates cfg and
// returns a Provider whose Tools offers nothing. A nil logger discards.
func New(cfg Config, logger *slog.Logger) (*Provider, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Provider{cfg: c, log: logger, lookPath: exec.LookPath, schemas: map[string]*schemaEntry{}}
	if !c.Enabled {
		return p, nil
	}
	if p.runner, err = newRunner(c.Confinement, logger); err != nil {
		return nil, err
	}
	p.lim = newLimiter(c.Concurrency, c.Queue)
	if err := separateFromLibrary(c.OutputRoot, c.LibraryRoots); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.OutputRoot, 0o700); err != nil {
		if cfg.OutputRoot != "" {
			return nil, fmt.Errorf("sandbox: output root: %w", err)
		}
		// The default, in a cache folder that cannot be written: the
		// temporary directory instead (checked below like any root).
		logger.Info("sandbox: the cache folder cannot be written; script output goes to the temporary directory",
			"cache_root", c.OutputRoot, "err", err, "output_root", tempOutputRoot())
		c.OutputRoot = tempOutputRoot()
		p.cfg.OutputRoot = c.OutputRoot
		if err := os.MkdirAll(c.OutputRoot, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: output root: %w", err)
		}
	}
	if err := checkPrivate(c.OutputRoot); err != nil {
		return nil, err
	}
	if d := private.SharedAncestor(c.OutputRoot); d != "" {
		logger.Warn("sandbox: the output root lies in a folder every user can write: npm (npx tsx) and uv look for node_modules, .npmrc and uv.toml in the parent folders of a script's working folder, so another user could put code there that runs as this one; set exec.output_dir to a folder under one only this user can write",
			"output_root", c.OutputRoot, "shared", d)
	}
	warnLimits(logger, p.runner, c.Limits)
	logger.Info("sandbox: skill script execution enabled",
		"confinement", p.runner.confinement(), "timeout", c.Timeout, "output_limit", c.OutputLimit,
		"concurrency", c.Concurrency, "queue", c.Queue, "output_root", c.OutputRoot,
		"memory_limit", c.Limits.Memory, "file_size_limit", c.Limits.FileSize, "max_processes", c.Limits.Processes)
	return p, nil
}

// OutputRoot is the folder conversations' output folders are made in, as
// the provider settled it (the default, or its fallback in the temporary
// directory).
func (p *Provider) OutputRoot() string { return p.cfg.OutputRoot }

// Enabled reports whether tier 3 is on.
func (p *Provider) Enabled() bool { return p != nil && p.cfg.Enabled }

// Handles reports whether the session should route a call of name to this
// package: the built-in tier-3 tools, whether or not execution is enabled.
// Executable-skill tools are only ever reached through Tools.
func (p *Provider) Handles(name string) bool { return IsTool(name) }

// DisabledCall answers a call of a built-in tier-3 tool the session did not
// offer: while execution is disabled (DisabledResult(name), true), and
// while enabled, when no skill is active (skill_not_active). For any other
// name it returns ("", false).
// A session can type-assert its ToolProvider for this method to answer such
// calls itself instead of passing them to the client.
func (p *Provider) DisabledCall(name string) (string, bool) {
	switch {
	case !IsTool(name):
		return "", false
	case p.Enabled():
		// On, but not offered: no skill of the conversation is active (the
		// tools come with one). Passed on, the call would reach the client
		// as a tool it never defined.
		return newError(CodeSkillNotActive, "%s works on an active skill, and none is active in this conversation: call load_skill for the skill first, then retry", name).result(), true
	}
	return DisabledResult(name), true
}

// Confinement describes the write confinement scripts run under ("landlock
// ABI 7", "none"; "" when disabled), for start-up logs and /health.
func (p *Provider) Confinement() string {
	if !p.Enabled() {
		return ""
	}
	return p.runner.confinement()
}

// Stats reports running and queued executions.
func (p *Provider) Stats() Stats {
	if !p.Enabled() {
		return Stats{}
	}
	return p.lim.stats()
}

// Tools offers read_skill_resource and skill_execute (for the active skills
// only: other ids are answered "load it first"), then one tool per active
// executable skill, named by its --help-json schema, in the order of active.
// Tool definitions are byte-stable so upstream prompt caching keeps working.
func (p *Provider) Tools(ctx context.Context, active []*skills.Skill) []router.Tool {
	return p.tools(ctx, active, true)
}

// Builtins is p offering its built-in tools only: executable skills' tools
// are left out, and their --help-json is not run for them (the MCP server
// offers no executable skill's tool). Every other method is p's.
func (p *Provider) Builtins() router.ToolProvider { return builtinsOnly{p} }

type builtinsOnly struct{ *Provider }

func (b builtinsOnly) Tools(ctx context.Context, active []*skills.Skill) []router.Tool {
	return b.tools(ctx, active, false)
}

func (p *Provider) tools(ctx context.Context, active []*skills.Skill, executables bool) []router.Tool {
	if !p.Enabled() {
		return nil
	}
	set := make(map[string]*skills.Skill, len(active))
	for _, s := range active {
		if s != nil {
			set[s.ID] = s
		}
	}
	tools := []router.Tool{&resourceTool{p: p, active: set}, &executeTool{p: p, active: set}}
	if !executables {
		return tools
	}
	taken := map[string]string{}
	for _, n := range reservedNames {
		taken[n] = "(built-in)"
	}
	seen := map[string]bool{}
	for _, s := range active {
		if s == nil || s.Type != skills.TypeExecutable || seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		t, err := p.executableTool(ctx, s)
		if err != nil {
			continue // logged where it was computed
		}
		if owner, dup := taken[t.Name()]; dup {
			p.log.Warn("sandbox: executable skill tool name already taken; not registered",
				"skill", s.ID, "tool", t.Name(), "taken_by", owner)
			continue
		}
		taken[t.Name()] = s.ID
		tools = append(tools, t)
	}
	return tools
}

// Warm runs --help-json for the executable skills in list whose schema is
// not cached yet (e.g. the whole library at start-up and after a reload), so
// the first request that activates one does not wait for it. Broken skills
// are logged, not returned.
func (p *Provider) Warm(ctx context.Context, list []*skills.Skill) {
	if !p.Enabled() {
		return
	}
	for _, s := range list {
		if ctx.Err() != nil {
			return
		}
		if s != nil && s.Type == skills.TypeExecutable {
			_, _ = p.executableTool(ctx, s)
		}
	}
}

// AllowedTools returns the allowed-tools frontmatter entries of the active
// skills that Config.AllowedTools permits: an entry is permitted when its
// bare name ("Bash" for "Bash(git:*)") equals a configured name (itself
// taken bare), starts with the prefix of an "x*" entry, or by "*", all
// ignoring case (frontmatter follows Claude Code's "Bash", clients often
// call the same tool "bash").
// Tier-3 tool names are dropped while execution is disabled. Sorted, no
// duplicates; nil when nothing is enabled.
//
// The router applies it to the client's tools through router.ToolGate: a
// client tool that GatedTool reports is forwarded upstream only while an
// active skill's permitted entry names it (see docs/sandbox.md).
func (p *Provider) AllowedTools(active []*skills.Skill) []string {
	if p == nil || len(p.cfg.AllowedTools) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range active {
		if s == nil {
			continue
		}
		for _, t := range s.AllowedTools {
			t = strings.TrimSpace(t)
			if t == "" || seen[t] || (IsTool(t) && !p.Enabled()) || !p.permits(t) {
				continue
			}
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// permits reports whether a frontmatter entry is allowed by the configuration.
func (p *Provider) permits(tool string) bool {
	bare := bareToolName(tool)
	for _, a := range p.cfg.AllowedTools {
		a = bareToolName(strings.TrimSpace(a))
		switch {
		case a == "":
		case strings.EqualFold(a, bare):
			return true
		case strings.HasSuffix(a, "*") && hasPrefixFold(bare, strings.TrimSuffix(a, "*")):
			return true
		}
	}
	return false
}

// GatedTool reports whether exec.allowed_tools gates the client tool with
// this function name: the name equals an entry (a scoped entry
// "Bash(git:*)" counts as "Bash"), starts with the prefix of an "x*" entry,
// or any entry is "*". Case-sensitive, as OpenAI function names are. A
// gated client tool is withheld from the upstream request unless an active
// skill enables it (router.ToolGate); gating does not depend on Enabled.
func (p *Provider) GatedTool(name string) bool {
	if p == nil || name == "" {
		return false
	}
	for _, a := range p.cfg.AllowedTools {
		a = bareToolName(strings.TrimSpace(a))
		switch {
		case a == "":
		case a == name:
			return true
		case strings.HasSuffix(a, "*") && strings.HasPrefix(name, strings.TrimSuffix(a, "*")):
			return true
		}
	}
	return false
}

// bareToolName strips a permission scope: "Bash(git:*)" -> "Bash".
func bareToolName(t string) string {
	bare, _, _ := strings.Cut(t, "(")
	return strings.TrimSpace(bare)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// activeSkill resolves the skill a call names as load_skill does: in the
// whole library (Lookup: an exact id first, then a unique frontmatter name
// or id suffix), and that skill must be active. Only a name the library
// cannot resolve (no Lookup, or one several skills share) is looked for
// among the active skills by the same rule: the same text must not name
// one skill to load_skill and another here.
func (p *Provider) activeSkill(active map[string]*skills.Skill, arg string) (*skills.Skill, *toolError) {
	id := skills.SkillArg(arg)
	if id == "" {
		return nil, newError(CodeInvalidArguments, "skill_id is required")
	}
	s, ok := active[id]
	if !ok && p.cfg.Lookup != nil {
		if lib, found := p.cfg.Lookup(id); found && lib != nil {
			if s, ok = active[lib.ID]; !ok {
				e := newError(CodeSkillNotActive, "skill %q is not loaded in this conversation: call load_skill for it first, then retry", lib.ID)
				e.SkillID = lib.ID
				return nil, e
			}
		}
	}
	if !ok && len(active) > 0 {
		list := slices.SortedFunc(maps.Values(active), func(a, b *skills.Skill) int { return strings.Compare(a.ID, b.ID) })
		s, ok = skills.Resolve(list, id)
	}
	if ok {
		if s.Dir == "" {
			return nil, newError(CodeUnknownSkill, "skill %q has no folder", id)
		}
		return s, nil
	}
	e := newError(CodeUnknownSkill, "there is no skill %q", id)
	e.SkillID = id
	return nil, e
}
