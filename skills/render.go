package skills

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skillrouter/skillrouter/wire"
)

// Format names a catalog format.
type Format string

const (
	FormatAgentSkills Format = "agent-skills"
	FormatAnthropic   Format = "anthropic"
	FormatQARK        Format = "qark"
)

// Formats lists the catalog formats, default first.
var Formats = []Format{FormatAgentSkills, FormatAnthropic, FormatQARK}

// ParseFormat checks a user-supplied format name ("" means the default).
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return FormatAgentSkills, nil
	}
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown catalog format %q (want agent-skills, anthropic or qark)", s)
}

// CatalogOptions controls RenderCatalog.
type CatalogOptions struct {
	Format         Format   // default agent-skills
	Priority       []string // ids for the <prioritized_skills> line; none = no line
	MaxDescription int      // >0: truncate descriptions at a word boundary to this many chars
	Footer         string   // one line after the list (e.g. "312 more skills: use search_skills"); CatalogStart reads no more
	// NoLoadTool: no load_skill tool is offered, so the agent-skills and
	// qark preambles point at the instructions already in the conversation
	// instead of telling the model to call a tool it does not have.
	NoLoadTool bool
}

// The catalog preamble is a contract (issue 2): byte for byte, including the
// trailing space after "tool".
const agentSkillsHeader = "## Agent Skills\n" +
	"You have access to a library of agent skills. Find skill by:\n" +
	"1. Review the <available_skills> list below.\n" +
	"2. If the user's request matches a skill's purpose, use the load_skill with skill id tool \n" +
	"   to fetch the full instructions.\n" +
	"\n"

// agentSkillsNoToolHeader replaces agentSkillsHeader when the model gets no
// load_skill tool: the matching skills' instructions arrive as
// <skill_context> messages (auto-load, #mentions) or not at all.
const agentSkillsNoToolHeader = "## Agent Skills\n" +
	"You have access to a library of agent skills. Use them by:\n" +
	"1. Review the <available_skills> list below.\n" +
	"2. If the user's request matches a skill's purpose, follow that skill's full instructions\n" +
	"   when they appear in the conversation (<skill_context>).\n" +
	"\n"

// anthropicHeader is for agents that read SKILL.md files themselves (Claude
// Code style), so it points at <location> instead of load_skill.
const anthropicHeader = "## Agent Skills\n" +
	"You have access to a library of agent skills. Find skill by:\n" +
	"1. Review the <available_skills> list below.\n" +
	"2. If the user's request matches a skill's purpose, read the SKILL.md file at its <location>\n" +
	"   to get the full instructions.\n" +
	"\n"

// location is where an agent reads s's SKILL.md: its absolute path. A path
// relative to where the proxy was started means nothing to an agent
// running in another folder.
func location(s *Skill) string {
	if filepath.IsAbs(s.Path) {
		return s.Path
	}
	if abs, err := filepath.Abs(s.Path); err == nil {
		return abs
	}
	return s.Path
}

// RenderCatalog renders the tier-1 catalog for the given skills, in the given
// order. The text has no trailing newline. An unknown format renders as
// agent-skills (check user input with ParseFormat).
func RenderCatalog(list []*Skill, opts CatalogOptions) string {
	var b strings.Builder
	b.Grow(256 + len(list)*160)
	switch {
	case opts.Format == FormatAnthropic:
		b.WriteString(anthropicHeader)
	case opts.NoLoadTool:
		b.WriteString(agentSkillsNoToolHeader)
	default:
		b.WriteString(agentSkillsHeader)
	}
	b.WriteString(catalogOpen)
	for _, s := range list {
		desc := escapeText(ShortDescription(s.Description, opts.MaxDescription))
		switch opts.Format {
		case FormatAnthropic:
			b.WriteString("  <skill>\n    <name>")
			b.WriteString(escapeText(skillName(s)))
			b.WriteString("</name>\n    <description>")
			b.WriteString(desc)
			b.WriteString("</description>\n    <location>")
			b.WriteString(escapeText(filepath.ToSlash(location(s))))
			b.WriteString("</location>\n  </skill>\n")
		case FormatQARK:
			b.WriteString(`  <skill name="`)
			b.WriteString(escapeAttr(s.ID))
			b.WriteString(`">`)
			b.WriteString(desc)
			b.WriteString("</skill>\n")
		default:
			b.WriteString("  <skill>\n    <id>")
			b.WriteString(escapeText(s.ID))
			b.WriteString("</id>\n    <description>")
			b.WriteString(desc)
			b.WriteString("</description>\n  </skill>\n")
		}
	}
	b.WriteString(catalogClose)
	if len(opts.Priority) > 0 {
		b.WriteString(priorityOpen)
		for i, id := range opts.Priority {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(escapeText(id))
		}
		b.WriteString(priorityClose)
	}
	if opts.Footer != "" {
		b.WriteString("\n")
		b.WriteString(opts.Footer)
	}
	return b.String()
}

// catalogHeaders are the openings RenderCatalog writes, one per format and
// tool offer.
var catalogHeaders = []string{agentSkillsHeader + catalogOpen, agentSkillsNoToolHeader + catalogOpen, anthropicHeader + catalogOpen}

const (
	catalogOpen   = "<available_skills>\n"
	catalogClose  = "</available_skills>"
	priorityOpen  = "\n<prioritized_skills>"
	priorityClose = "</prioritized_skills>"
)

// CatalogStart returns where a catalog RenderCatalog wrote starts in text,
// when text ends with one; -1 otherwise. It reads the catalog's own
// structure: one of its openings, the list (whose entries are escaped, so
// they cannot close it), then at most the priority line and a footer line.
// Text that a client wrote in that very form is taken for a catalog too.
func CatalogStart(text string) int {
	start := -1
	for _, h := range catalogHeaders {
		i := strings.LastIndex(text, h)
		if i < 0 || i < start {
			continue
		}
		end := strings.Index(text[i:], catalogClose)
		if end < 0 || !catalogTail(text[i+end+len(catalogClose):]) {
			continue
		}
		start = i
	}
	return start
}

// catalogTail reports whether rest is what RenderCatalog writes after the
// list: nothing, the priority line, a footer line, or both.
func catalogTail(rest string) bool {
	if p, ok := strings.CutPrefix(rest, priorityOpen); ok {
		end := strings.Index(p, priorityClose)
		if end < 0 || strings.Contains(p[:end], "\n") {
			return false
		}
		rest = p[end+len(priorityClose):]
	}
	if rest == "" {
		return true
	}
	footer, ok := strings.CutPrefix(rest, "\n")
	return ok && footer != "" && !strings.Contains(footer, "\n")
}

// skillName is the frontmatter name, or the folder name for in-memory skills
// that have none.
func skillName(s *Skill) string {
	if s.Name != "" {
		return s.Name
	}
	return path.Base(s.ID)
}

// ShortDescription folds a description onto one line (YAML block scalars
// carry newlines that only cost tokens) and, when limit > 0, cuts it to at
// most limit runes at a word boundary, marking the cut with an ellipsis. The
// catalog and search_skills results shorten descriptions the same way.
func ShortDescription(desc string, limit int) string {
	desc = strings.Join(strings.Fields(desc), " ")
	if limit <= 0 || utf8.RuneCountInString(desc) <= limit {
		return desc
	}
	const ellipsis = "…"
	if limit == 1 {
		return ellipsis
	}
	// Cut to limit-1 runes, leaving room for the ellipsis.
	cut := 0
	for i := range desc {
		if cut == limit-1 {
			desc = desc[:i]
			break
		}
		cut++
	}
	// Back up to a word boundary unless that would lose most of the text.
	if sp := strings.LastIndexByte(desc, ' '); sp > len(desc)/2 {
		desc = desc[:sp]
	}
	return strings.TrimRightFunc(desc, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }) + ellipsis
}

// Envelope renders the load_skill result for a skill: the whole SKILL.md, the
// folder and its files, and the execution directive. The layout is a
// contract (issue 2); the text has no trailing newline.
func Envelope(s *Skill) string {
	content := s.Content()
	if content == "" {
		content = s.Body() // in-memory skills (benchmarks) have no file
	}
	content = guardEnvelopeTags(strings.TrimRight(content, "\n"))
	var b strings.Builder
	b.Grow(len(content) + 512 + len(s.Resources)*64)
	b.WriteString(envelopeOpen)
	b.WriteString(escapeAttr(s.ID))
	b.WriteString("\">\n  <instructions>\n    ")
	b.WriteString(content)
	b.WriteString("\n  </instructions>\n\n  <active_resources>\n")
	writeResources(&b, s)
	b.WriteString("  </active_resources>\n\n  <execution_directive>\n")
	b.WriteString("    You are now operating under the specialized ")
	b.WriteString(escapeText(skillName(s)))
	b.WriteString(" protocol. \n")
	b.WriteString("    1. Prioritize the logic in <instructions> over generic behavior.\n")
	b.WriteString("    2. Use the data in <active_resources> to complete the user's specific request.\n")
	b.WriteString("    3. If the workflow is multi-step, explicitly state your plan before executing.\n")
	b.WriteString("  </execution_directive>\n")
	b.WriteString(envelopeClose)
	return b.String()
}

// IsEnvelope reports whether text is one envelope as Envelope writes it:
// its opening tag first, its closing tag last.
func IsEnvelope(text string) bool {
	rest, ok := strings.CutPrefix(text, envelopeOpen)
	if !ok || !strings.HasSuffix(rest, envelopeClose) {
		return false
	}
	id, _, ok := strings.Cut(rest, `">`)
	return ok && !strings.ContainsAny(id, "\"<>\n")
}

const (
	envelopeOpen  = `<skill_context id="`
	envelopeClose = "</skill_context>"
)

// guardEnvelopeTags writes the "<" of the tags that could end or open an
// envelope inside a skill's text as "&lt;": </skill_context>,
// </instructions> and <skill_context ...>. Bodies are otherwise sent as
// written (code in them reads as code, and a prompt-writing skill's
// "wrap it in <instructions>" stays so), but one of these, in a skill that
// documents envelopes or by accident, would end the envelope early for the
// model and for the proxy's own scan of loaded skills, leaving the rest of
// the body outside its instructions. Names match in any case: a model
// reads </SKILL_CONTEXT> as the same tag.
func guardEnvelopeTags(text string) string {
	var b []byte
	last := 0
	for i := 0; i < len(text); i++ {
		if text[i] != '<' {
			continue
		}
		name, closing := strings.CutPrefix(text[i+1:], "/")
		for _, tag := range [...]string{"skill_context", "instructions"} {
			if !closing && tag == "instructions" {
				continue // an opening <instructions> ends nothing
			}
			if len(name) < len(tag) || !strings.EqualFold(name[:len(tag)], tag) {
				continue
			}
			// The name must end there (">", "/", a space or the text's end):
			// <instructionset> is another tag.
			if rest := name[len(tag):]; rest != "" && !strings.ContainsRune(">/ \t\r\n", rune(rest[0])) {
				continue
			}
			if b == nil {
				b = make([]byte, 0, len(text)+16)
			}
			b = append(b, text[last:i]...)
			b = append(b, "&lt;"...)
			last = i + 1
			break
		}
	}
	if b == nil {
		return text
	}
	return string(append(b, text[last:]...))
}

// writeResources lists the skill folder and its files, one element per line,
// in path order, so the model can name files it wants to read or run.
func writeResources(b *strings.Builder, s *Skill) {
	if s.Dir != "" {
		b.WriteString("    <folder>")
		b.WriteString(escapeText(filepath.ToSlash(s.Dir)))
		b.WriteString("</folder>\n")
	}
	if len(s.Resources) == 0 && s.ResourcesOmitted == 0 {
		b.WriteString("    none: this skill has no files besides SKILL.md\n")
		return
	}
	for _, r := range s.Resources {
		b.WriteString(`    <resource path="`)
		b.WriteString(escapeAttr(r.Path))
		b.WriteString(`" kind="`)
		b.WriteString(escapeAttr(string(r.Kind)))
		b.WriteString(`" size="`)
		b.WriteString(strconv.FormatInt(r.Size, 10))
		b.WriteString("\"/>\n")
	}
	if s.ResourcesOmitted > 0 {
		fmt.Fprintf(b, "    <omitted_resources count=\"%d\"/>\n", s.ResourcesOmitted)
	}
}

// LoadSkillToolName is the name of the tool the model calls to load a skill.
const LoadSkillToolName = "load_skill"

// EnumLimit is the largest library whose ids are listed as an enum in the
// load_skill tool; beyond it the schema would cost more than it saves.
const EnumLimit = 200

type toolParams struct {
	Type       string         `json:"type"`
	Properties toolProperties `json:"properties"`
	Required   []string       `json:"required"`
}

type toolProperties struct {
	SkillID toolProperty `json:"skill_id"`
}

type toolProperty struct {
	Type        string   `json:"type"`
	Description string   `json:"description"`
	Enum        []string `json:"enum,omitempty"`
}

// LoadSkillDescription is the load_skill tool's description.
const LoadSkillDescription = "Load an agent skill: returns its full instructions (SKILL.md) and the list of its resource files. " +
	"Call it when the user's request matches a skill in <available_skills>, before starting the task."

// LoadSkillSpec returns the load_skill tool for the skills, API-neutral
// (enum of ids when there are 1 to 200; nil list: no enum). The parameters'
// JSON is compact and deterministic: struct field order, ids in the order
// given.
func LoadSkillSpec(list []*Skill) wire.ToolSpec {
	prop := toolProperty{
		Type:        "string",
		Description: "The id of the skill to load, exactly as written in <available_skills>.",
	}
	if len(list) > 0 && len(list) <= EnumLimit {
		prop.Enum = make([]string, len(list))
		for i, s := range list {
			prop.Enum[i] = s.ID
		}
	}
	params := toolParams{Type: "object", Properties: toolProperties{SkillID: prop}, Required: []string{"skill_id"}}
	return wire.ToolSpec{Name: LoadSkillToolName, Description: LoadSkillDescription, Parameters: wire.Marshal(params)}
}

// LoadSkillTool returns the OpenAI function tool definition of load_skill
// for the skills (see LoadSkillSpec), as `router skills catalog --tool` prints it.
func LoadSkillTool(list []*Skill) json.RawMessage {
	return LoadSkillSpec(list).FunctionJSON()
}

// ReadError renders the load_skill result when a skill exists but its files
// could not be read: a structured error naming the id, never partial content.
func ReadError(id string, err error) string {
	reason := "unknown error"
	if err != nil {
		reason = err.Error()
	}
	var b strings.Builder
	b.WriteString(`<skill_error id="`)
	b.WriteString(escapeAttr(id))
	b.WriteString("\" reason=\"read_failed\">\n  <message>The skill \"")
	b.WriteString(escapeText(id))
	b.WriteString("\" is unavailable: it could not be read (")
	b.WriteString(escapeText(reason))
	b.WriteString(").</message>\n  <next_step>Continue without this skill; do not call load_skill for it again in this conversation.</next_step>\n</skill_error>")
	return b.String()
}

var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\n", "&#10;", "\t", "&#9;", "\r", "&#13;")
)

// escapeText escapes XML element text and drops control characters XML
// cannot carry.
func escapeText(s string) string { return textEscaper.Replace(dropControl(s)) }

// escapeAttr escapes an XML attribute value (double-quoted).
func escapeAttr(s string) string { return attrEscaper.Replace(dropControl(s)) }

func dropControl(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' && c != '\r' || c == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\n' && r != '\t' && r != '\r') || r == 0x7f {
			return -1
		}
		return r
	}, s)
}
