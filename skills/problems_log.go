package skills

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"
)

// LogProblems logs the problems of s that prev (nil at startup) did not
// have, so a broken SKILL.md shows up in the server's log with its path
// once, not again on every reload. An error skips its skill and is logged at
// warn, one line each; warnings (the skill still loads) are logged at debug
// with an info summary, since large public libraries carry many. A skill
// prev skipped that loads now is logged at info.
func (s *Snapshot) LogProblems(log *slog.Logger, prev *Snapshot) {
	if log == nil || s == nil {
		return
	}
	old := map[Problem]bool{}
	if prev != nil {
		for _, p := range prev.problems {
			old[p] = true
		}
	}
	warnings := 0
	for _, p := range s.problems {
		if old[p] {
			continue
		}
		if slices.Contains(s.library, p) {
			log.Warn("skills: library problem", "problem", p.String())
			continue
		}
		if p.Severity == SeverityError {
			log.Warn("skills: skipped a broken skill", "problem", p.String())
			continue
		}
		warnings++
		log.Debug("skills: warning", "problem", p.String())
	}
	if warnings > 0 {
		log.Info("skills: library warnings (the skills still load; `router skills validate` lists them)", "new_warnings", warnings)
	}
	if prev == nil {
		return
	}
	// A skill logged as skipped that loads now: say so once, so whoever
	// fixed it sees the fix take.
	loaded := map[string]*Skill{}
	for _, sk := range s.loaded {
		loaded[sk.Path] = sk
	}
	for _, sk := range prev.all {
		if fixed, ok := loaded[sk.Path]; ok && sk.Skipped {
			log.Info("skills: a skipped skill loads again", "skill", fixed.ID, "path", fixed.Path)
		}
	}
	// Skills that came or went: an edit's build line counts changes but
	// names none, and a deletion is otherwise silent. One broken or fixed
	// is logged above.
	added, removed := idsOnlyIn(s.loaded, prev.all), idsOnlyIn(prev.loaded, s.all)
	changed := idsChanged(s.loaded, prev.loaded)
	if len(added) > 0 || len(removed) > 0 || len(changed) > 0 {
		log.Info("skills: library changed", "added", firstIDs(added), "removed", firstIDs(removed), "changed", firstIDs(changed), "skills", len(s.loaded))
	}
	// A library that loses all or most of its skills at once is more
	// often a mount gone, a git-sync link broken or a folder moved than an
	// edit: say it where operators look, since the server goes on (and
	// stays ready) without them.
	switch before := len(prev.loaded); {
	case before > 0 && len(s.loaded) == 0:
		log.Warn("skills: the library is empty now; requests get no skills until it comes back (a volume unmounted, a git-sync link broken, a root moved?)",
			"skills_before", before, "roots", strings.Join(s.roots, ","))
	case before >= 10 && len(removed) > before/2:
		log.Warn("skills: the library lost more than half its skills at once", "skills_before", before, "skills", len(s.loaded),
			"removed", firstIDs(removed), "roots", strings.Join(s.roots, ","))
	}
}

// idsChanged lists the ids of a, in a's order, that b loaded too with
// another SKILL.md: edited, or now another root's copy. Texts are
// compared by their sums, packed or not.
func idsChanged(a, b []*Skill) []string {
	before := make(map[string]*Skill, len(b))
	for _, sk := range b {
		before[sk.ID] = sk
	}
	var out []string
	for _, sk := range a {
		p, ok := before[sk.ID]
		if !ok || p == sk {
			continue
		}
		t, pt := sk.text.Load(), p.text.Load()
		if p.Path != sk.Path || t == nil || pt == nil || t.sum != pt.sum {
			out = append(out, sk.ID)
		}
	}
	return out
}

// idsOnlyIn lists the ids of a that b lacks, in a's order (sorted by id).
func idsOnlyIn(a, b []*Skill) []string {
	in := make(map[string]bool, len(b))
	for _, sk := range b {
		in[sk.ID] = true
	}
	var out []string
	for _, sk := range a {
		if !in[sk.ID] {
			out = append(out, sk.ID)
		}
	}
	return out
}

// firstIDs joins up to ten ids for a log line, with how many more there are.
func firstIDs(ids []string) string {
	const most = 10
	if len(ids) <= most {
		return strings.Join(ids, ",")
	}
	return strings.Join(ids[:most], ",") + ",… (" + strconv.Itoa(len(ids)-most) + " more)"
}
