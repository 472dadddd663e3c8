package skills

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Snapshot is an immutable library: every skill found under the roots,
// ordered by id. It is safe for concurrent use; nothing in it changes after
// Load returns (the fingerprint is computed once, on first use).
type Snapshot struct {
	roots    []string
	all      []*Skill // loaded and skipped, by id
	loaded   []*Skill // loaded only, by id
	byID     map[string]*Skill
	allByID  map[string]*Skill
	problems []Problem
	library  []Problem // problems not tied to one skill (roots, folders)
	err      error
	// began is when Load started reading the roots: a change made after
	// it may not be in the snapshot (see Watch).
	began time.Time

	fpOnce sync.Once
	fp     string
}

func newSnapshot(roots []string, list []*Skill, rootProblems []Problem) *Snapshot {
	slices.SortFunc(list, func(a, b *Skill) int { return cmp.Compare(a.ID, b.ID) })
	s := &Snapshot{
		roots:   slices.Clone(roots),
		all:     list,
		byID:    make(map[string]*Skill, len(list)),
		allByID: make(map[string]*Skill, len(list)),
	}
	s.library = slices.Clone(rootProblems)
	sortProblems(s.library)
	s.problems = append(s.problems, rootProblems...)
	for _, sk := range list {
		s.allByID[sk.ID] = sk
		s.problems = append(s.problems, sk.Problems...)
		if !sk.Skipped {
			s.loaded = append(s.loaded, sk)
			s.byID[sk.ID] = sk
		}
	}
	sortProblems(s.problems)
	return s
}

// addLibraryProblem is used only while Load builds the snapshot.
func (s *Snapshot) addLibraryProblem(p Problem) {
	s.library = append(s.library, p)
	s.problems = append(s.problems, p)
	sortProblems(s.library)
	sortProblems(s.problems)
}

// sortProblems orders by path, then line, errors before warnings, then text,
// so reports are byte-identical run to run.
func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)),
			cmp.Compare(a.Message, b.Message),
		)
	})
}

func severityRank(s Severity) int {
	if s == SeverityError {
		return 0
	}
	return 1
}

// Skills returns the loaded (not skipped) skills sorted by id. The slice is a
// copy; the skills are shared and must not be modified.
func (s *Snapshot) Skills() []*Skill { return slices.Clone(s.loaded) }

// All returns loaded and skipped skills sorted by id (for `skills list`).
func (s *Snapshot) All() []*Skill { return slices.Clone(s.all) }

// Len is the number of loaded skills.
func (s *Snapshot) Len() int { return len(s.loaded) }

// Get returns a loaded skill by id.
func (s *Snapshot) Get(id string) (*Skill, bool) {
	sk, ok := s.byID[id]
	return sk, ok
}

// Resolve finds the loaded skill want refers to, as load_skill does: see
// Resolve (the function).
func (s *Snapshot) Resolve(want string) (*Skill, bool) { return Resolve(s.loaded, want) }

// SkillArg is a tool call's skill argument as Resolve takes it: without
// surrounding space or a leading # or / (a model may copy a #mention or
// write an absolute-looking id). Every tool naming a skill (load_skill,
// read_skill_resource, skill_execute) cleans it so, then resolves it.
func SkillArg(arg string) string { return strings.TrimLeft(strings.TrimSpace(arg), "#/") }

// Resolve finds the skill in list (sorted by id) that a model or a person
// asked for: an exact id, else the one skill whose frontmatter name is want
// (catalog formats such as anthropic show names, not ids), else the one
// skill whose id ends in "/"+want. An ambiguous name or suffix finds none.
// When nothing matches as written, the same rules run on NFKC forms
// (NormalizeName): a model writes "café" composed where the folder name may
// be decomposed, as macOS stores it. Last, an id whose folder was renamed
// (a model asks by the id it saw before the rename) finds the one skill
// whose name is the id's last part.
func Resolve(list []*Skill, want string) (*Skill, bool) {
	s, _ := resolve(list, want)
	return s, s != nil
}

// resolve is Resolve; when it finds none because a name or an id suffix
// is shared, shared says by which skills.
func resolve(list []*Skill, want string) (_ *Skill, shared *sharing) {
	if i, ok := slices.BinarySearchFunc(list, want, func(s *Skill, id string) int { return cmp.Compare(s.ID, id) }); ok {
		return list[i], nil
	}
	same := func(s string) string { return s }
	if s, shared := resolveBy(list, want, same); s != nil || shared != nil {
		return s, shared
	}
	if s, shared := resolveBy(list, NormalizeName(want), NormalizeName); s != nil || shared != nil || !strings.Contains(want, "/") {
		return s, shared
	}
	base := NormalizeName(path.Base(want))
	var match *Skill
	for _, s := range list {
		if NormalizeName(s.Name) == base {
			if match != nil {
				return nil, nil
			}
			match = s
		}
	}
	return match, nil
}

// sharing is a name, or else the last part of an id, that more than one
// skill has: Resolve finds none of them.
type sharing struct {
	ids    []string // in id order
	byName bool     // a frontmatter name, not an id's last part
}

// resolveBy applies Resolve's rules to the ids and names as form gives
// them; shared is set when a rule matched more than one skill.
func resolveBy(list []*Skill, want string, form func(string) string) (_ *Skill, shared *sharing) {
	var exact *Skill
	var names, suffixes []*Skill
	for _, s := range list {
		id := form(s.ID)
		if id == want {
			exact = s
		}
		if form(s.Name) == want {
			names = append(names, s)
		}
		if strings.HasSuffix(id, "/"+want) {
			suffixes = append(suffixes, s)
		}
	}
	switch {
	case exact != nil:
		return exact, nil
	case len(names) == 1:
		return names[0], nil
	case len(suffixes) == 1:
		return suffixes[0], nil
	case len(names) > 1:
		return nil, &sharing{ids: skillIDs(names), byName: true}
	case len(suffixes) > 1:
		return nil, &sharing{ids: skillIDs(suffixes)}
	}
	return nil, nil
}

func skillIDs(list []*Skill) []string {
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	return ids
}

// Sharing says, when Resolve finds no skill for want because several
// share it, which ones (in id order) and whether it is their frontmatter
// name (else the last part of their ids); ids is nil otherwise.
func (s *Snapshot) Sharing(want string) (ids []string, byName bool) {
	if s == nil {
		return nil, false
	}
	if _, shared := resolve(s.loaded, want); shared != nil {
		return shared.ids, shared.byName
	}
	return nil, false
}

// Lookup returns a skill by id whether it loaded or was skipped, so callers
// can explain why an id is unavailable.
func (s *Snapshot) Lookup(id string) (*Skill, bool) {
	sk, ok := s.allByID[id]
	return sk, ok
}

// Problems returns every problem found, sorted by path then line.
func (s *Snapshot) Problems() []Problem { return slices.Clone(s.problems) }

// LibraryProblems returns the problems not tied to one skill (a missing
// root, an unreadable folder, a symlink loop between skills), sorted.
func (s *Snapshot) LibraryProblems() []Problem { return slices.Clone(s.library) }

// Roots returns the roots scanned, in order.
func (s *Snapshot) Roots() []string { return slices.Clone(s.roots) }

// Err is non-nil when the scan was cut short (its context ended); such a
// snapshot is incomplete and Registry.Reload does not install it.
func (s *Snapshot) Err() error { return s.err }

// Fingerprint is a hex digest of everything rendered from the snapshot; equal
// fingerprints mean byte-identical prompts.
func (s *Snapshot) Fingerprint() string {
	s.fpOnce.Do(func() {
		h := sha256.New()
		for _, sk := range s.loaded {
			fingerprintSkill(h, sk)
		}
		s.fp = hex.EncodeToString(h.Sum(nil))
	})
	return s.fp
}

// fingerprintSkill hashes every field a renderer or router may show, each
// length-prefixed so no two different skills hash the same stream.
// Same reports whether o holds the same library as s: the same skills, in
// the same order, with what Fingerprint covers equal. It compares the texts
// by their sums, so it costs no hashing; unlike Fingerprint it means
// nothing across processes.
func (s *Snapshot) Same(o *Snapshot) bool {
	if s == o {
		return true
	}
	if s == nil || o == nil || len(s.loaded) != len(o.loaded) {
		return false
	}
	for i, a := range s.loaded {
		if !sameSkill(a, o.loaded[i]) {
			return false
		}
	}
	return true
}

func sameSkill(a, b *Skill) bool {
	sameBool := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a == b || a.ID == b.ID && a.Name == b.Name && a.Description == b.Description && a.Path == b.Path &&
		a.Dir == b.Dir && a.Type == b.Type && sameBool(a.Enabled, b.Enabled) && sameBool(a.AutoLoad, b.AutoLoad) &&
		slices.Equal(a.Tags, b.Tags) && slices.Equal(a.Dependencies, b.Dependencies) &&
		slices.Equal(a.AllowedTools, b.AllowedTools) && a.form().sum == b.form().sum &&
		a.ResourcesOmitted == b.ResourcesOmitted &&
		slices.EqualFunc(a.Resources, b.Resources, func(x, y Resource) bool {
			return x.Path == y.Path && x.Kind == y.Kind && x.Size == y.Size
		})
}

// fingerprintSkill hashes what identifies a skill's version; keep Same
// (sameSkill) comparing the same things.
func fingerprintSkill(h hash.Hash, sk *Skill) {
	str := func(v string) {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
		// A hash neither keeps nor changes what it is given: hashing the
		// string's own bytes spares a copy of every body (~120 MB for a
		// 10,000-skill library, on each snapshot).
		h.Write(unsafe.Slice(unsafe.StringData(v), len(v)))
	}
	boolp := func(b *bool) {
		switch {
		case b == nil:
			str("-")
		case *b:
			str("1")
		default:
			str("0")
		}
	}
	list := func(vs []string) {
		str(strconv.Itoa(len(vs)))
		for _, v := range vs {
			str(v)
		}
	}
	str(sk.ID)
	str(sk.Name)
	str(sk.Description)
	str(sk.Path)
	str(sk.Dir)
	str(string(sk.Type))
	boolp(sk.Enabled)
	boolp(sk.AutoLoad)
	list(sk.Tags)
	list(sk.Dependencies)
	list(sk.AllowedTools)
	str(sk.Content())
	str(strconv.Itoa(len(sk.Resources)))
	for _, r := range sk.Resources {
		str(r.Path)
		str(string(r.Kind))
		str(strconv.FormatInt(r.Size, 10))
	}
	str(strconv.Itoa(sk.ResourcesOmitted))
}
