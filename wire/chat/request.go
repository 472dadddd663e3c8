// Package chat is the OpenAI Chat Completions wire format
// (POST /v1/chat/completions): it parses a request once into the
// API-neutral wire.Request, renders a wire.Plan into the client's bytes,
// builds the follow-up requests of the proxy's tool loop, and reads and
// patches answers, JSON and streamed.
//
// Where the plan goes: the catalog is appended to the first system or
// developer message (a text part for array content) or becomes a new first
// system message; each auto-loaded envelope is a message of the plan's role
// after the last one (or, for an upstream that refuses that order, inside
// the last user message: see MergeEnvelopes); the proxy's tools follow the client's (withheld
// client tools left out) in "tools". Every other byte stays as sent.
package chat

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
	"github.com/skillrouter/skillrouter/wire/internal/openai"
)

// Request is a parsed chat.completions request: the neutral view and where
// its parts sit in the body.
type Request struct {
	body     []byte
	view     wire.Request
	members  []jsonspan.Member // top-level members of body
	messages jsonspan.Span     // the "messages" array
	msgs     []message

	tools       jsonspan.Span // the "tools" value; valid when hasTools
	hasTools    bool          // a "tools" member exists (its value may be null)
	clientTools [][]byte      // the client's tool definitions, in order

	includeUsage bool // stream_options.include_usage
	store        bool // store: each answer, hidden rounds' too, is kept upstream
	// askedUsage: the rewrite asked the upstream for usage that the client
	// did not ask for (see Render); its stream then hides it.
	askedUsage bool
	// merge: Render puts the envelopes inside the last user message (see
	// MergeEnvelopes); separate: it put them in messages of their own;
	// plan: what it rendered, for WithEnvelopesMerged.
	merge, separate bool
	plan            *wire.Plan

	// The client's output-token caps on the whole answer (see wire.Budget):
	// max_completion_tokens, and the legacy max_tokens, which servers
	// still read (vLLM, Ollama, older Azure deployments).
	maxCompletion, maxTokens wire.Budget
	// spent: a follow-up could not carry what was left of them, and the
	// answer ends at the output-token limit (see Final).
	spent bool
	// earlier is the text of the answers that looped (see final), and
	// earlierLogprobs their content logprobs; roundLogprobs are the last
	// answer read's.
	earlier         string
	earlierLogprobs [][]byte
	roundLogprobs   []gjson.Result
	// jsonFormat: response_format asks for JSON (json_schema or
	// json_object), which each round's text is on its own.
	jsonFormat bool
}

// message is one message of the request.
type message struct {
	raw   []byte        // the message's bytes in the body
	at    jsonspan.Span // where raw sits in body
	role  string
	text  string // text parts joined by newlines
	tool  string // a tool result's tool (see wire.Turn.Tool)
	calls bool   // an assistant message with tool_calls
}

// Parse validates a chat.completions body and locates its parts. Client
// errors are *wire.Error (400, with the parameter at fault): a body that is
// not a JSON object, missing or empty messages, a message that is not an
// object with a string role, tools that are not an array, or model, stream,
// stream_options, n or user of the wrong type.
func Parse(body []byte) (*Request, error) {
	ms, werr := jsonspan.Body(body, "a JSON chat completion request", "messages", "tools", "tool_choice", "functions", "parallel_tool_calls", "stream", "stream_options", "model", "n", "user", "max_tokens", "max_completion_tokens", "store", "prediction", "response_format")
	if werr != nil {
		return nil, werr
	}
	r := &Request{body: body, members: ms, view: wire.Request{API: wire.APIChat, Choices: 1}}
	v := &r.view
	if err := r.scalars(); err != nil {
		return nil, err
	}
	msgSpan, ok := jsonspan.Value(ms, "messages")
	if !ok || jsonspan.IsNull(body[msgSpan.Start:msgSpan.End]) {
		return nil, wire.BadRequest("missing_messages", "messages", "missing required parameter: 'messages'")
	}
	raw := body[msgSpan.Start:msgSpan.End]
	elems, err := jsonspan.Elements(raw)
	if err != nil {
		return nil, wire.TypeError("messages", "an array of message objects", raw)
	}
	if len(elems) == 0 {
		return nil, wire.BadRequest("empty_messages", "messages", "'messages' must contain at least one message")
	}
	r.messages = msgSpan
	r.msgs = make([]message, len(elems))
	v.Turns = make([]wire.Turn, len(elems))
	called := map[string]bool{}
	callNames := map[string]string{} // tool call id → the function it called
	for i, e := range elems {
		at := jsonspan.Span{Start: msgSpan.Start + e.Start, End: msgSpan.Start + e.End}
		m, err := parseMessage(body[at.Start:at.End], i, called, &v.Called, callNames)
		if err != nil {
			return nil, err
		}
		m.at = at
		r.msgs[i] = m
		v.Turns[i] = wire.Turn{Role: m.role, Text: m.text, Tool: m.tool}
	}
	// Requests that cannot take the proxy's tools:
	if _, ok := jsonspan.Value(ms, "functions"); ok {
		v.NoTools = true // adding tools would mix the legacy API with the current one
	}
	if v.Choices > 1 {
		v.NoTools = true // several answers are relayed as they are: nothing would answer a load_skill
	}
	if p, ok := jsonspan.Value(ms, "prediction"); ok && !jsonspan.IsNull(body[p.Start:p.End]) {
		v.NoTools = true // Predicted Outputs refuses tools
	}
	if tc, ok := jsonspan.Value(ms, "tool_choice"); ok {
		v.ToolChoice = openai.ToolChoice(body[tc.Start:tc.End])
	}
	switch gjson.GetBytes(jsonspan.Raw(body, ms, "response_format"), "type").Str {
	case "json_schema", "json_object":
		r.jsonFormat = true
	}
	if ts, ok := jsonspan.Value(ms, "tools"); ok {
		r.tools, r.hasTools = ts, true
		traw := body[ts.Start:ts.End]
		if !jsonspan.IsNull(traw) {
			tools, err := jsonspan.Objects(traw, "tools", "a tool object")
			if err != nil {
				return nil, err
			}
			r.clientTools = tools
			for _, t := range tools {
				v.Tools = append(v.Tools, clientTool(t))
			}
		}
	}
	return r, nil
}

// scalars checks and reads the top-level parameters the proxy uses.
func (r *Request) scalars() *wire.Error {
	v := &r.view
	get := func(key string) ([]byte, bool) {
		s, ok := jsonspan.Value(r.members, key)
		if !ok || jsonspan.IsNull(r.body[s.Start:s.End]) {
			return nil, false
		}
		return r.body[s.Start:s.End], true
	}
	for _, f := range []struct {
		key, want string
		v         any
	}{{"model", "a string", &v.Model}, {"stream", "a boolean", &v.Stream}, {"user", "a string", &v.User}, {"store", "a boolean", &r.store}} {
		if err := jsonspan.Decode(r.body, r.members, f.key, f.v, f.want); err != nil {
			return err
		}
	}
	if raw, ok := get("stream_options"); ok {
		var so map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &so) != nil {
			return wire.TypeError("stream_options", "an object", raw)
		}
		if iu, ok := so["include_usage"]; ok && !jsonspan.IsNull(iu) {
			if json.Unmarshal(iu, &r.includeUsage) != nil {
				return wire.TypeError("stream_options.include_usage", "a boolean", iu)
			}
		}
	}
	maxCompletion, maxTokens := jsonspan.Result(r.body, r.members, "max_completion_tokens"), jsonspan.Result(r.body, r.members, "max_tokens")
	if werr := wire.CheckCap("max_completion_tokens", maxCompletion, math.MinInt64); werr != nil {
		return werr
	}
	if werr := wire.CheckCap("max_tokens", maxTokens, math.MinInt64); werr != nil {
		return werr
	}
	// A cap the API takes must be at least 1.
	r.maxCompletion, r.maxTokens = wire.NewBudget(maxCompletion, 1), wire.NewBudget(maxTokens, 1)
	if raw, ok := get("n"); ok {
		if json.Unmarshal(raw, &v.Choices) != nil {
			if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
				return wire.BadRequest("invalid_type", "n", "'n' must be an integer, got %s", wire.Clip(string(raw)))
			}
			return wire.TypeError("n", "an integer", raw)
		}
	}
	return nil
}

// roles are the message roles of the Chat Completions API ("function" is
// the legacy function-calling result).
var roles = []string{"system", "developer", "user", "assistant", "tool", "function"}

// parseMessage reads role, content and tool calls of message i.
func parseMessage(raw []byte, i int, called map[string]bool, calledList *[]string, callNames map[string]string) (message, error) {
	m := message{raw: raw}
	p := "messages[" + strconv.Itoa(i) + "]"
	if raw[0] != '{' {
		return m, wire.BadRequest("invalid_type", p, "'%s' must be a message object, got %s", p, wire.KindOf(raw))
	}
	ms, err := jsonspan.Members(raw)
	if err != nil {
		return m, wire.BadRequest("invalid_type", p, "'%s' must be a message object", p)
	}
	rs, ok := jsonspan.Value(ms, "role")
	if !ok {
		return m, wire.BadRequest("missing_role", p+".role", "missing required parameter: '%s.role'", p)
	}
	if m.role, err = jsonspan.Unquote(raw[rs.Start:rs.End]); err != nil {
		return m, wire.TypeError(p+".role", "a string", raw[rs.Start:rs.End])
	}
	if !slices.Contains(roles, m.role) {
		return m, wire.BadRequest("invalid_role", p+".role", "'%s.role' must be one of %s, got %q", p, wire.OneOf(roles), wire.Clip(m.role))
	}
	if content := jsonspan.Raw(raw, ms, "content"); content != nil {
		if err := openai.CheckContent(p+".content", content); err != nil {
			return m, err
		}
		m.text = openai.ContentText(content)
	}
	if m.role == "assistant" {
		if ts, ok := jsonspan.Value(ms, "tool_calls"); ok {
			calls := raw[ts.Start:ts.End]
			els, _ := jsonspan.Elements(calls)
			m.calls = len(els) > 0
			for _, e := range els {
				n, _ := jsonspan.StringAt(calls[e.Start:e.End], "function", "name")
				if n != "" && !called[n] {
					called[n] = true
					*calledList = append(*calledList, n)
				}
				if id, _ := jsonspan.StringAt(calls[e.Start:e.End], "id"); id != "" {
					callNames[id] = n
				}
			}
		}
	}
	switch m.role {
	case "tool":
		id, _ := jsonspan.StringField(raw, ms, "tool_call_id")
		m.tool = callNames[id]
	case "function": // the legacy function result names its function
		m.tool, _ = jsonspan.StringField(raw, ms, "name")
	}
	return m, nil
}

// clientTool reads a Chat tool definition's function.name and
// function.parameters (a custom tool's custom.name); the zero ClientTool for
// other kinds of tools.
func clientTool(def []byte) wire.ClientTool {
	ms, err := jsonspan.Members(def)
	if err != nil {
		return wire.ClientTool{}
	}
	if typ, _ := jsonspan.StringField(def, ms, "type"); typ == "custom" {
		name, _ := jsonspan.StringAt(def, "custom", "name")
		return wire.ClientTool{Name: name, Custom: true}
	}
	if typ, ok := jsonspan.StringField(def, ms, "type"); !ok || typ != "" && typ != "function" {
		return wire.ClientTool{}
	}
	fn := jsonspan.Raw(def, ms, "function")
	fms, err := jsonspan.Members(fn)
	if err != nil {
		return wire.ClientTool{}
	}
	name, _ := jsonspan.StringField(fn, fms, "name")
	return wire.ClientTool{Name: name, Params: jsonspan.Raw(fn, fms, "parameters")}
}

// View returns the neutral view of the request.
func (r *Request) View() *wire.Request { return &r.view }

// Body returns the request as the client sent it.
func (r *Request) Body() []byte { return r.body }

// IncludeUsage reports stream_options.include_usage.
func (r *Request) IncludeUsage() bool { return r.includeUsage }

// AskedUsage reports whether the rewrite asked the upstream for usage the
// client did not ask for (see Render).
func (r *Request) AskedUsage() bool { return r.askedUsage }

// Message is one message of a parsed request, for inspection.
type Message struct {
	Raw  []byte // its bytes in the body
	Role string
	Text string // text parts joined by newlines
}

// Messages lists the request's messages in order.
func (r *Request) Messages() []Message {
	out := make([]Message, len(r.msgs))
	for i, m := range r.msgs {
		out[i] = Message{Raw: m.raw, Role: m.role, Text: m.text}
	}
	return out
}

// ClientTools lists the client's tool definitions as sent, in order.
func (r *Request) ClientTools() [][]byte { return r.clientTools }
