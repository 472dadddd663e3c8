package skills

// CONTRACT STUB — the skills owner replaces this file with real
// implementations spread over scan.go, registry.go, render.go, etc.
// Signatures here are the contract other packages code against; keep them
// (adding methods/fields is fine).

import (
	"context"
	"encoding/json"
	"time"
)

// Options bounds a scan.
type Options struct {
	MaxFileSize int64 // bytes of SKILL.md read at most; default 1 MiB
	MaxBodySize int64 // default 512 KiB; a larger body is an error
}

// Snapshot is an immutable library: every skill found under the roots, ordered by id.
type Snapshot struct{}

// Load scans roots in order and never fails: problems are attached to skills
// (or returned by Problems for issues not tied to one skill).
func Load(ctx context.Context, roots []string, opts Options) *Snapshot { return &Snapshot{} }

// Skills returns the loaded (not skipped) skills sorted by id.
func (s *Snapshot) Skills() []*Skill { return nil }

// All returns loaded and skipped skills sorted by id (for `skills list`).
func (s *Snapshot) All() []*Skill { return nil }

// Get returns a loaded skill by id.
func (s *Snapshot) Get(id string) (*Skill, bool) { return nil, false }

// Problems returns every problem found, sorted by path then line.
func (s *Snapshot) Problems() []Problem { return nil }

// Roots returns the roots scanned, in order.
func (s *Snapshot) Roots() []string { return nil }

// Fingerprint is a hex digest of everything rendered from the snapshot; equal
// fingerprints mean byte-identical prompts.
func (s *Snapshot) Fingerprint() string { return "" }

// DefaultRoots returns the ecosystem's conventional roots that exist, in order.
func DefaultRoots() []string { return nil }

// Registry holds the current Snapshot behind an atomic pointer.
type Registry struct{}

func NewRegistry(roots []string, opts Options) *Registry { return &Registry{} }

// Snapshot returns the current snapshot (never nil after NewRegistry).
func (r *Registry) Snapshot() *Snapshot { return &Snapshot{} }

// Reload scans again and swaps the snapshot; subscribers are called after the swap.
func (r *Registry) Reload(ctx context.Context) *Snapshot { return &Snapshot{} }

// OnReload registers fn to run (synchronously, in order) after each swap.
func (r *Registry) OnReload(fn func(*Snapshot)) {}

// Watch reloads on file changes (debounced) until ctx ends.
func (r *Registry) Watch(ctx context.Context, debounce time.Duration) error { return nil }

// Format names a catalog format.
type Format string

const (
	FormatAgentSkills Format = "agent-skills"
	FormatAnthropic   Format = "anthropic"
	FormatQARK        Format = "qark"
)

// CatalogOptions controls RenderCatalog.
type CatalogOptions struct {
	Format         Format   // default agent-skills
	Priority       []string // ids for the <prioritized_skills> line; none = no line
	MaxDescription int      // >0: truncate descriptions at a word boundary to this many chars
	Footer         string   // a line after the list (e.g. "312 more skills: use search_skills")
}

// RenderCatalog renders the tier-1 catalog for the given skills, in the given order.
func RenderCatalog(list []*Skill, opts CatalogOptions) string { return "" }

// Envelope renders the load_skill result for a skill.
func Envelope(s *Skill) string { return "" }

// NotFound renders the structured result for an unknown id, with up to 3 close ids.
func NotFound(id string, snap *Snapshot) string { return "" }

// LoadSkillTool returns the OpenAI tool definition of load_skill for the skills
// (enum of ids when there are at most 200).
func LoadSkillTool(list []*Skill) json.RawMessage { return nil }
