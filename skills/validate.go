package skills

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
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

// validateName checks a frontmatter name against the spec. The reserved-word
// rule is a warning, not an error: it is Anthropic's upload rule, and
// Anthropic's own published skills (claude-api) break it, so refusing to load
// them locally would help nobody.
func validateName(name string) []finding {
	if name == "" {
		return []finding{{SeverityError, "name is empty; set it to the folder name"}}
	}
	var out []finding
	if n := utf8.RuneCountInString(name); n > MaxNameLen {
		out = append(out, finding{SeverityError, fmt.Sprintf("name is %d characters; the limit is %d", n, MaxNameLen)})
	}
	if bad := firstInvalidNameRune(name); bad != "" {
		msg := fmt.Sprintf("name %q may only contain lowercase letters a-z, digits and hyphens (found %q)", name, bad)
		if fix := suggestName(name); fix != "" && fix != name {
			msg += fmt.Sprintf("; %q would be valid", fix)
		}
		out = append(out, finding{SeverityError, msg})
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		out = append(out, finding{SeverityError, fmt.Sprintf("name %q must not start or end with a hyphen", name)})
	}
	if strings.Contains(name, "--") {
		out = append(out, finding{SeverityError, fmt.Sprintf("name %q must not contain consecutive hyphens", name)})
	}
	lower := strings.ToLower(name)
	for _, w := range reservedWords {
		if strings.Contains(lower, w) {
			out = append(out, finding{SeverityWarning, fmt.Sprintf("name %q contains the reserved word %q; Anthropic's API rejects such names on upload", name, w)})
		}
	}
	return out
}

func isNameRune(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-'
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
// "pdf-tools") so the message says exactly what would pass. A name with a
// letter or digit outside a-z and 0-9 gets none: dropping it would suggest
// another name ("café" → "caf").
func suggestName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if !isNameRune(r) && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return ""
		}
		if isNameRune(r) && r != '-' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if len(out) > MaxNameLen {
		out = strings.TrimRight(out[:MaxNameLen], "-")
	}
	return out
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

// validateFolder checks that the name equals the skill's folder name.
func validateFolder(name, folder string) []finding {
	if name == "" || folder == "" || name == folder {
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
