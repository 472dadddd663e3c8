// Package messages is the Anthropic Messages wire format (POST
// /v1/messages, and /v1/messages/count_tokens), as Claude Code and the
// Anthropic SDKs speak it: it parses a request once into the API-neutral
// wire.Request, renders a wire.Plan into the client's bytes, builds the
// follow-up requests of the proxy's tool loop, and reads and patches
// answers, JSON and streamed.
//
// Where the plan goes:
//   - the catalog is added to "system": appended ("\n\n" and the catalog) to
//     a string, or as a last text block after the client's blocks, which
//     stay byte-identical, cache_control included. The catalog carries no
//     cache_control of its own (the API allows four breakpoints and clients
//     such as Claude Code use them); it is identical on every turn, so the
//     client's later breakpoints (on its messages) cache it with the rest;
//   - the auto-loaded envelopes are text blocks of one user message after
//     the last message (before a trailing assistant prefill); automatic
//     caching's top-level cache_control moves onto the client's last block
//     before them, so the history, not the envelopes, is the cached prefix;
//   - the proxy's tools ({"name","description","input_schema"}) follow the
//     client's; server tools (web_search_..., code_execution_..., ...) are
//     kept as they are.
//
// Every other byte stays as sent: thinking and redacted_thinking blocks
// with their signatures, tool_use and tool_result blocks, images and
// documents.
package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// Request is a parsed messages.create (or count_tokens) request.
type Request struct {
	body    []byte
	view    wire.Request
	members []jsonspan.Member

	system    jsonspan.Span // the "system" value; valid when hasSystem
	hasSystem bool
	systemStr bool // a string (not blocks or null)
	systemTxt string

	messages jsonspan.Span
	msgs     []jsonspan.Span // each message, in body offsets
	roles    []string

	tools       jsonspan.Span
	hasTools    bool
	clientTools [][]byte

	// The blocks of looping rounds the client gets in the final message
	// (non-streaming), and this round's until it is known to loop; the
	// thinking still waiting for a block shown (ownership.Round), and this
	// round's.
	visible, pending        []json.RawMessage
	waiting, pendingWaiting []json.RawMessage

	// budget is what is left of max_tokens (see maxTokens); spent: too
	// little was left for a follow-up, and the message ends at max_tokens
	// (see Final).
	budget *wire.Budget
	spent  bool
	// interleaved: the client's anthropic-beta turns on interleaved
	// thinking, where thinking.budget_tokens may exceed max_tokens (see
	// SetBetas).
	interleaved bool
	// uses counts the server tool calls of the rounds that looped, by
	// tool name (see withUses).
	uses map[string]int64
	// jsonFormat: structured outputs asked for JSON (output_config.format,
	// or the beta's output_format, of type json_schema), which each
	// round's text is on its own (see Final).
	jsonFormat bool
}

// block is what the proxy reads of a content block.
type block struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Name      string          `json:"name"`
	ID        string          `json:"id"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// Parse validates a messages body and locates its parts. Client errors are
// *wire.Error (400, with the parameter at fault).
func Parse(body []byte) (*Request, error) {
	ms, werr := jsonspan.Body(body, "a JSON Messages API request", "messages", "system", "tools", "tool_choice", "stream", "model", "max_tokens", "metadata", "thinking", "container", "output_config", "output_format")
	if werr != nil {
		return nil, werr
	}
	r := &Request{body: body, members: ms, view: wire.Request{API: wire.APIMessages, Choices: 1}}
	v := &r.view
	get := func(key string) ([]byte, jsonspan.Span, bool) {
		s, ok := jsonspan.Value(ms, key)
		if !ok || jsonspan.IsNull(body[s.Start:s.End]) {
			return nil, s, false
		}
		return body[s.Start:s.End], s, true
	}
	for _, f := range []struct {
		key, want string
		v         any
	}{{"model", "a string", &v.Model}, {"stream", "a boolean", &v.Stream}} {
		if err := jsonspan.Decode(body, ms, f.key, f.v, f.want); err != nil {
			return nil, err
		}
	}
	if werr := wire.CheckCap("max_tokens", jsonspan.Result(body, ms, "max_tokens"), 1); werr != nil {
		return nil, werr
	}
	if raw, _, ok := get("metadata"); ok {
		var md struct {
			UserID json.RawMessage `json:"user_id"`
		}
		if raw[0] != '{' || json.Unmarshal(raw, &md) != nil {
			return nil, wire.TypeError("metadata", "an object", raw)
		}
		if len(md.UserID) > 0 && !jsonspan.IsNull(md.UserID) && json.Unmarshal(md.UserID, &v.User) != nil {
			return nil, wire.TypeError("metadata.user_id", "a string", md.UserID)
		}
	}
	if s, ok := jsonspan.Value(ms, "system"); ok {
		r.system, r.hasSystem = s, true
		if raw := body[s.Start:s.End]; !jsonspan.IsNull(raw) {
			text, isStr, err := systemText(raw)
			if err != nil {
				return nil, err
			}
			r.systemStr, r.systemTxt = isStr, text
			if text != "" {
				v.Turns = append(v.Turns, wire.Turn{Role: "system", Text: text})
			}
		}
	}
	raw, msgSpan, ok := get("messages")
	if !ok {
		return nil, wire.BadRequest("missing_messages", "messages", "missing required parameter: 'messages'")
	}
	els, err := jsonspan.Elements(raw)
	if err != nil {
		return nil, wire.TypeError("messages", "an array of message objects", raw)
	}
	if len(els) == 0 {
		return nil, wire.BadRequest("empty_messages", "messages", "'messages' must contain at least one message")
	}
	r.messages = msgSpan
	called := map[string]bool{}
	callNames := map[string]string{} // tool_use id → the tool it called
	for i, e := range els {
		m := raw[e.Start:e.End]
		role, err := r.parseMessage(m, i, called, callNames)
		if err != nil {
			return nil, err
		}
		r.msgs = append(r.msgs, jsonspan.Span{Start: msgSpan.Start + e.Start, End: msgSpan.Start + e.End})
		r.roles = append(r.roles, role)
	}
	if raw, _, ok := get("tool_choice"); ok {
		v.ToolChoice = toolChoice(raw)
	}
	r.jsonFormat = gjson.GetBytes(jsonspan.Raw(body, ms, "output_config"), "format.type").Str == "json_schema" ||
		gjson.GetBytes(jsonspan.Raw(body, ms, "output_format"), "type").Str == "json_schema"
	if s, ok := jsonspan.Value(ms, "tools"); ok {
		r.tools, r.hasTools = s, true
		if traw := body[s.Start:s.End]; !jsonspan.IsNull(traw) {
			tools, err := jsonspan.Objects(traw, "tools", "a tool object")
			if err != nil {
				return nil, err
			}
			r.clientTools = tools
			for _, t := range tools {
				v.Tools = append(v.Tools, customTool(t))
			}
		}
	}
	return r, nil
}

// systemText reads "system": a string or an array of text blocks.
func systemText(raw []byte) (string, bool, error) {
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false, wire.TypeError("system", "a string or an array of text blocks", raw)
		}
		return s, true, nil
	}
	var blocks []block
	if raw[0] != '[' || json.Unmarshal(raw, &blocks) != nil {
		return "", false, blocksError("system", "a string or an array of text blocks", "a text block object", raw)
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != nil {
			texts = append(texts, *b.Text)
		}
	}
	return strings.Join(texts, "\n"), false, nil
}

// blocksError says what keeps raw from being read as param, which must be
// want: when it is an array, the first element that is not an object
// (each must be el) or the first field of one that is not a string, so
// that the error names what to fix rather than calling an array no array.
func blocksError(param, want, el string, raw []byte) *wire.Error {
	var els []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &els) != nil {
		return wire.TypeError(param, want, raw)
	}
	for i, e := range els {
		p := fmt.Sprintf("%s[%d]", param, i)
		if e[0] != '{' {
			return wire.TypeError(p, el, e)
		}
		var b block
		var te *json.UnmarshalTypeError
		if err := json.Unmarshal(e, &b); errors.As(err, &te) && te.Field != "" {
			return wire.TypeError(p+"."+te.Field, "a string", []byte(gjson.GetBytes(e, te.Field).Raw))
		}
	}
	return wire.TypeError(param, want, raw)
}

// roles are the message roles accepted: user and assistant, and "system",
// which Claude Code sends as its last message (environment and skill
// listing).
var roles = []string{"user", "assistant", "system"}

// parseMessage reads message i: its text as a turn of its role, each
// tool_result as a "tool" turn, and the names its tool_use blocks call.
func (r *Request) parseMessage(m []byte, i int, called map[string]bool, callNames map[string]string) (string, error) {
	v := &r.view
	p := fmt.Sprintf("messages[%d]", i)
	if m[0] != '{' {
		return "", wire.BadRequest("invalid_type", p, "'%s' must be a message object, got %s", p, wire.KindOf(m))
	}
	// Keys are read exactly, the last repeat winning, as the API reads
	// them (encoding/json would take "Role" for role).
	ms, err := jsonspan.Members(m)
	if err != nil {
		return "", wire.BadRequest("invalid_type", p, "'%s' must be a message object", p)
	}
	rawRole := jsonspan.Raw(m, ms, "role")
	if rawRole == nil {
		return "", wire.BadRequest("missing_role", p+".role", "missing required parameter: '%s.role'", p)
	}
	var role string
	if json.Unmarshal(rawRole, &role) != nil {
		return "", wire.TypeError(p+".role", "a string", rawRole)
	}
	if role == "" {
		return "", wire.BadRequest("invalid_role", p+".role", "'%s.role' must not be empty", p)
	}
	if !slices.Contains(roles, role) {
		return "", wire.BadRequest("invalid_role", p+".role", "'%s.role' must be one of %s, got %q", p, wire.OneOf(roles), wire.Clip(role))
	}
	content := jsonspan.Raw(m, ms, "content")
	if len(content) == 0 || jsonspan.IsNull(content) {
		return "", wire.BadRequest("missing_content", p+".content", "missing required parameter: '%s.content'", p)
	}
	if content[0] == '"' {
		var s string
		_ = json.Unmarshal(content, &s)
		if wire.HarnessContext(s) {
			s = ""
		}
		v.Turns = append(v.Turns, wire.Turn{Role: role, Text: s})
		return role, nil
	}
	var blocks []block
	if content[0] != '[' || json.Unmarshal(content, &blocks) != nil {
		return "", blocksError(p+".content", "a string or an array of content blocks", "a content block object", content)
	}
	var texts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if b.Text != nil && !wire.HarnessContext(*b.Text) {
				texts = append(texts, *b.Text)
			}
		case "tool_use", "server_tool_use":
			if b.Name != "" && !called[b.Name] {
				called[b.Name] = true
				v.Called = append(v.Called, b.Name)
			}
			if b.ID != "" {
				callNames[b.ID] = b.Name
			}
		case "mcp_tool_use": // the MCP connector's call of a server's tool
			if b.ID != "" {
				callNames[b.ID] = b.Name
			}
		case "tool_result", "mcp_tool_result":
			v.Turns = append(v.Turns, wire.Turn{Role: "tool", Text: resultText(b.Content), Tool: callNames[b.ToolUseID]})
		}
	}
	if len(texts) > 0 || role == "assistant" {
		v.Turns = append(v.Turns, wire.Turn{Role: role, Text: strings.Join(texts, "\n")})
	}
	return role, nil
}

// resultText is the text of a tool_result's content: a string or text blocks.
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []block
	_ = json.Unmarshal(raw, &blocks)
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != nil {
			texts = append(texts, *b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// toolChoice reads {"type":"auto"|"any"|"tool"|"none","name"}.
func toolChoice(raw []byte) wire.ToolChoice {
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	var out wire.ToolChoice
	if json.Unmarshal(raw, &tc) != nil {
		return out
	}
	switch tc.Type {
	case "none":
		out.None = true
	case "any":
		out.Required = true
	case "tool":
		out.Required, out.Restricts = true, true
		if tc.Name != "" {
			out.Named = []string{tc.Name}
		}
	}
	return out
}

// customTool reads the name and input_schema of a client-defined tool
// ("custom"); server tools give the zero ClientTool (never gated).
func customTool(def []byte) wire.ClientTool {
	ms, err := jsonspan.Members(def)
	if err != nil {
		return wire.ClientTool{}
	}
	if typ, ok := jsonspan.StringField(def, ms, "type"); !ok || typ != "" && typ != "custom" {
		return wire.ClientTool{}
	}
	name, _ := jsonspan.StringField(def, ms, "name")
	return wire.ClientTool{Name: name, Params: jsonspan.Raw(def, ms, "input_schema")}
}

// View returns the neutral view of the request.
func (r *Request) View() *wire.Request { return &r.view }

// Body returns the request as the client sent it.
func (r *Request) Body() []byte { return r.body }
