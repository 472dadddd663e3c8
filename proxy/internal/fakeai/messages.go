package fakeai

// Anthropic Messages (POST /v1/messages, any query string such as
// ?beta=true; POST /v1/messages/count_tokens), from its public reference:
//
// Request: headers anthropic-version and x-api-key (or Authorization);
// model, max_tokens, messages (role user/assistant, content a string or
// blocks: text, image, document, tool_use, tool_result, thinking,
// redacted_thinking, …), system (a string or text blocks, cache_control
// allowed), tools ({"name","description","input_schema"} or typed server
// tools), tool_choice ({"type":"auto"|"any"|"tool"|"none"}), thinking,
// stream.
//
// Answer: a "message" object: content blocks in order thinking /
// redacted_thinking (Turn.Thinking), text (Turn.Content), tool_use (one per
// Turn.ToolCalls entry); stop_reason end_turn or tool_use; usage
// input_tokens, output_tokens, cache_creation_input_tokens,
// cache_read_input_tokens. Streamed: message_start (the message with empty
// content), per block content_block_start, content_block_delta
// (text_delta, input_json_delta starting with an empty partial_json,
// thinking_delta then one signature_delta), content_block_stop; a ping after
// the first block starts; message_delta (stop_reason, usage); message_stop.
// count_tokens answers {"input_tokens":N}.
//
// Validation (400 {"type":"error","error":{"type":"invalid_request_error",
// "message"},"request_id"}; 401 authentication_error without a key): the
// anthropic-version header; model, max_tokens, messages present and typed;
// system a string or text blocks; non-empty content except a final
// assistant message; every tool_result answers a tool_use of the previous
// message and every tool_use (except in a final assistant message) is
// answered in the next; thinking blocks signed, and a fake-issued signature
// still fits its text; in the latest assistant message, a run of
// consecutive thinking blocks comes from one response (the fake's
// signatures name their response: a run spliced from two is refused as
// the API refuses it, "cannot be modified"); with thinking "enabled", the
// assistant message of the last tool round starts with a thinking block; tools named, with an
// input_schema, names unique; tool_choice well formed.
//
// Claude Code also sends messages with role "system" between the turns;
// they are accepted and skipped when pairing tool_use with tool_result.

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

func isMessagesPath(path string) bool {
	return path == pathMessages || path == pathCountTokens
}

// anthropicErrorType maps a status to the API's error type.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func anthropicError(w http.ResponseWriter, r *http.Request, status int, typ, message string) {
	writeOrdered(w, status, http.Header{"Request-Id": {requestID(r)}}, ordered{
		"type", "error", "error", ordered{"type", typ, "message", message}, "request_id", requestID(r)})
}

func requestID(r *http.Request) string { return fmt.Sprintf("req_fake_%d", answerOf(r).n) }

// msgErr is a validation failure: a 400 invalid_request_error unless status says otherwise.
type msgErr struct {
	status  int
	message string
}

func badRequest(format string, args ...any) *msgErr {
	return &msgErr{status: 400, message: fmt.Sprintf(format, args...)}
}

// messagesReq is the part of a Messages request the fake reads.
type messagesReq struct {
	model, maxTokens, messages, system gjson.Result
	tools, toolChoice, stream, think   gjson.Result
}

func parseMessagesReq(r *http.Request, body []byte, count bool) (messagesReq, *msgErr) {
	var q messagesReq
	if r.Header.Get("X-Api-Key") == "" && r.Header.Get("Authorization") == "" {
		return q, &msgErr{401, "x-api-key header is required"}
	}
	if r.Header.Get("Anthropic-Version") == "" {
		return q, badRequest("anthropic-version: header is required")
	}
	if !gjson.ValidBytes(body) {
		return q, badRequest("The request body is not valid JSON.")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return q, badRequest("The request body must be a JSON object.")
	}
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			q.model = v
		case "max_tokens":
			q.maxTokens = v
		case "messages":
			q.messages = v
		case "system":
			q.system = v
		case "tools":
			q.tools = v
		case "tool_choice":
			q.toolChoice = v
		case "stream":
			q.stream = v
		case "thinking":
			q.think = v
		}
		return true
	})
	return q, q.validate(count)
}

func (q messagesReq) validate(count bool) *msgErr {
	if !q.model.Exists() {
		return badRequest("model: Field required")
	}
	if q.model.Type != gjson.String {
		return badRequest("model: Input should be a valid string")
	}
	if !count {
		if !q.maxTokens.Exists() {
			return badRequest("max_tokens: Field required")
		}
		if q.maxTokens.Type != gjson.Number || q.maxTokens.Num != float64(int64(q.maxTokens.Num)) {
			return badRequest("max_tokens: Input should be a valid integer")
		}
		if q.maxTokens.Num < 1 {
			return badRequest("max_tokens: Input should be greater than or equal to 1")
		}
		if !isType(q.stream, gjson.True, gjson.False) {
			return badRequest("stream: Input should be a valid boolean")
		}
	}
	if !q.messages.Exists() {
		return badRequest("messages: Field required")
	}
	if !q.messages.IsArray() {
		return badRequest("messages: Input should be a valid list")
	}
	if err := validateSystem(q.system); err != nil {
		return err
	}
	if err := validateAnthropicTools(q.tools); err != nil {
		return err
	}
	if err := validateAnthropicToolChoice(q.toolChoice); err != nil {
		return err
	}
	return q.validateMessages()
}

func validateSystem(sys gjson.Result) *msgErr {
	if !sys.Exists() || sys.Type == gjson.String {
		return nil
	}
	if !sys.IsArray() {
		return badRequest("system: Input should be a valid string or a list of text blocks")
	}
	var err *msgErr
	i := 0
	sys.ForEach(func(_, b gjson.Result) bool {
		if typ := b.Get("type").Str; typ != "text" {
			err = badRequest("system.%d.type: Input should be 'text'", i)
		} else if b.Get("text").Type != gjson.String {
			err = badRequest("system.%d.text: Field required", i)
		}
		i++
		return err == nil
	})
	return err
}

func validateAnthropicTools(tools gjson.Result) *msgErr {
	if !tools.Exists() {
		return nil
	}
	if !tools.IsArray() {
		return badRequest("tools: Input should be a valid list")
	}
	var names []string
	var err *msgErr
	i := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		defer func() { i++ }()
		typ := t.Get("type").Str
		name := t.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = badRequest("tools.%d.name: Field required", i)
			return false
		}
		if slices.Contains(names, name.Str) {
			err = badRequest("tools: Tool names must be unique.")
			return false
		}
		names = append(names, name.Str)
		if typ != "" && typ != "custom" {
			return true // server tools (web_search_…, bash_…) carry no schema
		}
		if s := t.Get("input_schema"); !s.IsObject() {
			err = badRequest("tools.%d.custom.input_schema: Field required", i)
			return false
		}
		return true
	})
	return err
}

func validateAnthropicToolChoice(tc gjson.Result) *msgErr {
	if !tc.Exists() {
		return nil
	}
	switch tc.Get("type").Str {
	case "auto", "any", "none":
		return nil
	case "tool":
		if tc.Get("name").Type != gjson.String {
			return badRequest("tool_choice.tool.name: Field required")
		}
		return nil
	}
	return badRequest("tool_choice: Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", tc.Get("type").Str)
}

// turnInfo is what pairing needs of one message.
type turnInfo struct {
	index      int // in the messages array
	role       string
	firstType  string   // type of the first block
	toolUses   []string // ids of its tool_use blocks
	toolResult []struct {
		id    string
		block int
	}
}

func (q messagesReq) validateMessages() *msgErr {
	msgs := q.messages.Array()
	var turns []turnInfo // user and assistant messages; "system" ones are skipped
	for i, m := range msgs {
		role := m.Get("role")
		if !role.Exists() {
			return badRequest("messages.%d.role: Field required", i)
		}
		if !slices.Contains([]string{"user", "assistant", "system"}, role.Str) {
			return badRequest("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		content := m.Get("content")
		last := i == len(msgs)-1
		if !content.Exists() {
			return badRequest("messages.%d.content: Field required", i)
		}
		empty := (content.Type == gjson.String && content.Str == "") || (content.IsArray() && len(content.Array()) == 0)
		if empty && !(last && role.Str == "assistant") {
			return badRequest("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		ti := turnInfo{index: i, role: role.Str, firstType: "text"}
		if content.IsArray() {
			for j, b := range content.Array() {
				typ := b.Get("type").Str
				if j == 0 {
					ti.firstType = typ
				}
				if err := validateBlock(i, j, typ, b); err != nil {
					return err
				}
				switch typ {
				case "tool_use":
					ti.toolUses = append(ti.toolUses, b.Get("id").Str)
				case "tool_result":
					ti.toolResult = append(ti.toolResult, struct {
						id    string
						block int
					}{b.Get("tool_use_id").Str, j})
				}
			}
		} else if content.Type != gjson.String {
			return badRequest("messages.%d.content: Input should be a valid string or a list of content blocks", i)
		}
		if role.Str != "system" {
			turns = append(turns, ti)
		}
	}
	for k, t := range turns {
		if len(t.toolResult) > 0 {
			var prev []string
			if k > 0 && turns[k-1].role == "assistant" {
				prev = turns[k-1].toolUses
			}
			for _, tr := range t.toolResult {
				if !slices.Contains(prev, tr.id) {
					return badRequest("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", t.index, tr.block, tr.id)
				}
			}
		}
		if len(t.toolUses) > 0 && t.role == "assistant" && t.index != len(msgs)-1 {
			var answered []string
			if k+1 < len(turns) && turns[k+1].role == "user" {
				for _, tr := range turns[k+1].toolResult {
					answered = append(answered, tr.id)
				}
			}
			var missing []string
			for _, id := range t.toolUses {
				if !slices.Contains(answered, id) {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return badRequest("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", t.index, strings.Join(missing, ", "))
			}
		}
	}
	if err := validateThinkingRuns(msgs, turns); err != nil {
		return err
	}
	// With thinking enabled the model must see its own thinking of the tool
	// round it is continuing: a tool loop that drops it is refused.
	if q.think.Get("type").Str == "enabled" && len(turns) >= 2 {
		last, prev := turns[len(turns)-1], turns[len(turns)-2]
		if last.role == "user" && len(last.toolResult) > 0 && prev.role == "assistant" && len(prev.toolUses) > 0 &&
			prev.firstType != "thinking" && prev.firstType != "redacted_thinking" {
			return badRequest("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceding the lastmost set of `tool_use` and `tool_result` blocks).", prev.index, prev.firstType)
		}
	}
	return nil
}

// thinkingSignature is the signature the fake issues for a thinking block
// of its response n: the text's signature, naming the response. The real
// API's signatures are opaque, but it too knows which response a block
// came from.
func thinkingSignature(text string, n int) string {
	return signature(text) + "." + strconv.Itoa(n)
}

// thinkingOrigin checks a thinking block's signature against its text and
// returns the response the fake issued it in ("" for a signature the fake
// did not issue, which is taken as it is); ok is false when a fake-issued
// signature does not fit the text.
func thinkingOrigin(sig, text string) (origin string, ok bool) {
	base, origin, _ := strings.Cut(sig, ".")
	return origin, signatureValid(base, text)
}

// validateThinkingRuns refuses a latest assistant message holding a run of
// consecutive thinking/redacted_thinking blocks that no one response
// produced: "the entire sequence of consecutive thinking blocks must match
// the outputs generated by the model during the original request"
// (Anthropic, extended thinking, preserving thinking blocks).
func validateThinkingRuns(msgs []gjson.Result, turns []turnInfo) *msgErr {
	last := -1
	for _, t := range turns {
		if t.role == "assistant" {
			last = t.index
		}
	}
	if last < 0 {
		return nil
	}
	run := "" // the response the current run's fake-signed blocks came from
	for j, b := range msgs[last].Get("content").Array() {
		switch b.Get("type").Str {
		case "thinking":
			origin, _ := thinkingOrigin(b.Get("signature").Str, b.Get("thinking").Str)
			if origin != "" && run != "" && origin != run {
				return badRequest("messages.%d.content.%d: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.", last, j)
			}
			if origin != "" {
				run = origin
			}
		case "redacted_thinking":
		default:
			run = ""
		}
	}
	return nil
}

func validateBlock(i, j int, typ string, b gjson.Result) *msgErr {
	need := func(field string, types ...gjson.Type) *msgErr {
		v := b.Get(field)
		if !v.Exists() || (len(types) > 0 && !slices.Contains(types, v.Type)) {
			return badRequest("messages.%d.content.%d.%s.%s: Field required", i, j, typ, field)
		}
		return nil
	}
	switch typ {
	case "":
		return badRequest("messages.%d.content.%d.type: Field required", i, j)
	case "text":
		return need("text", gjson.String)
	case "image", "document":
		return need("source")
	case "tool_use":
		if err := need("id", gjson.String); err != nil {
			return err
		}
		if err := need("name", gjson.String); err != nil {
			return err
		}
		if !b.Get("input").IsObject() {
			return badRequest("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
		}
	case "tool_result":
		return need("tool_use_id", gjson.String)
	case "thinking":
		if err := need("thinking", gjson.String); err != nil {
			return err
		}
		if err := need("signature", gjson.String); err != nil {
			return err
		}
		if _, ok := thinkingOrigin(b.Get("signature").Str, b.Get("thinking").Str); !ok {
			return badRequest("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
		}
	case "redacted_thinking":
		return need("data", gjson.String)
	}
	return nil
}

// replyMessages answers a Messages request with turn.
func replyMessages(turn Turn, w http.ResponseWriter, r *http.Request, rec Request) {
	q, err := parseMessagesReq(r, rec.Body, false)
	if err != nil {
		anthropicError(w, r, err.status, anthropicErrorType(err.status), err.message)
		return
	}
	streamed := q.stream.Type == gjson.True && !turn.IgnoreStream
	if turn.Fail != nil && !streamed {
		status := turn.Fail.Status
		if status == 0 {
			status = 500
		}
		typ := turn.Fail.Type
		if typ == "" {
			typ = anthropicErrorType(status)
		}
		anthropicError(w, r, status, typ, turn.Fail.Message)
		return
	}
	b := newMessageBuilder(turn, q, rec.Body, answerOf(r).n)
	header := http.Header{"Request-Id": {requestID(r)}}
	if !streamed {
		writeOrdered(w, 200, header, b.message(b.blocks(), b.t.FinishReason, b.usage(b.u.CompletionTokens)))
		return
	}
	writeEvents(w, r, header, turn, b.events())
}

// countTokens answers /v1/messages/count_tokens with an estimate from the
// body's size (deterministic: the same body counts the same).
func countTokens(w http.ResponseWriter, r *http.Request, rec Request) {
	if _, err := parseMessagesReq(r, rec.Body, true); err != nil {
		anthropicError(w, r, err.status, anthropicErrorType(err.status), err.message)
		return
	}
	writeOrdered(w, 200, http.Header{"Request-Id": {requestID(r)}}, ordered{"input_tokens", len(rec.Body)/4 + 1})
}

type messageBuilder struct {
	t  Turn
	id string
	n  int
	u  Usage
}

func newMessageBuilder(turn Turn, q messagesReq, body []byte, n int) *messageBuilder {
	t := turn
	t.ToolCalls = slices.Clone(turn.ToolCalls)
	if t.Model == "" {
		t.Model = q.model.Str
	}
	for i := range t.ToolCalls {
		if t.ToolCalls[i].ID == "" {
			t.ToolCalls[i].ID = fmt.Sprintf("toolu_fake_%d_%d", n, i)
		}
	}
	u := usageFor(t, body)
	if capUsage(&t, &u, q.maxTokens) {
		t.FinishReason = ""
	}
	if t.FinishReason == "" {
		t.FinishReason = "end_turn"
		switch {
		case t.Truncated:
			t.FinishReason = "max_tokens"
		case len(t.ToolCalls) > 0:
			t.FinishReason = "tool_use"
		}
	}
	if t.Thinking != nil && t.Thinking.Signature == "" {
		th := *t.Thinking
		th.Signature = thinkingSignature(th.Text, n)
		t.Thinking = &th
	}
	return &messageBuilder{t: t, n: n, id: fmt.Sprintf("msg_fake_%d", n), u: u}
}

// toolInput is a tool_use block's input: {} for none, and for arguments
// that are not a JSON object (a call cut at the output-token limit).
func toolInput(args string) rawJSON {
	if !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
		return "{}"
	}
	return rawJSON(args)
}

// blocks returns the complete content blocks.
func (b *messageBuilder) blocks() []any {
	t := b.t
	var out []any
	if th := t.Thinking; th != nil {
		if th.Text != "" || th.RedactedData == "" {
			out = append(out, ordered{"type", "thinking", "thinking", th.Text, "signature", th.Signature})
		}
		if th.RedactedData != "" {
			out = append(out, ordered{"type", "redacted_thinking", "data", th.RedactedData})
		}
	}
	if t.Content != "" || len(t.ToolCalls) == 0 {
		out = append(out, ordered{"type", "text", "text", t.Content})
	}
	for _, c := range t.ToolCalls {
		out = append(out, ordered{"type", "tool_use", "id", c.ID, "name", c.Name, "input", toolInput(c.Arguments)})
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func (b *messageBuilder) usage(output int) ordered {
	return ordered{"input_tokens", b.u.PromptTokens, "cache_creation_input_tokens", b.u.CacheCreationTokens,
		"cache_read_input_tokens", b.u.CachedTokens, "output_tokens", output, "service_tier", "standard"}
}

func (b *messageBuilder) message(content []any, stop any, usage ordered) ordered {
	return ordered{"id", b.id, "type", "message", "role", "assistant", "model", b.t.Model, "content", content,
		"stop_reason", stop, "stop_sequence", nil, "usage", usage}
}

// events renders the answer as the stream of a real server.
func (b *messageBuilder) events() []event {
	t := b.t
	var evs []event
	add := func(name string, kv ...any) { evs = append(evs, event{name, append(ordered{"type", name}, kv...)}) }
	add("message_start", "message", b.message([]any{}, nil, b.usage(1)))
	calls := 0 // tool_use blocks so far
	for i, blk := range b.blocks() {
		o := blk.(ordered)
		// A ping follows the first block's start, as on the real server.
		start := func(cb ordered) {
			add("content_block_start", "index", i, "content_block", cb)
			if i == 0 {
				add("ping")
			}
		}
		switch o[1] {
		case "thinking":
			start(ordered{"type", "thinking", "thinking", "", "signature", ""})
			for _, piece := range split(t.Thinking.Text, t.ContentChunks) {
				add("content_block_delta", "index", i, "delta", ordered{"type", "thinking_delta", "thinking", piece})
			}
			add("content_block_delta", "index", i, "delta", ordered{"type", "signature_delta", "signature", t.Thinking.Signature})
		case "redacted_thinking":
			start(o)
		case "text":
			start(ordered{"type", "text", "text", ""})
			for _, piece := range split(t.Content, t.ContentChunks) {
				add("content_block_delta", "index", i, "delta", ordered{"type", "text_delta", "text", piece})
			}
		case "tool_use":
			start(ordered{"type", "tool_use", "id", o[3], "name", o[5], "input", ordered{}})
			add("content_block_delta", "index", i, "delta", ordered{"type", "input_json_delta", "partial_json", ""})
			// As the model wrote them: cut short, they stream as they were cut.
			args := t.ToolCalls[calls].Arguments
			calls++
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			n := t.ArgChunks
			if n <= 0 {
				n = 3
			}
			for _, frag := range splitN(args, n) {
				add("content_block_delta", "index", i, "delta", ordered{"type", "input_json_delta", "partial_json", frag})
			}
		}
		add("content_block_stop", "index", i)
	}
	add("message_delta", "delta", ordered{"stop_reason", t.FinishReason, "stop_sequence", nil},
		"usage", ordered{"input_tokens", b.u.PromptTokens, "cache_creation_input_tokens", b.u.CacheCreationTokens,
			"cache_read_input_tokens", b.u.CachedTokens, "output_tokens", b.u.CompletionTokens})
	add("message_stop")
	if t.Fail != nil && t.Fail.After < len(evs) {
		evs = evs[:t.Fail.After]
		typ := t.Fail.Type
		if typ == "" {
			typ = "api_error"
		}
		add("error", "error", ordered{"type", typ, "message", t.Fail.Message})
	}
	return evs
}

// System returns the text of an Anthropic request's system prompt: the
// string, or its text blocks joined with "\n".
func (r Request) System() string {
	sys := gjson.GetBytes(r.Body, "system")
	if sys.Type == gjson.String {
		return sys.Str
	}
	var parts []string
	sys.ForEach(func(_, b gjson.Result) bool {
		parts = append(parts, b.Get("text").Str)
		return true
	})
	return strings.Join(parts, "\n")
}

// SystemBlocks returns an Anthropic request's system blocks; a string
// system is returned as the one text block it stands for.
func (r Request) SystemBlocks() []map[string]any {
	sys := gjson.GetBytes(r.Body, "system")
	if sys.Type == gjson.String {
		return []map[string]any{{"type": "text", "text": sys.Str}}
	}
	var out []map[string]any
	sys.ForEach(func(_, b gjson.Result) bool {
		m, _ := b.Value().(map[string]any)
		out = append(out, m)
		return true
	})
	return out
}
