package bench

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"

	"github.com/skillrouter/skillrouter/skills"
)

// Synthetic libraries for the scale benchmark. A library of size n holds the
// real skills first, then deterministic variants of them: variant i derives
// from real skill i mod R, gets the id synthetic/NNNNN-<name>, and has its
// description and body reworded (a seeded subset of synonym swaps) plus a
// seeded audience line, so variants of one skill are near-duplicates that a
// ranker must still tell apart, like a real library that grew by forking.

// ScaleOrder returns the real skills in the order a scale library takes them:
// the skills the queries expect first (so every size above their count
// evaluates the same queries), then the others in a seeded shuffle.
func ScaleOrder(real []*skills.Skill, expected []string, seed uint64) []*skills.Skill {
	byID := make(map[string]*skills.Skill, len(real))
	for _, s := range real {
		byID[s.ID] = s
	}
	var out []*skills.Skill
	taken := map[string]bool{}
	for _, id := range expected {
		if s, ok := byID[id]; ok && !taken[id] {
			taken[id] = true
			out = append(out, s)
		}
	}
	rest := make([]*skills.Skill, 0, len(real)-len(out))
	for _, s := range real {
		if !taken[s.ID] {
			rest = append(rest, s)
		}
	}
	slices.SortFunc(rest, func(a, b *skills.Skill) int { return strings.Compare(a.ID, b.ID) })
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	for i := len(rest) - 1; i > 0; i-- {
		j := rng.IntN(i + 1)
		rest[i], rest[j] = rest[j], rest[i]
	}
	return append(out, rest...)
}

// ExpectedIDs lists the skills queries expect, in query order (repeats
// kept): what ScaleOrder puts first.
func ExpectedIDs(queries []Query) []string {
	var out []string
	for _, q := range queries {
		out = append(out, q.Expected...)
	}
	return out
}

// ScaleLibrary returns the SKILL.md files of a library of size skills built
// from ordered (see ScaleOrder).
func ScaleLibrary(ordered []*skills.Skill, size int, seed uint64) []SkillFile {
	if len(ordered) == 0 || size <= 0 {
		return nil
	}
	out := make([]SkillFile, 0, size)
	for _, s := range ordered[:min(size, len(ordered))] {
		out = append(out, SkillFile{ID: s.ID, Content: s.Content()})
	}
	for i := 0; len(out) < size; i++ {
		out = append(out, Variant(ordered[i%len(ordered)], i+1, seed))
	}
	return out
}

// Variant returns synthetic variant n (1-based) of base.
func Variant(base *skills.Skill, n int, seed uint64) SkillFile {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	swaps := map[string]string{}
	for _, p := range synonyms {
		if rng.IntN(2) == 0 {
			continue
		}
		if rng.IntN(2) == 0 {
			swaps[p[0]] = p[1]
		} else {
			swaps[p[1]] = p[0]
		}
	}
	audience := audiences[rng.IntN(len(audiences))]
	setting := settings[rng.IntN(len(settings))]
	baseName := base.Name
	if baseName == "" {
		baseName = path.Base(base.ID)
	}
	name := SkillName(fmt.Sprintf("%05d-%s", n, baseName))
	note := fmt.Sprintf("Adapted for %s %s.", audience, setting)
	desc := reword(strings.TrimSpace(base.Description), swaps) + " " + note
	body := "> " + note + "\n\n" + reword(base.Body(), swaps)
	return SkillFile{ID: "synthetic/" + name, Content: SkillMarkdown(name, desc, body)}
}

// reword swaps whole ASCII words found in swaps, keeping the case of the
// first letter (or the whole word when it is upper case).
func reword(text string, swaps map[string]string) string {
	if len(swaps) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + len(text)/16)
	i := 0
	for i < len(text) {
		if !isLetter(text[i]) {
			j := i
			for j < len(text) && !isLetter(text[j]) {
				j++
			}
			b.WriteString(text[i:j])
			i = j
			continue
		}
		j := i
		for j < len(text) && isLetter(text[j]) {
			j++
		}
		w := text[i:j]
		if r, ok := swaps[strings.ToLower(w)]; ok {
			b.WriteString(matchCase(w, r))
		} else {
			b.WriteString(w)
		}
		i = j
	}
	return b.String()
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func matchCase(orig, repl string) string {
	switch {
	case len(orig) > 1 && strings.ToUpper(orig) == orig:
		return strings.ToUpper(repl)
	case orig[0] >= 'A' && orig[0] <= 'Z':
		return strings.ToUpper(repl[:1]) + repl[1:]
	}
	return repl
}

// synonyms are word pairs common in skill descriptions; a variant swaps a
// seeded half of them, in a seeded direction.
var synonyms = [][2]string{
	{"use", "apply"}, {"create", "build"}, {"generate", "produce"}, {"analyze", "examine"},
	{"analysis", "assessment"}, {"data", "records"}, {"file", "document"}, {"files", "documents"},
	{"tool", "utility"}, {"tools", "utilities"}, {"help", "assist"}, {"helps", "assists"},
	{"user", "customer"}, {"users", "customers"}, {"write", "compose"}, {"run", "execute"},
	{"check", "verify"}, {"fix", "repair"}, {"review", "inspect"}, {"improve", "enhance"},
	{"quickly", "rapidly"}, {"simple", "basic"}, {"complex", "intricate"}, {"task", "job"},
	{"tasks", "jobs"}, {"project", "initiative"}, {"guide", "handbook"}, {"workflow", "process"},
	{"workflows", "processes"}, {"make", "craft"}, {"show", "display"}, {"find", "locate"},
	{"get", "obtain"}, {"need", "require"}, {"needs", "requires"}, {"start", "begin"},
	{"large", "big"}, {"small", "compact"}, {"fast", "quick"}, {"important", "essential"},
	{"example", "sample"}, {"examples", "samples"}, {"step", "stage"}, {"steps", "stages"},
	{"issue", "problem"}, {"issues", "problems"}, {"update", "revise"}, {"manage", "handle"},
}

var audiences = []string{
	"platform", "data", "mobile", "research", "security", "finance", "marketing", "support",
	"healthcare", "education", "legal", "operations", "design", "sales", "infrastructure", "growth",
}

var settings = []string{
	"teams in regulated industries", "teams at early-stage startups", "groups in large enterprises",
	"consultancies", "open-source maintainers", "agencies with many clients", "public-sector teams",
	"remote-first teams", "teams working offline", "teams with strict review rules",
	"small nonprofits", "university labs",
}
