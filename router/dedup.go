package router

// Dedup: a skill whose load_skill envelope is already in the conversation
// (auto-loaded in an earlier round, or returned as a tool result) is not
// injected again, and loading it again gets a short "already active" answer.

import (
	"html"
	"strings"
)

const envelopeOpen = `<skill_context id="`

// envelopesIn returns the ids of the envelopes found in the messages' text,
// in order of first appearance. The id is read from the opening tag the
// skills package renders, `<skill_context id="ID">`, and XML-unescaped.
func envelopesIn(msgs []Message) []string {
	var ids []string
	seen := map[string]bool{}
	for _, m := range msgs {
		text := m.Text
		for {
			i := strings.Index(text, envelopeOpen)
			if i < 0 {
				break
			}
			text = text[i+len(envelopeOpen):]
			end := strings.IndexByte(text, '"')
			if end < 0 {
				break
			}
			if !strings.HasPrefix(text[end:], `">`) {
				continue // not an envelope's opening tag
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
