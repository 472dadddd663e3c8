package skills

import (
	"errors"
	"strings"
)

// Frontmatter returns the skill's SKILL.md frontmatter as JSON-ready values,
// every field the author wrote (not only those Skill has fields for): maps
// with string keys, scalars as YAML resolves them, timestamps as written.
// In-memory skills without a file have none (an error).
func (s *Skill) Frontmatter() (map[string]any, error) {
	first, rest, _ := strings.Cut(s.Content(), "\n")
	if strings.TrimRight(first, " \t\r") != "---" {
		return nil, errors.New("skills: no frontmatter")
	}
	fm, _, _, ok := splitFrontmatter(rest)
	if !ok {
		return nil, errors.New("skills: unterminated frontmatter")
	}
	root, err := parseYAML(fm)
	if err != nil {
		return nil, err
	}
	budget := maxExtraNodes
	v, ok := nodeValue(root, &budget, 0)
	if !ok {
		return nil, errors.New("skills: frontmatter is too large or too deeply nested")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("skills: frontmatter is not a mapping")
	}
	return m, nil
}
