package router

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillrouter/skillrouter/skills"
)

// CatalogMode chooses which skills the tier-1 catalog shows.
type CatalogMode string

const (
	CatalogAll     CatalogMode = "all"     // every enabled skill, sorted by id, no budget
	CatalogEnabled CatalogMode = "enabled" // opted-in (enabled/auto_load: true) and allowlisted skills
	CatalogAuto    CatalogMode = "auto"    // everything when it fits the budget, else a relevance shortlist
)

// CatalogModes lists the modes, for validation and help texts.
var CatalogModes = []CatalogMode{CatalogAll, CatalogEnabled, CatalogAuto}

// ValidCatalogMode reports whether m is one of CatalogModes.
func ValidCatalogMode(m CatalogMode) bool { return slices.Contains(CatalogModes, m) }

// CatalogModeList names the modes for messages: "all, enabled or auto".
func CatalogModeList() string { return orList(CatalogModes) }

// StrategyList names the strategies for messages: "keyword, bm25,
// embedding or hybrid".
func StrategyList() string { return orList(Strategies) }

// orList renders names as "a, b or c".
func orList[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// AutoLoadRoles lists the roles auto-loaded skill bodies can be sent as,
// for validation and help texts.
var AutoLoadRoles = []string{"user", "system", "developer"}

// Defaults of RewriteOptions.
const (
	DefaultCatalogBudgetTokens  = 1500
	DefaultDescriptionLimit     = 250
	DefaultAutoLoadBudgetTokens = 6000
	DefaultAutoLoadRole         = "user"
)

// RewriteOptions configures how a chat request is rewritten. Zero values take defaults.
type RewriteOptions struct {
	CatalogFormat        skills.Format // default agent-skills
	CatalogMode          CatalogMode   // default auto
	CatalogBudgetTokens  int           // default 1500; applies in enabled and auto modes
	DescriptionLimit     int           // default 250 chars, applied before dropping entries
	Allowlist            []string      // ids shown in enabled mode besides opted-in skills
	AutoLoadRole         string        // user (default) | system | developer
	AutoLoadBudgetTokens int           // default 6000: total envelope tokens auto-loaded per request
	NoTools              bool          // catalog + auto-load only, no load_skill tool
	Tools                ToolProvider  // tier-3 tools; nil = none

	// CatalogPerTurn ranks a shortened catalog against the latest user
	// message on every turn. By default it is ranked against the
	// conversation's first user message, so the system prompt stays
	// byte-identical across turns and upstream prompt caches keep hitting
	// (docs/prompt-caching.md); the latest message still drives auto-loading.
	CatalogPerTurn bool
}

// normalized returns o with defaults applied, or an error naming a bad value.
func (o RewriteOptions) normalized() (RewriteOptions, error) {
	if o.CatalogFormat == "" {
		o.CatalogFormat = skills.FormatAgentSkills
	}
	switch o.CatalogFormat {
	case skills.FormatAgentSkills, skills.FormatAnthropic, skills.FormatQARK:
	default:
		return o, fmt.Errorf("router: unknown catalog format %q", o.CatalogFormat)
	}
	if o.CatalogMode == "" {
		o.CatalogMode = CatalogAuto
	}
	if !ValidCatalogMode(o.CatalogMode) {
		return o, fmt.Errorf("router: unknown catalog mode %q (want %s)", o.CatalogMode, CatalogModeList())
	}
	if o.CatalogBudgetTokens <= 0 {
		o.CatalogBudgetTokens = DefaultCatalogBudgetTokens
	}
	if o.DescriptionLimit <= 0 {
		o.DescriptionLimit = DefaultDescriptionLimit
	}
	if o.AutoLoadRole == "" {
		o.AutoLoadRole = DefaultAutoLoadRole
	}
	switch o.AutoLoadRole {
	case "user", "system", "developer":
	default:
		return o, fmt.Errorf("router: unknown auto-load role %q (want user, system or developer)", o.AutoLoadRole)
	}
	if o.AutoLoadBudgetTokens <= 0 {
		o.AutoLoadBudgetTokens = DefaultAutoLoadBudgetTokens
	}
	return o, nil
}
