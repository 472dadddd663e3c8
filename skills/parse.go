package skills

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Frontmatter keys with a meaning; everything else lands in Skill.Extra.
const (
	keyName          = "name"
	keyDescription   = "description"
	keyLicense       = "license"
	keyCompatibility = "compatibility"
	keyMetadata      = "metadata"
	keyAllowedTools  = "allowed-tools"
	keyType          = "type"
	keyEnabled       = "enabled"
	keyAutoLoad      = "auto_load"
	keyDependencies  = "dependencies"
	keyTags          = "tags"
)

// fmFirstLine is the file line the YAML text starts on (the line after the
// opening "---"); YAML reports lines relative to its own input.
const fmFirstLine = 2

// issues collects the problems of one file.
type issues struct {
	path string
	list []Problem
}

func (is *issues) add(sev Severity, line int, format string, args ...any) {
	is.list = append(is.list, Problem{Path: is.path, Line: line, Severity: sev, Message: fmt.Sprintf(format, args...)})
}
func (is *issues) errorf(line int, format string, args ...any) {
	is.add(SeverityError, line, format, args...)
}
func (is *issues) warnf(line int, format string, args ...any) {
	is.add(SeverityWarning, line, format, args...)
}

// parse turns the text of a SKILL.md into a Skill. It does no I/O and never
// panics; everything wrong is recorded in Problems and Skipped is set when an
// error applies. folder is the skill's folder name ("" skips that check);
// identity fields (ID, Dir, Root) are the caller's business.
func parse(path, text, folder string, maxBody int64) *Skill {
	s := &Skill{Path: path, Type: TypeContextual, Resources: []Resource{}}
	is := &issues{path: path}
	var content, body string // the skill's text, once known
	defer func() {
		s.SetText(content, body)
		s.Problems = is.list
		if s.Problems == nil {
			s.Problems = []Problem{}
		}
		s.Skipped = hasError(s.Problems)
	}()

	if strings.TrimSpace(text) == "" {
		is.errorf(1, "SKILL.md is empty; it needs YAML frontmatter (---, name:, description:, ---) followed by instructions")
		return s
	}
	if !utf8.ValidString(text) {
		off := invalidUTF8Offset(text)
		is.errorf(lineAt(text, off), "not valid UTF-8 (byte 0x%02x at offset %d); save the file as UTF-8", text[off], off)
		return s
	}
	// A BOM and Windows line endings are editor noise, not content: drop them
	// so the model sees the same text whatever editor saved the file.
	text = strings.TrimPrefix(text, "\uFEFF")
	if strings.Contains(text, "\r\n") {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	if i := strings.IndexByte(text, 0); i >= 0 {
		is.errorf(lineAt(text, i), "contains a NUL byte; SKILL.md must be a text file")
		return s
	}
	content = text

	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t\r") != "---" {
		is.errorf(1, `missing YAML frontmatter: the first line must be "---", followed by name: and description: lines and a closing "---"`)
		return s
	}
	fm, body, closeLine, ok := splitFrontmatter(rest)
	if !ok {
		is.errorf(1, `unterminated frontmatter: no closing "---" line after the opening one`)
		return s
	}
	s.BodyLine = closeLine + 1
	if maxBody > 0 && int64(len(body)) > maxBody {
		is.errorf(s.BodyLine, "body is %d bytes; the limit is %d bytes — move long material into references/ files", len(body), maxBody)
	}

	lines := strings.Split(fm, "\n")
	root, err := parseYAML(fm)
	if err != nil {
		line, msg := yamlErrorLine(fm, err)
		if cut, hint := commentCutError(lines, line, msg); cut > 0 {
			is.errorf(cut+fmFirstLine-1, "invalid YAML in frontmatter: %s", hint)
			return s
		}
		if strings.HasPrefix(msg, "mapping values are not allowed") {
			// The usual cause: an unquoted description with a colon in it.
			msg += `; quote a value that contains ": " (description: "Use when: …")`
		}
		if line >= 1 && line <= len(lines) && strings.Contains(lines[line-1], "\t") &&
			!strings.Contains(msg, "tab") {
			msg += "; that line holds a tab: YAML indents with spaces"
		}
		is.errorf(line+fmFirstLine-1, "invalid YAML in frontmatter: %s", msg)
		return s
	}
	applyFrontmatter(s, root, lines, folder, is)
	// Only on a skill that loads: a skipped one has its errors to fix first.
	if !hasError(is.list) && strings.TrimSpace(body) == "" {
		is.warnf(closeLine, `body is empty: nothing follows the frontmatter's closing "---", so loading the skill gives the model no instructions`)
	}
	return s
}

// splitFrontmatter finds the closing "---" in rest (the text after the
// opening line). closeLine is the file line of the closing delimiter.
func splitFrontmatter(rest string) (fm, body string, closeLine int, ok bool) {
	line := fmFirstLine
	for off := 0; off < len(rest); line++ {
		end := strings.IndexByte(rest[off:], '\n')
		var cur string
		next := len(rest)
		if end < 0 {
			cur = rest[off:]
		} else {
			cur = rest[off : off+end]
			next = off + end + 1
		}
		if strings.TrimRight(cur, " \t\r") == "---" {
			return rest[:off], rest[next:], line, true
		}
		off = next
	}
	return "", "", 0, false
}

// parseYAML parses the frontmatter into a node tree. yaml.v3 has panicked on
// hostile input before; a broken file must never take the scan down.
func parseYAML(fm string) (root *yaml.Node, err error) {
	if n, ok := parseSimpleYAML(fm); ok {
		return n, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: parser failed: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(fm), &doc); err != nil {
		return nil, err
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], nil
	}
	return nil, nil // empty frontmatter
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// The prefix search in yamlErrorLine parses once per line, so it only runs
// on frontmatter of ordinary size; a hostile 1 MiB one gets yaml.v3's line.
const (
	maxLocateLines = 200
	maxLocateBytes = 32 << 10
)

// yamlErrorLine returns the 1-based line of fm where parsing fails and the
// message without yaml.v3's "yaml: line N:" prefix. yaml.v3's own number is
// unreliable (0- or 1-based depending on the error kind), so the line is
// found as the shortest prefix of fm that fails with the same message.
func yamlErrorLine(fm string, err error) (int, string) {
	reported, msg := yamlMessage(err)
	lines := strings.SplitAfter(fm, "\n")
	if len(lines) <= maxLocateLines && len(fm) <= maxLocateBytes {
		prefix := 0
		for i, l := range lines {
			prefix += len(l)
			if _, perr := parseYAML(fm[:prefix]); perr != nil {
				if _, pmsg := yamlMessage(perr); pmsg == msg {
					return i + 1, msg
				}
			}
		}
	}
	return max(reported, 1), msg
}

func yamlMessage(err error) (int, string) {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, err.Error()[len(m[0]):]
	}
	return 0, strings.TrimPrefix(err.Error(), "yaml: ")
}

// applyFrontmatter reads the parsed frontmatter root into s; lines is the
// frontmatter's text by line, for the rules YAML's nodes cannot see.
func applyFrontmatter(s *Skill, root *yaml.Node, lines []string, folder string, is *issues) {
	if root == nil {
		is.errorf(1, "frontmatter is empty; add name: and description:")
		return
	}
	if root.Kind != yaml.MappingNode {
		is.errorf(fileLine(root), "frontmatter must be key: value pairs (a YAML mapping), found %s", kindName(root))
		return
	}
	seen := map[string]int{}
	var haveName, haveDesc bool
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			is.warnf(fileLine(k), "ignored a frontmatter key that is not a plain string (%s)", kindName(k))
			continue
		}
		key := k.Value
		line := fileLine(k)
		if first, dup := seen[key]; dup {
			is.errorf(line, "duplicate key %q (first set on line %d); YAML keys must be unique", key, first)
			continue
		}
		seen[key] = line
		v = deref(v)
		switch key {
		case keyName:
			haveName = true
			s.nameLine = line
			if str, ok := scalarString(v); ok {
				s.Name = strings.TrimSpace(str)
				warnComment(v, key, is)
				warnCommentLine(lines, k, v, is)
			} else {
				is.errorf(fileLine(v), "name must be a string, found %s", kindName(v))
				delete(seen, key) // already reported; skip the value rules
			}
		case keyDescription:
			haveDesc = true
			if str, ok := scalarString(v); ok {
				s.Description = strings.TrimSpace(str)
				warnComment(v, key, is)
				warnCommentLine(lines, k, v, is)
			} else {
				is.errorf(fileLine(v), "description must be a string, found %s", kindName(v))
				delete(seen, key)
			}
		case keyLicense:
			s.License = optionalString(v, key, is)
		case keyCompatibility:
			s.Compatibility = optionalString(v, key, is)
		case keyType:
			if t := optionalString(v, key, is); t != "" {
				s.Type = Type(t)
			}
		case keyMetadata:
			if isNull(v) {
				continue
			}
			if v.Kind != yaml.MappingNode {
				is.warnf(fileLine(v), "metadata must be a mapping of key: value pairs, found %s; ignored", kindName(v))
				continue
			}
			if m, ok := decodeAny(v, key, is).(map[string]any); ok {
				s.Metadata = m
			}
		case keyAllowedTools:
			s.AllowedTools = stringList(v, key, splitTools, is)
		case keyDependencies:
			s.Dependencies = stringList(v, key, splitCommas, is)
		case keyTags:
			s.Tags = stringList(v, key, splitCommas, is)
		case keyEnabled:
			s.Enabled = optionalBool(v, key, is)
		case keyAutoLoad:
			s.AutoLoad = optionalBool(v, key, is)
		default:
			if s.Extra == nil {
				s.Extra = map[string]any{}
			}
			s.Extra[key] = decodeAny(v, key, is)
		}
	}
	// Keys are read as written: a capitalised one is another key.
	other := func(want string) string {
		for k := range s.Extra {
			if strings.EqualFold(k, want) {
				return fmt.Sprintf(" (%q is another key: keys are lower case)", k)
			}
		}
		return ""
	}
	if !haveName {
		is.errorf(1, "frontmatter has no name%s; add name: %s (the folder's name)", other(keyName), folder)
	}
	if !haveDesc {
		is.errorf(1, "frontmatter has no description%s; add one saying what the skill does and when to use it", other(keyDescription))
	}
	validateFields(s, folder, seen, is)
}

// warnComment warns when a plain value is followed by a comment on its
// line: in YAML " #" starts one, so "description: Use #python for scripts"
// is the description "Use", valid YAML that silently loses the rest.
func warnComment(v *yaml.Node, key string, is *issues) {
	if v.Kind != yaml.ScalarNode || v.Style != 0 || v.LineComment == "" {
		return
	}
	is.warnf(fileLine(v), `%s ends at " #", which starts a YAML comment, so it is %q and %q is left out; quote the whole value if that text belongs to it`,
		key, v.Value, ShortDescription(v.LineComment, 60))
}

// commentLineCut finds the comment line that ends the plain (unquoted)
// value v of the mapping key k. YAML ends a plain value at a line that is a
// comment, however the text around it is indented, so in
//
//	description: Extract text from PDFs,
//	  # TODO mention OCR
//	  Use when the user mentions PDFs.
//
// the description is "Extract text from PDFs," and the third line continues
// nothing (yaml.v3: "did not find expected key"); without that third line
// the YAML is valid and the comment, indented as part of the value, simply
// is not in it. cut is the frontmatter line (1-based, as lines is indexed
// from 0) of the first comment line among the value's lines: those after
// its first, before the next line that holds text at or left of k's
// indentation. A comment line counts when it is indented under k, or when
// text indented under k follows it (a comment at the key's own indentation,
// followed by the next key, is a comment between keys). more is the first
// line after cut with text indented under k, 0 when there is none. It reads
// only lines, so any input is safe.
func commentLineCut(lines []string, k, v *yaml.Node) (cut, more int) {
	if k == nil || v == nil || v.Kind != yaml.ScalarNode || v.Style != 0 || v.Line < k.Line {
		return 0, 0 // not plain, or an alias's anchor elsewhere
	}
	keyIndent := k.Column - 1
	comment := 0 // the first comment line after the value's first line
	for i := v.Line; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimLeft(l, " \t")
		if t == "" {
			continue
		}
		deeper := len(l)-len(strings.TrimLeft(l, " ")) > keyIndent
		switch {
		case t[0] == '#':
			if comment == 0 {
				comment = i + 1
			}
			if deeper && cut == 0 {
				cut = i + 1
			}
		case !deeper:
			return cut, 0 // the next key: the value ended before it
		case comment != 0:
			return comment, i + 1 // text after the comment that YAML refuses
		}
	}
	return cut, 0
}

// warnCommentLine warns when a comment line sits inside a plain value's
// lines, indented as part of it, and the value (valid YAML) ends there: the
// comment's text is not in it. When text follows the comment the YAML is
// invalid, and commentCutError names the same cause as an error.
func warnCommentLine(lines []string, k, v *yaml.Node, is *issues) {
	cut, _ := commentLineCut(lines, k, v)
	if cut == 0 {
		return
	}
	is.warnf(cut+fmFirstLine-1, `%s is cut at line %d: %q is a YAML comment, which ends an unquoted value, so it is not in the %s %q; %s`,
		k.Value, cut+fmFirstLine-1, ShortDescription(lines[cut-1], 60), k.Value, ShortDescription(v.Value, 60), commentCutFix(k.Value))
}

// commentCutError explains yaml.v3's "did not find expected key" at
// frontmatter line bad when its cause is a comment that ended the plain
// value before it: a comment line (commentLineCut) or a " #" comment after
// the value's last text, followed by text indented as if the value went on.
// cut is the frontmatter line of that comment, 0 when the cause is another.
func commentCutError(lines []string, bad int, msg string) (cut int, hint string) {
	if msg != "did not find expected key" || bad < 2 || bad > len(lines) ||
		bad > maxLocateLines || len(lines) > maxLocateLines {
		return 0, ""
	}
	// The frontmatter before the line parses: its last key is the one whose
	// value the line was meant to continue.
	root, err := parseYAML(strings.Join(lines[:bad-1], "\n"))
	if err != nil || root == nil || root.Kind != yaml.MappingNode || len(root.Content) < 2 {
		return 0, ""
	}
	k, v := root.Content[len(root.Content)-2], root.Content[len(root.Content)-1]
	if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode || v.Style != 0 {
		return 0, ""
	}
	l := lines[bad-1]
	if len(l)-len(strings.TrimLeft(l, " ")) <= k.Column-1 {
		return 0, "" // not indented under the key: not a continuation
	}
	var what string
	if v.LineComment != "" {
		// A " #" comment after the value's text, which comes before any
		// comment line: on the value's last line of text.
		for cut = bad - 1; cut > v.Line; cut-- {
			if t := strings.TrimSpace(lines[cut-1]); t != "" && t[0] != '#' {
				break
			}
		}
		what = fmt.Sprintf(`" %s" is a YAML comment (after a space, # starts one)`, ShortDescription(v.LineComment, 60))
	} else if c, more := commentLineCut(lines[:bad], k, v); more == bad {
		cut = c
		what = fmt.Sprintf("%q is a YAML comment", ShortDescription(lines[cut-1], 60))
	} else {
		return 0, ""
	}
	return cut, fmt.Sprintf(`%s is cut at line %d: %s, which ends an unquoted value, so line %d (%q) continues nothing (%s); %s`,
		k.Value, cut+fmFirstLine-1, what, bad+fmFirstLine-1, ShortDescription(l, 60), msg, commentCutFix(k.Value))
}

// commentCutFix is how to keep a # line in a value, or keep it out.
func commentCutFix(key string) string {
	return fmt.Sprintf(`to keep the text, quote the whole %[1]s or make it a block scalar ("%[1]s: >", the text indented below); a note belongs above "%[1]s:" or unindented`, key)
}

// fileLine maps a node's YAML line to the SKILL.md line.
func fileLine(n *yaml.Node) int {
	if n == nil || n.Line == 0 {
		return 1
	}
	return n.Line + fmFirstLine - 1
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// scalarString accepts any scalar (a name like 2048 is still a name); null is "".
func scalarString(n *yaml.Node) (string, bool) {
	if isNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode {
		return "", false
	}
	return n.Value, true
}

func optionalString(n *yaml.Node, key string, is *issues) string {
	str, ok := scalarString(n)
	if !ok {
		is.warnf(fileLine(n), "%s must be a string, found %s; ignored", key, kindName(n))
		return ""
	}
	return strings.TrimSpace(str)
}

func optionalBool(n *yaml.Node, key string, is *issues) *bool {
	if isNull(n) {
		return nil
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			return &b
		}
	}
	is.warnf(fileLine(n), "%s must be true or false, found %q; ignored", key, n.Value)
	return nil
}

// stringList accepts a YAML list of scalars or one string split by split.
func stringList(n *yaml.Node, key string, split func(string) []string, is *issues) []string {
	if isNull(n) {
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return split(n.Value)
	case yaml.SequenceNode:
		var out []string
		for _, item := range n.Content {
			item = deref(item)
			str, ok := scalarString(item)
			if !ok {
				is.warnf(fileLine(item), "%s items must be strings, found %s; ignored", key, kindName(item))
				continue
			}
			if str = strings.TrimSpace(str); str != "" {
				out = append(out, str)
			}
		}
		return out
	}
	is.warnf(fileLine(n), "%s must be a list of strings, found %s; ignored", key, kindName(n))
	return nil
}

func splitCommas(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// splitTools splits allowed-tools, which the spec writes space-delimited and
// Claude Code comma-delimited, without breaking "Bash(git add:*)".
func splitTools(s string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
	}
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || r == ' ' || r == '\t' || r == '\n'):
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return out
}

// maxExtraNodes bounds how much YAML one unknown field may expand to, so an
// alias bomb in an ignored key cannot blow up memory.
const maxExtraNodes = 10000

// decodeAny turns a node into JSON-friendly Go values: string-keyed maps,
// no NaN/Inf floats (encoding/json rejects them), bounded alias expansion.
func decodeAny(n *yaml.Node, key string, is *issues) any {
	budget := maxExtraNodes
	v, ok := nodeValue(n, &budget, 0)
	if !ok {
		is.warnf(fileLine(n), "value of %s is too large or too deeply nested; ignored", key)
		return nil
	}
	return v
}

func nodeValue(n *yaml.Node, budget *int, depth int) (any, bool) {
	*budget--
	if *budget < 0 || depth > 64 || n == nil {
		return nil, false
	}
	switch n.Kind {
	case yaml.AliasNode:
		return nodeValue(n.Alias, budget, depth+1)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, true
		}
		return nodeValue(n.Content[0], budget, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, ok := nodeValue(c, budget, depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			var ks string
			if k != nil && k.Kind == yaml.ScalarNode {
				ks = k.Value
			} else {
				kv, ok := nodeValue(k, budget, depth+1)
				if !ok {
					return nil, false
				}
				ks = fmt.Sprint(kv)
			}
			v, ok := nodeValue(n.Content[i+1], budget, depth+1)
			if !ok {
				return nil, false
			}
			out[ks] = v
		}
		return out, true
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return n.Value, true
		}
		switch x := v.(type) {
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return n.Value, true
			}
		case []byte, time.Time: // timestamps as written, not reformatted
			return n.Value, true
		}
		return v, true
	}
	return nil, true
}

func hasError(ps []Problem) bool {
	for _, p := range ps {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

func invalidUTF8Offset(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return 0
}

// lineAt is the 1-based line of byte offset off.
func lineAt(s string, off int) int {
	return strings.Count(s[:off], "\n") + 1
}
