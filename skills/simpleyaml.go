package skills

import (
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Most frontmatter is a few lines of "key: value", with perhaps one level
// of indented "key: value" under a key such as metadata. yaml.v3 parses
// such text at ~20 µs a skill, more than reading the file; at 10,000 skills
// it was the largest part of reading a library. parseSimpleYAML builds the
// node tree yaml.v3 builds for that subset, line and column included, and
// declines anything else: comments, tabs, block and flow collections,
// block scalars, values over several lines, anchors, tags, escapes, a
// character a plain value may not start with or hold, and every character
// outside what yaml.v3 reads as printable. A declined text goes to yaml.v3,
// so a skill's fields, problems and their lines do not depend on which
// parser read it (FuzzSimpleYAML checks the trees are equal).

// parseSimpleYAML returns the root mapping of fm, or false when fm is not
// in the subset.
func parseSimpleYAML(fm string) (*yaml.Node, bool) {
	var root, block *yaml.Node // the root mapping; the indented one being filled
	var opener *yaml.Node      // a key whose value is the indented lines that follow
	indent := 0                // the indentation of block's keys
	for line := 1; fm != ""; line++ {
		text, rest, _ := strings.Cut(fm, "\n")
		fm = rest
		trimmed := strings.TrimLeft(text, " ")
		if trimmed == "" {
			continue
		}
		lead := len(text) - len(trimmed)
		switch {
		case lead == 0:
			if opener != nil {
				return nil, false // a key with nothing under it: null, left to yaml.v3
			}
			block = nil
		case opener != nil:
			block = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line, Column: lead + 1}
			root.Content = append(root.Content, block)
			opener, indent = nil, lead
		case block == nil || lead != indent:
			return nil, false // a continued value, or indentation that changes
		}
		key, value, ok := simpleEntry(trimmed, line, lead+1)
		if !ok {
			return nil, false
		}
		if root == nil {
			root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line, Column: 1}
		}
		target := root
		if lead > 0 {
			target = block
		}
		if value == nil { // "key:" at the end of its line
			if lead > 0 {
				return nil, false // a second level of nesting
			}
			target.Content = append(target.Content, key)
			opener = key
			continue
		}
		target.Content = append(target.Content, key, value)
	}
	if root == nil || opener != nil {
		return nil, false
	}
	return root, true
}

// simpleEntry reads "key: value" or "key:" (value nil) from text, which
// starts at column col of its line.
func simpleEntry(text string, line, col int) (key, value *yaml.Node, ok bool) {
	colon := strings.IndexByte(text, ':')
	if colon <= 0 || !simpleKey(text[:colon]) {
		return nil, nil, false
	}
	// Keys and values are copies, as yaml.v3's are: a slice of the text
	// would keep the whole SKILL.md alive through the skill's fields after
	// Snapshot.Pack has compressed it (~90 MB more at 10,000 skills).
	name := strings.Clone(text[:colon])
	key = &yaml.Node{Kind: yaml.ScalarNode, Tag: resolvedTag(name), Value: name, Line: line, Column: col}
	after := text[colon+1:]
	v := strings.TrimLeft(after, " ")
	if v == "" {
		return key, nil, true
	}
	pad := len(after) - len(v) // spaces between the colon and the value
	if pad == 0 {
		return nil, nil, false // "key:value" is one plain scalar
	}
	v = strings.TrimRight(v, " ")
	if !printable(v) {
		return nil, nil, false
	}
	value = &yaml.Node{Kind: yaml.ScalarNode, Line: line, Column: col + colon + 1 + pad}
	switch v[0] {
	case '"', '\'':
		q := v[0]
		if len(v) < 2 || v[len(v)-1] != q || strings.IndexByte(v[1:len(v)-1], q) >= 0 ||
			q == '"' && strings.IndexByte(v, '\\') >= 0 {
			return nil, nil, false
		}
		value.Style, value.Tag, value.Value = yaml.DoubleQuotedStyle, "!!str", strings.Clone(v[1:len(v)-1])
		if q == '\'' {
			value.Style = yaml.SingleQuotedStyle
		}
	default:
		if !simplePlain(v) {
			return nil, nil, false
		}
		value.Tag, value.Value = resolvedTag(v), strings.Clone(v)
	}
	return key, value, true
}

// simpleKey: a key of letters, digits, '_' and '-', starting with a
// letter, of at most maxSimpleKey bytes (YAML bounds an implicit key's
// length).
func simpleKey(k string) bool {
	if len(k) > maxSimpleKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

const maxSimpleKey = 128

// simplePlain: a plain scalar that starts with none of YAML's indicators
// and holds no ": " or " #", so that it ends where its line does.
func simplePlain(v string) bool {
	if strings.IndexByte("-?:,[]{}#&*!|>'\"%@`", v[0]) >= 0 || v == "<<" { // "<<": the merge key's tag
		return false
	}
	return !strings.Contains(v, ": ") && !strings.Contains(v, " #") && !strings.HasSuffix(v, ":")
}

// resolvedTag is the tag yaml.v3 resolves a plain scalar to (!!str, !!int,
// !!bool, !!null, !!timestamp, ...).
func resolvedTag(v string) string {
	return (&yaml.Node{Kind: yaml.ScalarNode, Value: v}).ShortTag()
}

// printable reports whether every character of s is one yaml.v3's reader
// allows and its scanner reads as part of a line: no control characters or
// tabs, no line or paragraph separators, no byte-order mark, no
// non-characters U+FFFE and U+FFFF.
func printable(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if size == 1 || r < 0xa0 || r == 0x2028 || r == 0x2029 || r == 0xfeff ||
			r >= 0xd800 && r < 0xe000 || r == 0xfffe || r == 0xffff {
			return false
		}
		i += size
	}
	return true
}
