// Package skills loads Agent Skills (folders holding a SKILL.md) into an
// immutable, ordered snapshot and renders them exactly as a model sees them:
// the catalog (tier 1), the load_skill envelope (tier 2) and the load_skill
// tool definition.
package skills

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
)

// Severity grades a Problem: an error skips the skill, a warning does not.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Problem is something wrong with a skill, located so a person can fix it.
type Problem struct {
	Path     string   `json:"path"`
	Line     int      `json:"line,omitempty"` // 1-based; 0 when unknown
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// String formats the problem the way compilers do, so editors can jump to
// it: "path:line: severity: message" (no line part when the line is unknown).
func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", p.Path, p.Line, p.Severity, p.Message)
	}
	return fmt.Sprintf("%s: %s: %s", p.Path, p.Severity, p.Message)
}

// ResourceKind classifies a file in a skill folder by the folder it is in.
type ResourceKind string

const (
	KindScript    ResourceKind = "script"
	KindReference ResourceKind = "reference"
	KindAsset     ResourceKind = "asset"
	KindOther     ResourceKind = "other"
)

// Resource is a file in a skill folder other than SKILL.md.
type Resource struct {
	Path string       `json:"path"` // slash path relative to the skill folder
	Size int64        `json:"size"`
	Kind ResourceKind `json:"kind"`
}

// Type is the Lazy Skills type of a skill.
type Type string

const (
	TypeContextual Type = "contextual"
	TypeExecutable Type = "executable"
	TypeComposite  Type = "composite"
)

// Skill is one parsed skill folder. Skills in a Snapshot are never mutated
// (Snapshot.Pack changes how a skill holds its text, not what it reads).
type Skill struct {
	ID          string `json:"id"`   // slash path of the folder relative to its root
	Name        string `json:"name"` // frontmatter name
	Description string `json:"description"`
	Path        string `json:"path"` // path of SKILL.md: root joined with id, as the root was given
	Dir         string `json:"-"`    // folder of the skill (filepath.Dir(Path))
	Root        string `json:"-"`    // the root it was found under

	Type          Type           `json:"type"`
	License       string         `json:"license,omitempty"`
	Compatibility string         `json:"compatibility,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
	AllowedTools  []string       `json:"allowed_tools,omitempty"`
	Enabled       *bool          `json:"enabled,omitempty"`
	AutoLoad      *bool          `json:"auto_load,omitempty"`
	Dependencies  []string       `json:"dependencies,omitempty"`
	Tags          []string       `json:"tags,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"` // unknown frontmatter fields, kept verbatim

	text     atomic.Pointer[skillText] // the whole SKILL.md and its body: see Content, Body and text.go
	BodyLine int                       `json:"-"` // 1-based line where the body starts
	nameLine int                       // 1-based line of name: in the frontmatter; 0 when absent

	Resources []Resource `json:"resources"`
	// ResourcesOmitted counts files left out of Resources because the folder
	// holds more than the scan lists (Options.MaxResources).
	ResourcesOmitted int       `json:"resources_omitted,omitempty"`
	Problems         []Problem `json:"problems"`
	// Skipped is true when an error-severity problem kept the skill out of the library.
	Skipped bool `json:"skipped,omitempty"`

	folder fs.FileInfo // the folder as the scan found it (see SameFolder); nil when not scanned
	conv   Root        // the convention of its root (see CheckFile)
}

// CheckFile applies to the file at rel (a slash path in the skill folder),
// as it is now, the rule the scan applied to every file of a skill whose
// root was found by convention (Options.Conventional): from where that
// convention starts down to the file, links followed, nothing another user
// owns or can write (Root.Check's rule). nil for a skill of a root given
// with --skills, or not read by a scan.
func (s *Skill) CheckFile(rel string) error {
	return s.conv.checkBelow(filepath.Join(s.Dir, filepath.FromSlash(rel)))
}

// SameFolder reports whether fi, the skill's folder as it is opened now, is
// the folder the scan read: one replaced since (by a symlink to another
// folder, say) is not, and reads through it would reach files the library
// never held. A skill not read by a scan has nothing to compare: true.
func (s *Skill) SameFolder(fi fs.FileInfo) bool {
	return s.folder == nil || (fi != nil && os.SameFile(s.folder, fi))
}

// OptedIn reports whether frontmatter opts the skill in (enabled: true or
// auto_load: true), for the `enabled` catalog mode.
func (s *Skill) OptedIn() bool {
	return (s.Enabled != nil && *s.Enabled) || (s.AutoLoad != nil && *s.AutoLoad)
}

// Disabled reports whether frontmatter turns the skill off (enabled: false).
func (s *Skill) Disabled() bool { return s.Enabled != nil && !*s.Enabled }
