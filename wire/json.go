package wire

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v as the wire writes JSON: compact, without HTML escaping
// (skill bodies are full of <tags>, which upstreams and logs should see as
// they are) and without encoding/json's trailing newline. A value that
// cannot be encoded gives null.
func Marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// Quote encodes s as a JSON string the way Marshal does.
func Quote(s string) []byte { return Marshal(s) }

// Rendered returns s with Function set.
func (s ToolSpec) Rendered() ToolSpec {
	s.Function = nil
	s.Function = s.FunctionJSON()
	return s
}

// FunctionJSON renders s as an OpenAI function tool,
// {"type":"function","function":{"name","description","parameters"}}: the
// Chat Completions tool shape, and the form in which the router counts a
// tool's prompt tokens for every API.
func (s ToolSpec) FunctionJSON() []byte {
	if s.Function != nil {
		return s.Function
	}
	params := s.Parameters
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	out := make([]byte, 0, len(s.Description)+len(params)+len(s.Name)+64)
	out = append(out, `{"type":"function","function":{"name":`...)
	out = append(out, Quote(s.Name)...)
	if s.Description != "" { // optional: no empty member
		out = append(out, `,"description":`...)
		out = append(out, Quote(s.Description)...)
	}
	out = append(out, `,"parameters":`...)
	out = append(out, params...)
	return append(out, "}}"...)
}
