// Package openai holds what the two OpenAI APIs (Chat Completions and
// Responses) share on the wire: the error envelope, tool_choice, and the
// text parts of content.
package openai

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// Error types of the OpenAI error envelope.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeUpstream       = "upstream_error"
	TypeServer         = "server_error"
)

// envelope is the OpenAI error body {"error":{"message","type","param","code"}}.
type envelope struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// ErrorJSON renders e in the OpenAI error envelope.
func ErrorJSON(e *wire.Error) []byte {
	var env envelope
	env.Error.Message = e.Message
	switch e.Kind {
	case wire.KindUpstream:
		env.Error.Type = TypeUpstream
	case wire.KindServer:
		env.Error.Type = TypeServer
	default:
		env.Error.Type = TypeInvalidRequest
	}
	if e.Param != "" {
		p := e.Param
		env.Error.Param = &p
	}
	if e.Code != "" {
		c := e.Code
		env.Error.Code = &c
	}
	return wire.Marshal(env)
}

// ErrorMessage returns the message of an OpenAI error body, "" when raw is
// not one.
func ErrorMessage(raw []byte) string {
	var env envelope
	if json.Unmarshal(raw, &env) != nil {
		return ""
	}
	return env.Error.Message
}

// ToolChoice reads an OpenAI tool_choice value of either API: "none",
// "auto", "required", a named function ({"type":"function","function":
// {"name"}} in Chat, {"type":"function","name"} in Responses), a custom
// tool, or allowed_tools (nested under "allowed_tools" in Chat, flat in
// Responses) whose mode "required" requires a call.
func ToolChoice(raw []byte) wire.ToolChoice {
	var tc wire.ToolChoice
	if len(raw) == 0 {
		return tc
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		tc.None, tc.Required = mode == "none", mode == "required"
		return tc
	}
	type ref struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Custom struct {
			Name string `json:"name"`
		} `json:"custom"`
	}
	type allowed struct {
		Mode  string `json:"mode"`
		Tools []ref  `json:"tools"`
	}
	var c struct {
		ref
		allowed
		AllowedTools allowed `json:"allowed_tools"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return tc
	}
	// Every object form lists the tools the model may call: one forced
	// (a function, a custom tool, or a built-in one by its type) or an
	// allowed set. Built-in tools have no name and count as Unnamed.
	listed := slices.Concat(c.Tools, c.AllowedTools.Tools)
	if c.Type != "allowed_tools" {
		listed = append(listed, c.ref)
	}
	tc.Restricts = c.Type != ""
	seen := map[string]bool{}
	for _, r := range listed {
		named := false
		names := []string{r.Function.Name, r.Custom.Name, r.Name}
		if r.Type != "" && r.Type != "function" && r.Type != "custom" {
			// A hosted tool's name (an MCP server's tool) is not one of the
			// request's functions: the choice still lists a built-in tool.
			names = nil
		}
		for _, n := range names {
			if n == "" {
				continue
			}
			named = true
			if !seen[n] {
				seen[n] = true
				tc.Named = append(tc.Named, n)
			}
		}
		if !named && r.Type != "" {
			tc.Unnamed++
		}
	}
	tc.Required = c.Type == "allowed_tools" && (c.Mode == "required" || c.AllowedTools.Mode == "required")
	return tc
}

// RelaxChoice returns body with its tool_choice relaxed to let the model
// answer (see wire.ToolChoice.ServedOnly): an allowed_tools set keeps its
// tools with mode "auto" (nested in Chat, flat in Responses), and any other
// choice becomes "auto".
func RelaxChoice(body []byte) ([]byte, error) {
	return jsonspan.EditValue(body, "tool_choice", func(raw []byte) ([]byte, error) {
		auto := []byte(`"auto"`)
		cms, err := jsonspan.Members(raw)
		if err != nil {
			return auto, nil // a string: "required"
		}
		if typ, _ := jsonspan.StringField(raw, cms, "type"); typ != "allowed_tools" {
			return auto, nil
		}
		if _, nested := jsonspan.Value(cms, "allowed_tools"); nested {
			return jsonspan.SetIn(raw, "allowed_tools", "mode", auto)
		}
		return jsonspan.Set(raw, "mode", auto)
	})
}

// CheckContent rejects a message content (param names it) that neither API
// takes: a number, a boolean or an object, where a string or an array of
// parts belongs (null is left to the upstream: assistant messages carry it).
// Read as text it would rank the request on nothing and forward it to fail
// upstream with the rewrite's cost spent.
func CheckContent(param string, content []byte) error {
	content = bytes.TrimSpace(content)
	if len(content) == 0 {
		return nil
	}
	switch content[0] {
	case '"', '[', 'n':
		return nil
	}
	return wire.TypeError(param, "a string or an array of content parts", content)
}

// ContentText joins the text of a content value: a string, or an array of
// parts of which only text parts count ("text" in Chat, "input_text" and
// "output_text" in Responses); images, audio and files are not text to rank
// on.
func ContentText(content []byte) string {
	content = bytes.TrimSpace(content)
	if len(content) == 0 {
		return ""
	}
	switch content[0] {
	case '"':
		if s, err := jsonspan.Unquote(content); err == nil && !wire.HarnessContext(s) {
			return s
		}
	case '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if json.Unmarshal(content, &parts) != nil {
			// One malformed part must not hide the others.
			return partsOneByOne(content)
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Text != nil && isTextPart(p.Type) && !wire.HarnessContext(*p.Text) {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(*p.Text)
			}
		}
		return b.String()
	}
	return ""
}

func isTextPart(typ string) bool {
	return typ == "text" || typ == "input_text" || typ == "output_text"
}

func partsOneByOne(content []byte) string {
	var raws []json.RawMessage
	if json.Unmarshal(content, &raws) != nil {
		return ""
	}
	var texts []string
	for _, r := range raws {
		var p struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if json.Unmarshal(r, &p) == nil && p.Text != nil && isTextPart(p.Type) && !wire.HarnessContext(*p.Text) {
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
