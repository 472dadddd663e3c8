package skills

import (
	"log/slog"
	"slices"
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
}
