package router

// Dedup: a skill whose load_skill envelope is already in the conversation
// (auto-loaded in an earlier round, or returned as a tool result) is not
// injected again, and loading it again gets a short "already active" answer.

import (
	"html"
	"strings"
)

const (
	envelopeOpen  = `<skill_context id="`
	envelopeClose = `</skill_context>`
)

// envelopesIn returns the ids of the envelopes found in the messages' text,
// in order of first appearance. The id is read from the opening tag the
// skills package renders, `<skill_context id="ID">`, and XML-unescaped.
// Only text a load_skill could have put there counts (see loadedBy): an
// envelope in another tool's result (a fetched web page) or in the model's
// own words is not a skill the model loaded, and counting it would enable
// the client tools the skill's allowed-tools gate and stop its loading.
func envelopesIn(msgs []Message) []string {
	var ids []string
	seen := map[string]bool{}
	for _, m := range msgs {
		if !loadedBy(m) {
			continue
		}
		text := m.Text
		depth := 0 // envelopes open around the text at hand
		for {
			i, j := strings.Index(text, envelopeOpen), strings.Index(text, envelopeClose)
			if i < 0 && j < 0 {
				break
			}
			if j >= 0 && (i < 0 || j < i) {
				text = text[j+len(envelopeClose):]
				depth = max(depth-1, 0)
				continue
			}
			text = text[i+len(envelopeOpen):]
			end := strings.IndexByte(text, '"')
			if end < 0 {
				break
			}
			if !strings.HasPrefix(text[end:], `">`) {
				continue // not an envelope's opening tag
			}
			depth++
			if depth > 1 {
				// Inside another envelope: an example in a skill's body
				// (docs about envelopes), not a skill that was loaded.
				continue
			}
			id := html.UnescapeString(text[:end])
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// loadedBy reports whether a message's envelopes count: text the user, the
// system or the developer wrote (a client that pins a skill by pasting
// it), or the result of a load_skill call, the proxy's or an MCP server's
// as the client names it. A result whose call the request does not hold
// (a Responses turn on stored state sends the output alone) counts, as no
// other tool can be told from it.
func loadedBy(m Message) bool {
	switch m.Role {
	case "user", "system", "developer":
		return true
	case "tool":
		return m.Tool == "" || namesLoadSkill(m.Tool)
	}
	return false
}

// namesLoadSkill reports whether a tool name is load_skill as MCP hosts
// name a server's tool: alone, or after the server's name and any
// separator (mcp__skillrouter__load_skill in Claude Code,
// skillrouter_load_skill, mcp--skillrouter--load_skill, skillrouter.load_skill),
// or before "_mcp_" and the server's name (LibreChat). A client tool that
// merely contains the name (load_skill_docs) is not it.
func namesLoadSkill(name string) bool {
	if name == ToolLoadSkill || strings.HasPrefix(name, ToolLoadSkill+"_mcp_") {
		return true
	}
	rest, ok := strings.CutSuffix(name, ToolLoadSkill)
	return ok && !isNameChar(rest[len(rest)-1])
}

// isNameChar: a letter or digit, which continues a word (the separators
// hosts join names with are "_", "-", ".", "/", ":").
func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
