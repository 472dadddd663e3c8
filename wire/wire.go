// Package wire holds what the client APIs have in common, so that the router
// never sees any API's JSON and the proxy drives one tool loop for all of
// them:
//
//   - Request, the API-neutral view of a client request that the router
//     ranks and plans from;
//   - Plan, what the router adds to a request, which each API package
//     (wire/chat, wire/responses, wire/messages) renders in its own shape;
//   - ToolCall, ToolResult and Answer, what the proxy's tool loop reads from
//     an upstream answer and feeds back;
//   - Usage, the token counts of the tool rounds: the last round's for the client, their sum for the log;
//   - Error, a client-facing error each API renders in its own envelope;
//   - the server-sent events reader all three APIs stream with.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// API names a client API, as used in metric labels and logs.
type API string

const (
	APIChat      API = "chat"      // OpenAI Chat Completions
	APIResponses API = "responses" // OpenAI Responses
	APIMessages  API = "messages"  // Anthropic Messages
)

// Turn is one message of the conversation as text: the parts that are text
// joined by newlines, images and other media dropped. System prompts and
// instructions are turns of role "system" (or "developer").
type Turn struct {
	Role string
	Text string
	// Tool names the tool whose call a "tool" turn answers, as the
	// transcript's call named it; "" when no call in it has the result's id.
	Tool string
}

// ClientTool is one entry of the client's tools, in order. Name is the
// function's (or custom tool's) name; "" for built-in tools (such as
// web_search), which are never gated and never shadowed.
type ClientTool struct {
	Name string
	// Params is the function's parameter schema as sent (a slice of the
	// request body; nil when it has none).
	Params []byte
	// Custom: a custom (freeform) tool of OpenAI's APIs, named by Name, which
	// the proxy never shadows with a tool of its own but never gates either.
	Custom bool
}

// ToolChoice is the client's tool_choice, in neutral terms.
type ToolChoice struct {
	// None: the model may call no tool (OpenAI "none", Anthropic {"type":"none"}).
	None bool
	// Required: the model must call some tool (OpenAI "required",
	// Anthropic "any"), or one of Named.
	Required bool
	// Named lists the tools the choice names (a forced function, or
	// allowed_tools); nil when it names none.
	Named []string
	// Restricts: the choice lists the tools the model may call (a forced
	// tool of any kind, OpenAI's allowed_tools, Anthropic's {"type":"tool"}),
	// so a tool it does not list is never called.
	Restricts bool
	// Unnamed counts the listed tools that have no name: built-in tools
	// forced or allowed by type ({"type":"web_search"}, an MCP server).
	Unnamed int
}

// ServedOnly reports whether the choice can be met by calling the proxy's
// tools (ts.Server) alone: it lists only those, or requires a call while
// none of the client's clientTools tools goes upstream. A follow-up that
// kept such a choice would have the model call them again every round and
// never answer, so each API's FollowUp relaxes it to "auto" once the proxy
// has answered (as the Agents SDK resets a forced tool_choice after a call).
func (tc ToolChoice) ServedOnly(ts ToolSet, clientTools int) bool {
	if len(ts.Server) == 0 {
		return false
	}
	if tc.Restricts {
		if tc.Unnamed > 0 || len(tc.Named) == 0 {
			return false
		}
		for _, n := range tc.Named {
			if !slices.ContainsFunc(ts.Server, func(s ToolSpec) bool { return s.Name == n }) {
				return false
			}
		}
		return true
	}
	return tc.Required && clientTools-len(ts.Withheld) <= 0
}

// Request is the API-neutral view of one client request, parsed once by its
// API package.
type Request struct {
	API    API
	Model  string
	Stream bool
	// User is the client's name for the end user or session, if the API has
	// one (OpenAI "user", Anthropic metadata.user_id).
	User string
	// Choices is how many answers were asked for (OpenAI n); the tool loop
	// only runs for one.
	Choices int
	Turns   []Turn
	Tools   []ClientTool
	// ToolChoice is the client's tool_choice.
	ToolChoice ToolChoice
	// NoTools: the request cannot take the proxy's tools (legacy
	// "functions", or tool_choice none).
	NoTools bool
	// Called lists the function names the transcript's assistant turns
	// called, without repeats.
	Called []string
	// Stateful: the request continues a conversation stored upstream
	// (Responses previous_response_id or conversation): Turns hold only
	// the new input.
	Stateful bool
}

// FirstUserText returns the text of the first user turn: stable for a
// conversation's whole life (the A/B hash key without a session header).
func (r *Request) FirstUserText() string {
	for _, t := range r.Turns {
		if t.Role == "user" {
			return t.Text
		}
	}
	return ""
}

// compactionPrompts open the user turn agent CLIs send to have the model
// summarise a conversation that filled their context window, with words
// the prompt also holds (a user quoting one opening alone is not one):
// Claude Code's (2.1 and later, then earlier versions', whole or of the
// recent part) and Codex CLI's.
var compactionPrompts = []struct{ opens, holds string }{
	{"CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.", "summary"},
	{"Your task is to create a detailed summary of the conversation so far", "tools"},
	{"Your task is to create a detailed summary of the RECENT portion of the conversation", "tools"},
	{"You are performing a CONTEXT CHECKPOINT COMPACTION.", "summary"},
}

// Compacting reports whether the request is an agent CLI's compaction: a
// user turn after the last assistant turn opens with its summary prompt.
// Such a request is sent because the context is full, asks for text only,
// and is about the whole conversation: skills ranked on its prompt would
// be unrelated ones.
func (r *Request) Compacting() bool {
	for i := len(r.Turns) - 1; i >= 0 && r.Turns[i].Role != "assistant"; i-- {
		if r.Turns[i].Role != "user" {
			continue // a tool result may quote anything (a file holding these words)
		}
		text := strings.TrimSpace(r.Turns[i].Text)
		for _, p := range compactionPrompts {
			if strings.HasPrefix(text, p.opens) && strings.Contains(text[len(p.opens):], p.holds) {
				return true
			}
		}
	}
	return false
}

// ToolSpec is a server-side tool in API-neutral form; each API renders it
// (Chat: {"type":"function","function":{...}}, Responses: flat function
// tool, Messages: input_schema).
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON Schema object

	// Function, when set, is FunctionJSON precomputed (see
	// ToolSpec.Rendered): the proxy's tools are the same on every request,
	// and load_skill's id enum makes it kilobytes to re-encode each time.
	Function json.RawMessage
}

// ToolSet is what a request offers the model: the client's tools except the
// withheld ones, then the proxy's.
type ToolSet struct {
	// Withheld holds the indexes (into Request.Tools) of the client tools
	// left out, ascending; nil when every client tool goes upstream.
	Withheld []int
	Server   []ToolSpec
}

// Keeps reports whether client tool i goes upstream.
func (t *ToolSet) Keeps(i int) bool {
	for _, w := range t.Withheld {
		if w == i {
			return false
		}
	}
	return true
}

// Envelope is one auto-loaded skill body (<skill_context>), with its JSON
// string form, which the router's library quotes once.
type Envelope struct {
	ID   string
	Text string
	JSON []byte
}

// Plan is what the router adds to one request. Renderers splice it into the
// client's bytes, leaving every byte they do not touch identical.
type Plan struct {
	// Catalog is the catalog section for the system prompt ("" for none),
	// and CatalogJSON its JSON string form.
	Catalog     string
	CatalogJSON []byte
	// Envelopes go after the conversation's last turn, in order, as turns
	// of EnvelopeRole (user, system or developer; an API without the role
	// uses user).
	Envelopes    []Envelope
	EnvelopeRole string
	Tools        ToolSet
	// Changed is false when the plan adds nothing and withholds nothing:
	// the request goes upstream as the client sent it.
	Changed bool
}

// ToolCall is one call of the model to a tool the proxy answers.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // the JSON arguments the model sent
}

// ToolResult is the answer to one server-side tool call.
type ToolResult struct {
	CallID  string
	Name    string
	Content string
	// Failed says the tool refused or failed (Content says why): Messages'
	// tool_result is_error.
	Failed bool
}

// Answer is what the tool loop needs from one upstream answer that calls the
// proxy's tools.
type Answer struct {
	// Calls are the proxy's calls, in the answer's order.
	Calls []ToolCall
	// Turn is what the API appends to the conversation before the results,
	// in its own shape (Chat: the assistant message; Responses: the output
	// items, comma-separated, to go into the input array; Messages: the
	// assistant message with its content blocks).
	Turn []byte
	// ID is the upstream's id of the answer (Responses: the response to
	// chain a stored conversation from).
	ID string
	// Shown: items of the answer reach the client although the round
	// loops (JSON: kept for the final answer; streamed: relayed). A
	// Responses client may send them back by id next turn, which the API
	// resolves against the stored response: it must stay (HiddenPath).
	Shown bool
	// Truncated: the answer stopped short: at the output-token limit (Chat
	// finish_reason "length"; Responses status "incomplete"; Messages
	// stop_reason "max_tokens" or "model_context_window_exceeded"), or
	// stopped by a content filter or a refusal (Chat "content_filter";
	// Responses "incomplete" with reason content_filter; Messages
	// "refusal"), or failed (Responses status "failed"). It is the client's
	// answer whatever calls it holds: the
	// last call's arguments are likely cut, and another round would stop
	// the same way. The proxy runs no round on it and drops its own calls
	// from it, as at the round limit, keeping the stop signal.
	Truncated bool
	// Late: the answer is the client's although it holds the proxy's calls,
	// because it also holds client calls that cannot wait for another
	// round (see ownership.Round.NoHold); the proxy's calls are dropped
	// from it, as at the round limit.
	Late bool
	// Container (Messages) is the id of the code execution container the
	// answer ran in; the follow-up names it so the next round runs there.
	Container string
	// Output is the output tokens the round generated, from its usage (0
	// when it reported none); the follow-up carries what is left of the
	// client's output-token cap (see Budget).
	Output int64
	// OutputIDs (Responses) are the ids of the round's output items, in
	// order: in a conversation the API adds them to it, and a turn refused
	// after this round takes them back (responses.Request.TakeBack).
	OutputIDs []string
	// BuiltinCalls (Responses) counts the round's built-in tool calls
	// (web_search_call, mcp_call, ...), which the client's max_tool_calls
	// bounds over the whole response.
	BuiltinCalls int64
}

// Marks recognise what the proxy wrote into a request in what the API
// stored of it (a Responses object read back by id, its input items):
// keeping no state per request, the proxy can go by nothing else. Package
// skills knows the catalog and the envelopes; the server, its tools.
type Marks struct {
	// Tool reports whether a tool name is one the proxy offers.
	Tool func(name string) bool
	// CatalogStart returns where a catalog the proxy appended starts in
	// text; -1 when text does not end with one.
	CatalogStart func(text string) int
	// Envelope reports whether text is an auto-loaded skill body.
	Envelope func(text string) bool
	// ToolResult reports whether text is an answer of the proxy's tools
	// told by its shape alone (an envelope among them): such an output is
	// the proxy's however far its call is.
	ToolResult func(text string) bool
}

// RoundEnd is how one streamed round ended.
type RoundEnd struct {
	// Loop holds the proxy's calls when it must answer them and ask again;
	// nil when the round was the client's answer.
	Loop *Answer
	// Dropped counts the proxy's calls left unanswered: the round limit was
	// reached (Exhausted), or the client's calls had been relayed first.
	Dropped   int
	Exhausted bool
	// ID is the upstream's id of the round's answer, where the stream
	// names one the client can continue from (Responses: the response id).
	ID string
	// Truncated: the round stopped short (see Answer.Truncated): it never loops, and its proxy calls are dropped.
	Truncated bool
	// Incomplete: the upstream's stream ended before its final event
	// (Chat: no finish_reason and no [DONE]; Responses: no
	// response.completed, .failed or .incomplete; Messages: no
	// message_stop): the answer is cut, whatever it held.
	Incomplete bool
}

// Reply is a whole answer of a model, for servers that speak the APIs
// (the demo model): its text and its tool calls.
type Reply struct {
	ID    string
	Model string
	Text  string
	Calls []ToolCall
}

// harnessTags wrap text that agent harnesses put into user turns as context
// for the model (Claude Code's <system-reminder>, Codex's
// <environment_context> and <user_instructions>): not what the user asked.
var harnessTags = []string{"system-reminder", "environment_context", "user_instructions"}

// harnessNotes are whole text parts Claude Code adds beside tool results:
// its note after the ToolSearch step that loads deferred (MCP) tools, and
// the mark of a tool call the user interrupted (the user's new ask follows
// in a part of its own). Read as the user's, the note started a new turn in
// the middle of a task.
var harnessNotes = []string{"Tool loaded.", "[Request interrupted by user]", "[Request interrupted by user for tool use]"}

// HarnessContext reports whether a text part is wholly one such wrapper or
// note; parsers leave it out of the turn's text, so ranking sees the user's
// ask rather than, say, Claude Code's git commit attribution reminder.
func HarnessContext(text string) bool {
	t := strings.TrimSpace(text)
	for _, tag := range harnessTags {
		if strings.HasPrefix(t, "<"+tag+">") && strings.HasSuffix(t, "</"+tag+">") {
			return true
		}
	}
	return slices.Contains(harnessNotes, t)
}

// InCallOrder pairs results with the answer's calls: the results in the
// order of the calls. A call without a result, a result without a call id
// or for a call the answer does not hold is an error: the upstream would
// reject the request.
func (a *Answer) InCallOrder(results []ToolResult) ([]ToolResult, error) {
	byID := make(map[string]ToolResult, len(results))
	for _, r := range results {
		if r.CallID == "" {
			return nil, errors.New("tool result without a call id")
		}
		byID[r.CallID] = r
	}
	out := make([]ToolResult, 0, len(results))
	for _, c := range a.Calls {
		r, ok := byID[c.ID]
		if !ok {
			return nil, fmt.Errorf("no result for tool call %s", c.ID)
		}
		delete(byID, c.ID)
		out = append(out, r)
	}
	for _, r := range results {
		if _, left := byID[r.CallID]; left {
			return nil, fmt.Errorf("no tool call with id %s in the answer", r.CallID)
		}
	}
	return out, nil
}

// CallID is the id of a call the upstream sent without one (some local
// servers omit it), so its result can refer to it: prefix (call, toolu)
// and the round and position make it unique in the conversation.
func CallID(id, prefix string, round, i int) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("%s_skillrouter_%d_%d", prefix, round, i)
}

// AppendEvent writes one server-sent event, with an event: line when typ
// is set (Responses and Messages name their events).
func AppendEvent(out []byte, typ string, data []byte) []byte {
	if typ != "" {
		out = append(out, "event: "...)
		out = append(out, typ...)
		out = append(out, '\n')
	}
	return AppendData(out, data)
}

// AppendData writes data as an event's data: lines, one per line of data,
// and the blank line that ends the event. An upstream may spread an event's
// JSON over several data: lines (the reader joins them with \n, WHATWG HTML
// §9.2.6); written back behind one data: prefix, the lines after the first
// would be fields of no kind, and the client would read half a JSON value.
func AppendData(out, data []byte) []byte {
	for {
		line, rest, more := bytes.Cut(data, []byte("\n"))
		out = append(out, "data: "...)
		out = append(out, line...)
		out = append(out, '\n')
		if !more {
			return append(out, '\n')
		}
		data = rest
	}
}

// Elements lists a tools array of this set: the client's definitions
// (client, as sent) not withheld, then the proxy's rendered by render;
// nil when it would be empty.
func (t *ToolSet) Elements(client [][]byte, render func(ToolSpec) []byte) [][]byte {
	var out [][]byte
	for i, c := range client {
		if t.Keeps(i) {
			out = append(out, c)
		}
	}
	for _, s := range t.Server {
		out = append(out, render(s))
	}
	return out
}

// Changed reports whether the set differs from the client's tools as sent.
func (t *ToolSet) Changed() bool { return len(t.Withheld) > 0 || len(t.Server) > 0 }

// ExhaustedComment is the SSE comment a stream gets the moment its last
// allowed round calls the proxy's tools again: the status line went out long
// ago, so it is said as a comment (ignored by SDKs, visible to curl), and
// in the trailer at the end.
const ExhaustedComment = ": skillrouter: tool rounds exhausted; the proxy's own tool calls in this answer are dropped\n\n"

// EmptyAnswerText is the text an answer gets when dropping the proxy's own
// calls left it with no content at all (the model kept loading skills up to
// the round limit): an assistant turn without content, kept in the
// client's history, makes the next request invalid (Anthropic refuses
// empty content, OpenAI an assistant message with neither content nor
// tool calls).
const EmptyAnswerText = "[skillrouter: the model was still loading skills when the tool-round limit was reached, and gave no answer. Ask again to continue.]"

// TruncatedAnswerText is EmptyAnswerText for an answer that stopped short
// while the model was calling the proxy's tools (see Answer.Truncated).
const TruncatedAnswerText = "[skillrouter: the model's answer stopped short (output-token limit, content filter or refusal) while it was still loading skills, and gave no answer. Raise the output-token limit or ask again to continue.]"

// NoAnswerText is the text for an answer left with no content once the
// proxy's calls are dropped: TruncatedAnswerText when the answer stopped
// short, else EmptyAnswerText.
func NoAnswerText(truncated bool) string {
	if truncated {
		return TruncatedAnswerText
	}
	return EmptyAnswerText
}

// Segment reports whether id can stand as one path segment of an upstream
// URL (a stored object's id from an answer, sent back in a GET or DELETE):
// not "." or "..", no slash or backslash.
func Segment(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, "/\\")
}
