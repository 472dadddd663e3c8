package router

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skillrouter/skillrouter/skills"
)

// mentionTable resolves `#skill-id` and `/skill-id` mentions: a full id
// ("anthropics/mcp-builder"), the last path element of an id when only one
// skill has it ("mcp-builder"), or a frontmatter name only one skill has
// (load_skill takes it too). Matching ignores case and Unicode
// normalisation (mentionKey), so #CAFÉ and a decomposed café find café.
type mentionTable struct {
	full  map[string]string // mentionKey(id) -> id
	last  map[string]string // mentionKey(last element) -> id; "" when ambiguous
	names map[string]string // mentionKey(name) -> id; "" when ambiguous
}

// mentionKey is the form ids and mentions are compared in: lowercase, then
// NFKC as skill names are (skills.NormalizeName).
func mentionKey(s string) string { return skills.NormalizeName(strings.ToLower(s)) }

func newMentionTable(list []*skills.Skill) mentionTable {
	t := mentionTable{full: make(map[string]string, len(list)), last: make(map[string]string, len(list)), names: make(map[string]string, len(list))}
	unique := func(m map[string]string, key, id string) {
		if prev, ok := m[key]; ok && prev != id {
			m[key] = ""
		} else {
			m[key] = id
		}
	}
	for _, s := range list {
		t.full[mentionKey(s.ID)] = s.ID
		last, name := shortKeys(s)
		unique(t.last, last, s.ID)
		if name != "" {
			unique(t.names, name, s.ID)
		}
	}
	return t
}

// shortKeys are the keys a mention finds s by when no other skill has
// them: the last element of its id, and its name ("" without one).
func shortKeys(s *skills.Skill) (last, name string) {
	id := mentionKey(s.ID)
	if s.Name != "" {
		name = mentionKey(s.Name)
	}
	return id[strings.LastIndexByte(id, '/')+1:], name
}

// MentionShared lists the skills of list a mention's key (Mention.Key)
// names by the last element of an id or by a name, in list order: more
// than one, and the mention pins none of them.
func MentionShared(list []*skills.Skill, key string) []string {
	var out []string
	for _, s := range list {
		if last, name := shortKeys(s); last == key || name == key {
			out = append(out, s.ID)
		}
	}
	return out
}

// find returns the skills mentioned in text, in order of first mention.
// A mention starts with # or / at the start of the text or after a space,
// an opening bracket or other punctuation, so URLs ("https://host/x") and
// paths inside words are not read as mentions; a path like /usr/bin is one
// only if it names a skill. It ends at a space or punctuation, ASCII or not
// ("#café。"). Scripts written without spaces (CJK, Thai) are the
// exception: there a mention may follow a character directly and ends where
// a known id does when that script goes on ("これは#日本語を使って").
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
	eachMention(text, func(start int, raw string) {
		id, n, ok := t.match(raw)
		if ok {
			end := start + 1 + n // trailing punctuation stays in the text
			b.WriteString(text[last:start])
			last = end
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	})
	if len(out) == 0 {
		return out, text
	}
	b.WriteString(text[last:])
	return out, b.String()
}

// eachMention calls f with each place text could mention a skill: the
// index of its # or /, and what follows as an id would be written, its
// trailing punctuation left out (see find).
func eachMention(text string, f func(start int, raw string)) {
	fenced := false // inside a ``` block: pasted code ("x = 1 #sql-tuning"), no mentions
	for i := 0; i < len(text); i++ {
		if i == 0 || text[i-1] == '\n' {
			line := text[i:]
			if k := strings.IndexByte(line, '\n'); k >= 0 {
				line = line[:k]
			}
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				if i += len(line); i >= len(text) {
					break
				}
				continue
			}
		}
		if fenced {
			continue
		}
		c := text[i]
		if c != '#' && c != '/' {
			continue
		}
		if i > 0 && !isMentionLead(text[:i]) {
			continue
		}
		j := i + 1
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if !isIDRune(r) {
				break
			}
			j += size
		}
		f(i, strings.TrimRight(text[i+1:j], "./-_"))
		i = j - 1
	}
}

// A Mention is a #mention written in a text, as the router reads one,
// whether or not it names a skill.
type Mention struct {
	Raw string // as written, without the #
	Key string // as ids are compared with it (case and Unicode normalisation aside)
}

// Mentions lists text's #mentions, each once, in order: for tools that
// say which mentions pinned nothing (router route). A /mention is left out:
// a path like /usr/bin is one only when it names a skill.
func Mentions(text string) []Mention {
	var out []Mention
	seen := map[string]bool{}
	eachMention(text, func(start int, raw string) {
		if k := mentionKey(raw); text[start] == '#' && k != "" && !seen[k] {
			seen[k] = true
			out = append(out, Mention{Raw: raw, Key: k})
		}
	})
	return out
}

// match finds the skill raw names and how many of its bytes name it: all of
// them, or, where a script written without spaces goes on after a known id,
// the longest such prefix.
func (t mentionTable) match(raw string) (string, int, bool) {
	if id, ok := t.lookup(raw); ok {
		return id, len(raw), true
	}
	for k := len(raw) - 1; k > 0; k-- {
		if !utf8.RuneStart(raw[k]) {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(raw[k:]); !isUnspaced(r) {
			continue
		}
		if id, ok := t.lookup(raw[:k]); ok {
			return id, k, true
		}
	}
	return "", 0, false
}

func (t mentionTable) lookup(raw string) (string, bool) {
	tok := mentionKey(raw)
	if tok == "" {
		return "", false
	}
	if id, ok := t.full[tok]; ok {
		return id, true
	}
	if strings.Contains(tok, "/") {
		return "", false
	}
	if id := t.last[tok]; id != "" {
		return id, true
	}
	id := t.names[tok]
	return id, id != ""
}

// isMentionLead reports whether the text before a # or / lets it start a
// mention: a space, bracket, quote or other punctuation, or a character of a
// script written without spaces.
func isMentionLead(before string) bool {
	r, _ := utf8.DecodeLastRuneInString(before)
	if r < utf8.RuneSelf {
		switch r {
		case ' ', '\t', '\n', '\r', '(', '[', '{', '"', '\'', '`', ',', ';', ':':
			return true
		}
		return false
	}
	return unicode.IsSpace(r) || unicode.IsPunct(r) || isUnspaced(r)
}

// isIDRune reports whether r can be part of a mentioned id: what names and
// folder names are made of (letters, combining marks, digits, - _ . /).
func isIDRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '-' || r == '_' || r == '.' || r == '/'
	}
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r)
}

// unspaced are scripts written without spaces between words, or (Hangul)
// with particles attached to the word before.
var unspaced = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar}

func isUnspaced(r rune) bool { return r >= utf8.RuneSelf && unicode.IsOneOf(unspaced, r) }
