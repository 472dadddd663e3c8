package chat

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
)

// extra holds the members of a tool call (or a fragment of one) that the
// proxy does not read, such as Gemini's extra_content.google.thought_signature,
// which its OpenAI endpoint refuses a follow-up without. They are relayed to
// the client and sent back upstream as they came.
type extra map[string]json.RawMessage

// readExtra returns the members of the object b other than known.
func readExtra(b []byte, known ...string) (extra, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	var e extra
	for k, v := range all {
		if !slices.Contains(known, k) {
			if e == nil {
				e = extra{}
			}
			e[k] = v
		}
	}
	return e, nil
}

// appendTo adds e's members, in key order, to the encoded object b.
func (e extra) appendTo(b []byte) []byte {
	if len(e) == 0 {
		return b
	}
	b = bytes.TrimRight(b, " \n")
	b = b[:len(b)-1] // the closing brace
	for _, k := range slices.Sorted(maps.Keys(e)) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		b = append(append(append(b, kb...), ':'), e[k]...)
	}
	return append(b, '}')
}

// merge adds e's members that into lacks (the first fragment to bring a
// member wins).
func (e extra) merge(into *extra) {
	for k, v := range e {
		if _, ok := (*into)[k]; ok {
			continue
		}
		if *into == nil {
			*into = extra{}
		}
		(*into)[k] = v
	}
}
