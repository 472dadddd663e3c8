// Package responses is the OpenAI Responses wire format (POST
// /v1/responses), as Codex CLI and the OpenAI Agents SDK speak it: it parses
// a request once into the API-neutral wire.Request, renders a wire.Plan
// into the client's bytes, builds the follow-up requests of the proxy's
// tool loop, and reads and patches answers, JSON and streamed.
//
// Where the plan goes:
//   - the catalog is appended to "instructions" ("\n\n" and the catalog),
//     or becomes "instructions" when the client sends none. Instructions
//     come first in the prompt and are not carried over by
//     previous_response_id, so they are resent, identical, on every turn:
//     the cached prefix stays stable (docs/prompt-caching.md);
//   - each auto-loaded envelope is a message item of the plan's role
//     (user, system or developer) with one input_text part, after the last
//     input item; an input given as a string becomes a one-message array
//     first;
//   - the proxy's tools are flat function tools ({"type":"function",
//     "name",...,"strict":false}) after the client's; built-in tools
//     (web_search, file_search, mcp, custom, ...) are kept as they are.
//
// Every other byte stays as sent; items of types this package does not
// know are kept.
package responses

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
	"github.com/skillrouter/skillrouter/wire/internal/openai"
)

// Request is a parsed responses.create request.
type Request struct {
	body    []byte
	view    wire.Request
	members []jsonspan.Member

	input       jsonspan.Span // the "input" value; valid when hasInput or inputNull
	hasInput    bool
	inputNull   bool // "input": null
	inputString bool // input is a string, not an array of items

	instructions    jsonspan.Span // the "instructions" value; valid when hasInstructions
	hasInstructions bool
	instructionsStr bool // a string (not null)
	instructionsTxt string

	tools       jsonspan.Span
	hasTools    bool
	clientTools [][]byte

	unstored bool // "store": false (see resent)

	// The state stored upstream that the request continues: the previous
	// response or the conversation (see state.go).
	previousID   string
	conversation string

	// echoes are the parameters a response object echoes that the proxy
	// changed, with the client's values (see echo.go).
	echoes []echoed

	// State of the tool loop across rounds (non-streaming): the items of
	// looping rounds the client gets in the final response, and this
	// round's until it is known to loop.
	visible []json.RawMessage
	pending []json.RawMessage
	// added is what the looping rounds added to the conversation, oldest
	// first (see takeback.go).
	added []addedItem
	// failed: the last round read ended failed upstream (see Failed).
	failed bool

	// budget is what is left of the client's limits on the response (see
	// budget.go).
	budget *budgets
	// jsonFormat: text.format asks for JSON (json_schema or json_object),
	// which each round's message is on its own (see Final).
	jsonFormat bool
}

// Parse validates a responses.create body and locates its parts. Client
// errors are *wire.Error (400, with the parameter at fault).
func Parse(body []byte) (*Request, error) {
	ms, werr := jsonspan.Body(body, "a JSON Responses API request", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "stream", "model", "store", "previous_response_id", "conversation", "max_output_tokens", "max_tool_calls", "truncation", "prompt", "user", "text")
	if werr != nil {
		return nil, werr
	}
	r := &Request{body: body, members: ms, view: wire.Request{API: wire.APIResponses, Choices: 1}}
	v := &r.view
	get := func(key string) ([]byte, jsonspan.Span, bool) {
		s, ok := jsonspan.Value(ms, key)
		if !ok {
			return nil, s, false
		}
		return body[s.Start:s.End], s, true
	}
	var prev string
	var background bool
	store := true
	for _, f := range []struct {
		key, want string
		v         any
	}{{"model", "a string", &v.Model}, {"stream", "a boolean", &v.Stream}, {"user", "a string", &v.User},
		{"previous_response_id", "a string", &prev}, {"background", "a boolean", &background}, {"store", "a boolean", &store}} {
		if err := jsonspan.Decode(body, ms, f.key, f.v, f.want); err != nil {
			return nil, err
		}
	}
	if werr := wire.CheckCap("max_output_tokens", jsonspan.Result(body, ms, "max_output_tokens"), 1); werr != nil {
		return nil, werr
	}
	conv, err := conversationID(body, ms)
	if err != nil {
		return nil, err
	}
	r.previousID, r.conversation = prev, conv
	v.Stateful = prev != "" || conv != ""
	r.unstored = !store
	// A background response is read later with GET /v1/responses/{id}
	// (polled, or resumed as a stream from a sequence_number after a
	// dropped connection) and cancelled by its id, passed through: the tool
	// loop never sees that answer, so it cannot take the proxy's tools (a
	// call to them would reach the client), streamed or not.
	v.NoTools = background
	if raw, s, ok := get("instructions"); ok {
		r.instructions, r.hasInstructions = s, true
		if !jsonspan.IsNull(raw) {
			if json.Unmarshal(raw, &r.instructionsTxt) != nil {
				return nil, wire.TypeError("instructions", "a string", raw)
			}
			r.instructionsStr = true
			if r.instructionsTxt != "" {
				v.Turns = append(v.Turns, wire.Turn{Role: "system", Text: r.instructionsTxt})
			}
		}
	}
	if raw, s, ok := get("input"); ok {
		r.input = s
		if jsonspan.IsNull(raw) {
			r.inputNull = true
		} else {
			r.hasInput = true
			if err := r.parseInput(raw); err != nil {
				return nil, err
			}
		}
	}
	if raw, _, ok := get("tool_choice"); ok {
		v.ToolChoice = openai.ToolChoice(raw)
	}
	if raw, _, ok := get("text"); ok {
		switch gjson.GetBytes(raw, "format.type").Str {
		case "json_schema", "json_object":
			r.jsonFormat = true
		}
	}
	if raw, s, ok := get("tools"); ok {
		r.tools, r.hasTools = s, true
		if !jsonspan.IsNull(raw) {
			tools, err := jsonspan.Objects(raw, "tools", "a tool object")
			if err != nil {
				return nil, err
			}
			r.clientTools = tools
			for _, t := range tools {
				v.Tools = append(v.Tools, functionTool(t))
			}
		}
	}
	return r, nil
}

// roles are the roles of a Responses message item.
var roles = []string{"user", "assistant", "system", "developer"}

// parseInput reads the input: a string (one user message) or an array of
// items.
func (r *Request) parseInput(raw []byte) error {
	v := &r.view
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return wire.TypeError("input", "a string or an array of input items", raw)
		}
		r.inputString = true
		v.Turns = append(v.Turns, wire.Turn{Role: "user", Text: s})
		return nil
	}
	els, err := jsonspan.Elements(raw)
	if err != nil {
		return wire.TypeError("input", "a string or an array of input items", raw)
	}
	called := map[string]bool{}
	callNames := map[string]string{} // call_id → the tool it called
	for i, e := range els {
		item := raw[e.Start:e.End]
		p := fmt.Sprintf("input[%d]", i)
		if item[0] != '{' {
			return wire.TypeError(p, "an input item object", item)
		}
		// Keys are read exactly, the last repeat winning, as the API reads
		// them (encoding/json would take "Role" for role).
		ms, err := jsonspan.Members(item)
		if err != nil {
			return wire.TypeError(p, "an input item object", item)
		}
		typ, okType := jsonspan.StringField(item, ms, "type")
		name, okName := jsonspan.StringField(item, ms, "name")
		if !okType || !okName {
			return wire.BadRequest("invalid_type", p, "'%s' has a field of the wrong type", p)
		}
		switch typ {
		case "", "message":
			var role string
			rawRole := jsonspan.Raw(item, ms, "role")
			if rawRole == nil && typ == "" && jsonspan.Raw(item, ms, "id") != nil {
				// An item reference may leave its type out ({"id":
				// "msg_..."}): nothing to rank on, as with the type.
				continue
			}
			if rawRole == nil {
				return wire.BadRequest("missing_role", p+".role", "missing required parameter: '%s.role'", p)
			}
			if json.Unmarshal(rawRole, &role) != nil {
				return wire.TypeError(p+".role", "a string", rawRole)
			}
			if !slices.Contains(roles, role) {
				return wire.BadRequest("invalid_role", p+".role", "'%s.role' must be one of %s, got %q", p, wire.OneOf(roles), wire.Clip(role))
			}
			content := jsonspan.Raw(item, ms, "content")
			if err := openai.CheckContent(p+".content", content); err != nil {
				return err
			}
			v.Turns = append(v.Turns, wire.Turn{Role: role, Text: openai.ContentText(content)})
		case "function_call":
			// A call into a namespace tool is not one of the top-level
			// functions the gate keeps for having been called.
			if ns, _ := jsonspan.StringField(item, ms, "namespace"); name != "" && ns == "" && !called[name] {
				called[name] = true
				v.Called = append(v.Called, name)
			}
			if id, _ := jsonspan.StringField(item, ms, "call_id"); id != "" {
				callNames[id] = name
			}
			v.Turns = append(v.Turns, wire.Turn{Role: "assistant"})
		case "custom_tool_call":
			if id, _ := jsonspan.StringField(item, ms, "call_id"); id != "" {
				callNames[id] = name
			}
		case "mcp_call":
			// A hosted MCP server's call holds its output too.
			v.Turns = append(v.Turns, wire.Turn{Role: "tool", Text: outputText(jsonspan.Raw(item, ms, "output")), Tool: name})
		case "function_call_output", "custom_tool_call_output":
			id, _ := jsonspan.StringField(item, ms, "call_id")
			v.Turns = append(v.Turns, wire.Turn{Role: "tool", Text: outputText(jsonspan.Raw(item, ms, "output")), Tool: callNames[id]})
		}
		// reasoning, item_reference, built-in tool calls...: nothing to rank on.
	}
	return nil
}

// outputText is the text of a function_call_output's output: a string, or
// input_text parts.
func outputText(raw json.RawMessage) string { return openai.ContentText(raw) }

// functionTool reads a function tool's name and parameters, and a custom
// tool's name (never gated); other tools (built-in, never gated) give the
// zero ClientTool.
func functionTool(def []byte) wire.ClientTool {
	ms, err := jsonspan.Members(def)
	if err != nil {
		return wire.ClientTool{}
	}
	typ, _ := jsonspan.StringField(def, ms, "type")
	if typ == "custom" {
		name, _ := jsonspan.StringField(def, ms, "name")
		return wire.ClientTool{Name: name, Custom: true}
	}
	if typ != "function" {
		return wire.ClientTool{}
	}
	name, _ := jsonspan.StringField(def, ms, "name")
	return wire.ClientTool{Name: name, Params: jsonspan.Raw(def, ms, "parameters")}
}

// View returns the neutral view of the request.
func (r *Request) View() *wire.Request { return &r.view }

// Body returns the request as the client sent it.
func (r *Request) Body() []byte { return r.body }
