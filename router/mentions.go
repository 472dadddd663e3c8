package router

import (
	"strings"

	"github.com/skillrouter/skillrouter/skills"
)

// mentionTable resolves `#skill-id` and `/skill-id` mentions: a full id
// ("anthropics/mcp-builder") or the last path element of an id when only one
// skill has it ("mcp-builder"). Matching ignores case.
type mentionTable struct {
	full map[string]string // lowercase id -> id
	last map[string]string // lowercase last element -> id; "" when ambiguous
}

func newMentionTable(list []*skills.Skill) mentionTable {
	t := mentionTable{full: make(map[string]string, len(list)), last: make(map[string]string, len(list))}
	for _, s := range list {
		id := strings.ToLower(s.ID)
		t.full[id] = s.ID
		le := id[strings.LastIndexByte(id, '/')+1:]
		if prev, ok := t.last[le]; ok && prev != s.ID {
			t.last[le] = ""
		} else {
			t.last[le] = s.ID
		}
	}
	return t
}

// find returns the skills mentioned in text, in order of first mention.
// A mention starts with # or / at the start of the text or after a space or
// opening bracket, so URLs ("https://host/x") and paths inside words are
// not read as mentions; a path like /usr/bin is one only if it names a
// skill.
func (t mentionTable) find(text string) []string {
	ids, _ := t.findStrip(text)
	return ids
}

// findStrip is find that also returns text without the mentions: a mention
// is an instruction, not a description of the task, and left in the text it
// would pull the mentioned skill's look-alikes into auto-loading too.
func (t mentionTable) findStrip(text string) ([]string, string) {
	var out []string
	var b strings.Builder
	last := 0
	seen := map[string]bool{}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '#' && c != '/' {
			continue
		}
		if i > 0 && !isMentionLead(text[i-1]) {
			continue
		}
		start := i
		j := i + 1
		for j < len(text) && isIDByte(text[j]) {
			j++
		}
		raw := strings.TrimRight(text[i+1:j], "./-_")
		end := i + 1 + len(raw) // trailing punctuation stays in the text
		i = j - 1
		tok := strings.ToLower(raw)
		if tok == "" {
			continue
		}
		id, ok := t.full[tok]
		if !ok && !strings.Contains(tok, "/") {
			id, ok = t.last[tok]
			ok = ok && id != ""
		}
		if ok {
			b.WriteString(text[last:start])
			last = end
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	if len(out) == 0 {
		return out, text
	}
	b.WriteString(text[last:])
	return out, b.String()
}

func isMentionLead(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '(', '[', '{', '"', '\'', '`', ',', ';', ':':
		return true
	}
	return false
}

func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '/' || c >= 0x80
}
