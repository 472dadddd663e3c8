package skills

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Limits from the Agent Skills specification.
const (
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024
	MaxCompatibilityLen = 500
)

// reservedWords may not appear in a name (Anthropic's upload rules).
var reservedWords = []string{"anthropic", "claude"}

// finding is a validation result before it is tied to a file and line.
type finding struct {
	sev Severity
	msg string
}

// validateName checks a frontmatter name against the spec, as the reference
// validator (skills-ref) reads it: NFKC-normalised, then at most 64
// characters of lowercase Unicode letters (or letters without case, such as
// CJK), Unicode digits and single inner hyphens. The reserved-word rule is a
// warning, not an error: it is Anthropic's upload rule, and Anthropic's own
// published skills (claude-api) break it, so refusing to load them locally
// would help nobody. Non-ASCII is a warning for the same reason: Anthropic's
// upload API takes a-z, 0-9 and hyphens only, while the spec and Claude Code
// take Unicode.
func validateName(name string) []finding {
	if name == "" {
		return []finding{{SeverityError, "name is empty; set it to the folder name"}}
	}
	var out []finding
	n := NormalizeName(name)
	if c := utf8.RuneCountInString(n); c > MaxNameLen {
		out = append(out, finding{SeverityError, fmt.Sprintf("name is %d characters; the limit is %d", c, MaxNameLen)})
	}
	if bad := firstInvalidNameRune(n); bad != "" {
		msg := fmt.Sprintf("name %q may only contain lowercase letters, digits and hyphens (found %q)", name, bad)
		if fix := suggestName(name); fix != "" && fix != name {
			msg += fmt.Sprintf("; %q would be valid", fix)
		}
		out = append(out, finding{SeverityError, msg})
	}
	if strings.HasPrefix(n, "-") || strings.HasSuffix(n, "-") {
		out = append(out, finding{SeverityError, fmt.Sprintf("name %q must not start or end with a hyphen", name)})
	}
	if strings.Contains(n, "--") {
		out = append(out, finding{SeverityError, fmt.Sprintf("name %q must not contain consecutive hyphens", name)})
	}
	if !isASCII(name) {
		out = append(out, finding{SeverityWarning, fmt.Sprintf("name %q has characters outside a-z, 0-9 and hyphens; the spec allows them, but Anthropic's API rejects such names on upload and other tools may too", name)})
	}
	lower := strings.ToLower(n)
	for _, w := range reservedWords {
		if strings.Contains(lower, w) {
			out = append(out, finding{SeverityWarning, fmt.Sprintf("name %q contains the reserved word %q; Anthropic's API rejects such names on upload", name, w)})
		}
	}
	return out
}

// NormalizeName is the form names and folder names are compared in: NFKC,
// as skills-ref does, so a decomposed "café" (as macOS may store a folder
// name) or a fullwidth "ｐｄｆ" equals what a person types.
func NormalizeName(s string) string {
	if isASCII(s) {
		return s // the common case, and NFKC leaves ASCII alone
	}
	return norm.NFKC.String(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isNameRune is the spec's "unicode lowercase alphanumeric characters and
// hyphens" as skills-ref checks it (Python's isalnum on a string equal to
// its lower()): a letter or number that lowercasing leaves alone, so
// uppercase and titlecase are out and letters without case (CJK) are in.
// Combining marks are out, as in skills-ref; NFKC composes the common ones.
func isNameRune(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-'
	}
	return (unicode.IsLetter(r) || unicode.IsNumber(r)) && unicode.ToLower(r) == r
}

func firstInvalidNameRune(name string) string {
	for _, r := range name {
		if !isNameRune(r) {
			return string(r)
		}
	}
	return ""
}

// suggestName derives a valid name from an invalid one ("PDF_Tools" →
// "pdf-tools", "Café" → "café") so the message says exactly what would
// pass. A letter or digit lowercasing cannot make valid gets none: dropping
// it would suggest another name.
func suggestName(name string) string {
	var b strings.Builder
	dash := false
	runes := 0
	for _, r := range NormalizeName(strings.ToLower(NormalizeName(name))) {
		if runes == MaxNameLen {
			break
		}
		if !isNameRune(r) && (unicode.IsLetter(r) || unicode.IsNumber(r)) {
			return ""
		}
		if isNameRune(r) && r != '-' {
			b.WriteRune(r)
			dash = false
			runes++
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
			runes++
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// validateDescription checks the description. Over-long is a warning: the
// skill still works, it just costs catalog space on every request.
func validateDescription(desc string) []finding {
	if strings.TrimSpace(desc) == "" {
		return []finding{{SeverityError, "description is empty; say what the skill does and when to use it"}}
	}
	if n := utf8.RuneCountInString(desc); n > MaxDescriptionLen {
		return []finding{{SeverityWarning, fmt.Sprintf("description is %d characters; the spec allows at most %d (it is sent in every catalog, so shorten it)", n, MaxDescriptionLen)}}
	}
	return nil
}

// validateFolder checks that the name equals the skill's folder name, both
// NFKC-normalised (as skills-ref compares them).
func validateFolder(name, folder string) []finding {
	if name == "" || folder == "" || NormalizeName(name) == NormalizeName(folder) {
		return nil
	}
	return []finding{{SeverityWarning, fmt.Sprintf("name %q does not match its folder %q; the spec expects them to be equal (rename one)", name, folder)}}
}

// validateFields runs the per-field rules after the frontmatter is decoded;
// lines maps each key to the file line it is on.
func validateFields(s *Skill, folder string, lines map[string]int, is *issues) {
	if line, ok := lines[keyName]; ok {
		nameOK := true
		for _, f := range validateName(s.Name) {
			is.add(f.sev, line, "%s", f.msg)
			nameOK = nameOK && f.sev != SeverityError
		}
		// An invalid name already says what to rename it to; a folder
		// mismatch on top would be noise.
		if nameOK {
			for _, f := range validateFolder(s.Name, folder) {
				is.add(f.sev, line, "%s", f.msg)
			}
		}
	}
	if line, ok := lines[keyDescription]; ok {
		for _, f := range validateDescription(s.Description) {
			is.add(f.sev, line, "%s", f.msg)
		}
	}
	if n := utf8.RuneCountInString(s.Compatibility); n > MaxCompatibilityLen {
		is.warnf(lines[keyCompatibility], "compatibility is %d characters; the spec allows at most %d", n, MaxCompatibilityLen)
	}
	switch s.Type {
	case TypeContextual, TypeExecutable, TypeComposite:
	default:
		is.warnf(lines[keyType], "unknown type %q; expected contextual, executable or composite (treated as contextual)", s.Type)
		s.Type = TypeContextual
	}
}
