package fakeai

// The OpenAI Responses API (POST /v1/responses), from its public reference:
//
// Request: model; input, a string or an array of items — message items
// (role user/system/developer with input_text/input_image/input_file parts,
// assistant with output_text/refusal parts, or a plain string content; the
// "type":"message" may be left out), function_call (call_id, name,
// arguments), function_call_output (call_id, output), reasoning (summary,
// encrypted_content), and others taken as they are; instructions; flat
// function tools {"type":"function","name",…} beside built-in ones;
// tool_choice; previous_response_id and store (default true: the response
// is kept and can be continued); stream.
//
// Answer: a "response" object whose output holds, in order, a reasoning
// item (Turn.Thinking), a message item with one output_text part
// (Turn.Content) and one function_call item per Turn.ToolCalls entry; usage
// input_tokens/output_tokens/total_tokens with their details. Streamed:
// response.created, response.in_progress, then per item
// response.output_item.added, its part and delta events
// (response.content_part.added, response.output_text.delta…,
// response.output_text.done, response.content_part.done;
// response.function_call_arguments.delta…, .done;
// response.reasoning_summary_part.added, response.reasoning_summary_text.delta…,
// .done, response.reasoning_summary_part.done), response.output_item.done,
// and response.completed with the whole response. Every event carries a
// sequence_number counting from 0; item events carry output_index. An
// answer cut at the output-token limit (Turn.Truncated) has status
// "incomplete" and incomplete_details {"reason":"max_output_tokens"}, its
// last item status "incomplete", and ends its stream with
// response.incomplete.
//
// Validation (400 {"error":{"message","type","param","code"}}): the body is
// a JSON object; model is a string; input is present (unless
// previous_response_id, prompt or conversation stands in) and well formed;
// function tools are flat (name at the top); tool_choice names a tool that
// exists; previous_response_id names a stored response; every
// function_call_output answers a function_call of this input or of the
// stored chain, and every function_call (also the previous response's) is
// answered; a reasoning item without encrypted_content is one the fake
// stored; a fake-issued encrypted_content comes back with its summary.

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// storedResponse is what a later previous_response_id (or GET
// /v1/responses/{id}) needs to know. A conversation is read into one too:
// its calls, and those still without an output.
type storedResponse struct {
	calls    []string // call ids of every call (function or custom) in the chain up to this response
	outCalls []string // call ids of this response's own calls (a conversation's: those unanswered)
	object   []byte   // the response object, for GET
	input    []string // its input items, with ids, oldest first (GET …/input_items)
}

// responsesReq is the part of a Responses request the fake reads.
type responsesReq struct {
	root                               gjson.Result
	model, stream, store, input, instr gjson.Result
	tools, toolChoice, prev, include   gjson.Result
	parallel, maxOut, temp, topP       gjson.Result
	reasoning, text, metadata, trunc   gjson.Result
	prompt, conversation               gjson.Result
}

func parseResponsesReq(body []byte) (responsesReq, *apiErr) {
	var q responsesReq
	if !gjson.ValidBytes(body) {
		return q, oaiErr("We could not parse the JSON body of your request: it is not valid JSON.", "", "")
	}
	q.root = gjson.ParseBytes(body)
	if !q.root.IsObject() {
		return q, oaiErr("Invalid body: expected a JSON object.", "", "invalid_type")
	}
	q.root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			q.model = v
		case "stream":
			q.stream = v
		case "store":
			q.store = v
		case "input":
			q.input = v
		case "instructions":
			q.instr = v
		case "tools":
			q.tools = v
		case "tool_choice":
			q.toolChoice = v
		case "previous_response_id":
			q.prev = v
		case "include":
			q.include = v
		case "parallel_tool_calls":
			q.parallel = v
		case "max_output_tokens":
			q.maxOut = v
		case "temperature":
			q.temp = v
		case "top_p":
			q.topP = v
		case "reasoning":
			q.reasoning = v
		case "text":
			q.text = v
		case "metadata":
			q.metadata = v
		case "truncation":
			q.trunc = v
		case "prompt":
			q.prompt = v
		case "conversation":
			q.conversation = v
		}
		return true
	})
	return q, nil
}

// apiErr is a 400 (or other status) in OpenAI's envelope.
type apiErr struct {
	status               int
	message, param, code string
}

func oaiErr(message, param, code string) *apiErr {
	return &apiErr{status: 400, message: message, param: param, code: code}
}

func (e *apiErr) write(w http.ResponseWriter) {
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	typ := "invalid_request_error"
	if e.status >= 500 {
		typ = "server_error"
	}
	writeOrdered(w, e.status, nil, ordered{"error", ordered{
		"message", e.message, "type", typ, "param", nullable(e.param), "code", nullable(e.code)}})
}

func typeName(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Null:
		return "null"
	}
	if v.IsArray() {
		return "an array"
	}
	return "an object"
}

func invalidType(param, want string, v gjson.Result) *apiErr {
	return oaiErr(fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", param, want, typeName(v)), param, "invalid_type")
}

func missing(param string) *apiErr {
	return oaiErr(fmt.Sprintf("Missing required parameter: '%s'.", param), param, "missing_required_parameter")
}

// validate checks q as the real server would; prev is the stored response
// of previous_response_id, if any.
func (q responsesReq) validate(prev *storedResponse) *apiErr {
	if !q.model.Exists() {
		return missing("model")
	}
	if q.model.Type != gjson.String {
		return invalidType("model", "a string", q.model)
	}
	for _, b := range []struct {
		name string
		v    gjson.Result
	}{{"stream", q.stream}, {"store", q.store}, {"parallel_tool_calls", q.parallel}} {
		if !isType(b.v, gjson.True, gjson.False) {
			return invalidType(b.name, "a boolean", b.v)
		}
	}
	if q.instr.Exists() && q.instr.Type != gjson.Null && q.instr.Type != gjson.String && !q.instr.IsArray() {
		return invalidType("instructions", "a string", q.instr)
	}
	if q.prev.Exists() && q.prev.Type != gjson.Null && q.prev.Type != gjson.String {
		return invalidType("previous_response_id", "a string", q.prev)
	}
	if !q.input.Exists() || q.input.Type == gjson.Null {
		if !q.prev.Exists() && !q.prompt.Exists() && !q.conversation.Exists() {
			return missing("input")
		}
	} else if q.input.Type != gjson.String && !q.input.IsArray() {
		return invalidType("input", "a string or an array of input items", q.input)
	}
	tools, err := validateResponsesTools(q.tools)
	if err != nil {
		return err
	}
	if err := validateResponsesToolChoice(q.toolChoice, tools); err != nil {
		return err
	}
	return q.validateInput(prev)
}

// validateResponsesTools checks tools and returns the function tools' names.
func validateResponsesTools(tools gjson.Result) ([]string, *apiErr) {
	if !tools.Exists() || tools.Type == gjson.Null {
		return nil, nil
	}
	if !tools.IsArray() {
		return nil, invalidType("tools", "an array", tools)
	}
	var names []string
	var err *apiErr
	i := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		p := fmt.Sprintf("tools[%d]", i)
		i++
		if !t.IsObject() {
			err = invalidType(p, "an object", t)
			return false
		}
		typ := t.Get("type")
		if !typ.Exists() {
			err = missing(p + ".type")
			return false
		}
		if typ.Str != "function" {
			return true // built-in and custom tools are the model's business
		}
		// The chat format nests the function: a Responses server reads the
		// name at the top and finds none.
		name := t.Get("name")
		if !name.Exists() {
			err = missing(p + ".name")
			return false
		}
		if name.Type != gjson.String || name.Str == "" {
			err = invalidType(p+".name", "a non-empty string", name)
			return false
		}
		if ps := t.Get("parameters"); ps.Exists() && ps.Type != gjson.Null && !ps.IsObject() {
			err = invalidType(p+".parameters", "an object", ps)
			return false
		}
		if slices.Contains(names, name.Str) {
			err = oaiErr(fmt.Sprintf("Duplicate tool name: '%s'.", name.Str), p+".name", "")
			return false
		}
		names = append(names, name.Str)
		return true
	})
	return names, err
}

func validateResponsesToolChoice(tc gjson.Result, tools []string) *apiErr {
	if !tc.Exists() || tc.Type == gjson.Null {
		return nil
	}
	if tc.Type == gjson.String {
		if !slices.Contains([]string{"none", "auto", "required"}, tc.Str) {
			return oaiErr(fmt.Sprintf("Invalid value: '%s'. Supported values are: 'none', 'auto', and 'required'.", tc.Str), "tool_choice", "invalid_value")
		}
		return nil
	}
	if !tc.IsObject() {
		return invalidType("tool_choice", "a string or an object", tc)
	}
	if tc.Get("type").Str == "function" {
		name := tc.Get("name").Str
		if !slices.Contains(tools, name) {
			return oaiErr(fmt.Sprintf("Tool choice 'function' not found in 'tools' parameter: no function named '%s'.", name), "tool_choice", "")
		}
	}
	return nil
}

var (
	inputParts     = []string{"input_text", "input_image", "input_file", "input_audio"}
	assistantParts = []string{"output_text", "refusal"}
)

// validateInput checks the items and the pairing of function calls with
// their outputs.
func (q responsesReq) validateInput(prev *storedResponse) *apiErr {
	if !q.input.IsArray() {
		if prev != nil && len(prev.outCalls) > 0 {
			return oaiErr(fmt.Sprintf("No tool output found for function call %s.", prev.outCalls[0]), "input", "")
		}
		return nil
	}
	var known, pending []string
	if prev != nil {
		known = slices.Clone(prev.calls)
		pending = slices.Clone(prev.outCalls)
	}
	storeOff := q.store.Type == gjson.False
	var err *apiErr
	i := -1
	q.input.ForEach(func(_, it gjson.Result) bool {
		i++
		p := fmt.Sprintf("input[%d]", i)
		if !it.IsObject() {
			err = invalidType(p, "an object", it)
			return false
		}
		typ := it.Get("type")
		switch {
		case typ.Exists():
		case it.Get("role").Exists():
			typ = gjson.Result{Type: gjson.String, Str: "message"}
		case it.Get("id").Exists(): // an item reference's type is optional
			typ = gjson.Result{Type: gjson.String, Str: "item_reference"}
		}
		switch typ.Str {
		case "":
			err = missing(p + ".type")
		case "message":
			err = validateMessageItem(p, it)
		case "function_call", "custom_tool_call":
			args := "arguments"
			if typ.Str == "custom_tool_call" {
				args = "input"
			}
			for _, f := range []string{"call_id", "name", args} {
				if v := it.Get(f); v.Type != gjson.String {
					if !v.Exists() {
						err = missing(p + "." + f)
					} else {
						err = invalidType(p+"."+f, "a string", v)
					}
					return false
				}
			}
			id := it.Get("call_id").Str
			known = append(known, id)
			pending = append(pending, id)
		case "function_call_output", "custom_tool_call_output":
			id := it.Get("call_id")
			if id.Type != gjson.String {
				err = missing(p + ".call_id")
				return false
			}
			if out := it.Get("output"); !out.Exists() {
				err = missing(p + ".output")
				return false
			} else if out.Type != gjson.String && !out.IsArray() {
				err = invalidType(p+".output", "a string or an array", out)
				return false
			}
			if !slices.Contains(known, id.Str) {
				err = oaiErr(fmt.Sprintf("No tool call found for function call output with call_id %s.", id.Str), "input", "")
				return false
			}
			pending = slices.DeleteFunc(pending, func(c string) bool { return c == id.Str })
		case "reasoning":
			err = validateReasoningItem(p, it, storeOff)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return oaiErr(fmt.Sprintf("No tool output found for function call %s.", pending[0]), "input", "")
	}
	return nil
}

func validateMessageItem(p string, it gjson.Result) *apiErr {
	role := it.Get("role")
	if !role.Exists() {
		return missing(p + ".role")
	}
	if !slices.Contains([]string{"user", "assistant", "system", "developer"}, role.Str) {
		return oaiErr(fmt.Sprintf("Invalid value: '%s'. Supported values are: 'user', 'assistant', 'system', and 'developer'.", role.Str), p+".role", "invalid_value")
	}
	content := it.Get("content")
	if !content.Exists() {
		return missing(p + ".content")
	}
	if content.Type == gjson.String {
		return nil
	}
	if !content.IsArray() {
		return invalidType(p+".content", "a string or an array", content)
	}
	allowed := inputParts
	if role.Str == "assistant" {
		allowed = assistantParts
	}
	var err *apiErr
	j := 0
	content.ForEach(func(_, part gjson.Result) bool {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		j++
		typ := part.Get("type").Str
		if !slices.Contains(allowed, typ) {
			err = oaiErr(fmt.Sprintf("Invalid value: '%s'. Supported values are: '%s'.", typ, strings.Join(allowed, "', '")), pp+".type", "invalid_value")
			return false
		}
		if typ == "input_text" || typ == "output_text" {
			if t := part.Get("text"); t.Type != gjson.String {
				err = missing(pp + ".text")
				return false
			}
		}
		return true
	})
	return err
}

func validateReasoningItem(p string, it gjson.Result, storeOff bool) *apiErr {
	summary := it.Get("summary")
	if !summary.IsArray() {
		return missing(p + ".summary")
	}
	enc := it.Get("encrypted_content")
	if enc.Type == gjson.String && enc.Str != "" {
		var text strings.Builder
		summary.ForEach(func(_, s gjson.Result) bool {
			text.WriteString(s.Get("text").Str)
			return true
		})
		if !signatureValid(enc.Str, text.String()) {
			return oaiErr("The encrypted content for item "+it.Get("id").Str+" could not be verified.", p+".encrypted_content", "invalid_encrypted_content")
		}
		return nil
	}
	if storeOff {
		return oaiErr(fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", it.Get("id").Str), "input", "")
	}
	return nil
}

// replyResponses answers a Responses request with turn.
func replyResponses(turn Turn, w http.ResponseWriter, r *http.Request, rec Request) {
	a := answerOf(r)
	q, perr := parseResponsesReq(rec.Body)
	if perr != nil {
		perr.write(w)
		return
	}
	prev, conv, verr := a.continued(q)
	if verr == nil {
		verr = q.validate(prev)
	}
	if verr != nil {
		verr.write(w)
		return
	}
	streamed := q.stream.Type == gjson.True && !turn.IgnoreStream
	if turn.Fail != nil && !streamed {
		status := turn.Fail.Status
		if status == 0 {
			status = 500
		}
		(&apiErr{status: status, message: turn.Fail.Message, code: turn.Fail.Type}).write(w)
		return
	}
	b := newResponseBuilder(turn, q, rec.Body, a.n)
	if a.f != nil && q.store.Type != gjson.False {
		a.f.storeResponse(b.id, b.stored(prev, q))
	}
	var evs []event
	if streamed {
		evs = b.events()
	}
	// Added "after this response completes": a response that failed
	// mid-stream never does (one cut on the way still did upstream).
	if conv != nil && !failedStream(evs) {
		a.f.addToConversation(q, b.items)
	}
	header := http.Header{"X-Request-Id": {fmt.Sprintf("req_fake_%d", a.n)}}
	if !streamed {
		writeOrdered(w, 200, header, b.response(b.status(), b.output(), true))
		return
	}
	writeEvents(w, r, header, turn, evs)
}

// failedStream reports whether a Responses stream ends failed
// (response.failed, or an error event).
func failedStream(evs []event) bool {
	if len(evs) == 0 {
		return false
	}
	last := evs[len(evs)-1].name
	return last == "response.failed" || last == "error"
}

// continued returns what a request continues: the stored response of
// previous_response_id or the conversation (conv non-nil), as prev.
func (a answerInfo) continued(q responsesReq) (prev, conv *storedResponse, err *apiErr) {
	if conv, err = a.f.requestConversation(q); err != nil || conv != nil {
		return conv, conv, err
	}
	if q.prev.Type == gjson.String {
		if a.f != nil {
			prev = a.f.storedResponse(q.prev.Str)
		}
		if prev == nil {
			return nil, nil, &apiErr{status: 400, message: fmt.Sprintf("Previous response with id '%s' not found.", q.prev.Str),
				param: "previous_response_id", code: "previous_response_not_found"}
		}
	}
	return prev, nil, nil
}

// inputTokens answers POST /v1/responses/input_tokens: a Responses request
// (model optional) validated as one, and its token count.
func inputTokens(w http.ResponseWriter, r *http.Request, rec Request) {
	q, perr := parseResponsesReq(rec.Body)
	if perr == nil {
		if !q.model.Exists() {
			q.model = gjson.Result{Type: gjson.String}
		}
		var prev *storedResponse
		if prev, _, perr = answerOf(r).continued(q); perr == nil {
			perr = q.validate(prev)
		}
	}
	if perr != nil {
		perr.write(w)
		return
	}
	writeOrdered(w, 200, nil, ordered{"object", "response.input_tokens", "input_tokens", len(rec.Body)/4 + 1})
}

func (f *Server) storedResponse(id string) *storedResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.stored[id]
	if !ok {
		return nil
	}
	return &s
}

// maxStored bounds what the fake keeps for previous_response_id: benchmarks
// send thousands of requests with the default store:true.
const maxStored = 4096

func (f *Server) storeResponse(id string, s storedResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stored == nil {
		f.stored = map[string]storedResponse{}
	}
	if len(f.storedOrder) >= maxStored {
		delete(f.stored, f.storedOrder[0])
		f.storedOrder = f.storedOrder[1:]
	}
	f.stored[id] = s
	f.storedOrder = append(f.storedOrder, id)
}

// deleteResponse answers DELETE /v1/responses/{id} as the API does: the
// response is gone (GET and previous_response_id no longer find it),
// {"id","object":"response","deleted":true}; 404 when there is none.
func (f *Server) deleteResponse(w http.ResponseWriter, r *http.Request) bool {
	id, ok := strings.CutPrefix(r.URL.Path, pathResponses+"/")
	if r.Method != http.MethodDelete || !ok || strings.Contains(id, "/") {
		return false
	}
	f.mu.Lock()
	_, found := f.stored[id]
	delete(f.stored, id)
	if i := slices.Index(f.storedOrder, id); i >= 0 {
		f.storedOrder = slices.Delete(f.storedOrder, i, i+1)
	}
	f.mu.Unlock()
	if !found {
		(&apiErr{status: 404, message: fmt.Sprintf("Response with id '%s' not found.", id)}).write(w)
		return true
	}
	writeOrdered(w, 200, nil, ordered{"id", id, "object", "response", "deleted", true})
	return true
}

// responseBuilder renders one answer as a response object or its events.
type responseBuilder struct {
	t       Turn
	q       responsesReq
	id      string
	n       int
	created int64
	usage   Usage
	encrypt bool // include reasoning.encrypted_content
	items   []ordered
}

func newResponseBuilder(turn Turn, q responsesReq, body []byte, n int) *responseBuilder {
	t := turn
	t.ToolCalls = slices.Clone(turn.ToolCalls)
	if t.Model == "" {
		t.Model = q.model.Str
	}
	for i := range t.ToolCalls {
		if t.ToolCalls[i].ID == "" {
			t.ToolCalls[i].ID = fmt.Sprintf("call_fake_%d_%d", n, i)
		}
	}
	u := usageFor(t, body)
	capUsage(&t, &u, q.maxOut)
	b := &responseBuilder{t: t, q: q, n: n, id: fmt.Sprintf("resp_fake_%d", n), created: time.Now().Unix(), usage: u}
	q.include.ForEach(func(_, v gjson.Result) bool {
		b.encrypt = b.encrypt || v.Str == "reasoning.encrypted_content"
		return true
	})
	b.items = b.output()
	return b
}

// output builds the completed output items.
func (b *responseBuilder) output() []ordered {
	var out []ordered
	t := b.t
	if t.Thinking != nil {
		out = append(out, b.reasoningItem(len(out), t.Thinking.Text, "completed"))
	}
	if t.Content != "" || len(t.ToolCalls) == 0 {
		out = append(out, b.messageItem(len(out), "completed", []any{outputText(t.Content)}))
	}
	for _, c := range t.ToolCalls {
		out = append(out, b.callItem(len(out), c, c.Arguments, "completed"))
	}
	if last := len(out) - 1; t.Truncated && last >= 0 && out[last][3] != "reasoning" {
		// The item the output-token limit cut.
		for k := 0; k+1 < len(out[last]); k += 2 {
			if out[last][k] == "status" {
				out[last][k+1] = "incomplete"
			}
		}
	}
	return out
}

// status is the finished response's: "incomplete" when the output-token
// limit cut it.
func (b *responseBuilder) status() string {
	if b.t.Truncated {
		return "incomplete"
	}
	return "completed"
}

func outputText(text string) ordered {
	return ordered{"type", "output_text", "annotations", []any{}, "logprobs", []any{}, "text", text}
}

func (b *responseBuilder) reasoningItem(i int, text, status string) ordered {
	summary := []any{}
	if text != "" && status == "completed" {
		summary = []any{ordered{"type", "summary_text", "text", text}}
	}
	item := ordered{"id", fmt.Sprintf("rs_fake_%d_%d", b.n, i), "type", "reasoning", "summary", summary}
	if b.encrypt {
		sig := b.t.Thinking.Signature
		if sig == "" {
			sig = signature(b.t.Thinking.Text)
		}
		item = append(item, "encrypted_content", sig)
	}
	return item
}

func (b *responseBuilder) messageItem(i int, status string, content []any) ordered {
	return ordered{"id", fmt.Sprintf("msg_fake_%d_%d", b.n, i), "type", "message", "status", status,
		"content", content, "role", "assistant"}
}

func (b *responseBuilder) callItem(i int, c Call, args, status string) ordered {
	if c.Custom {
		return ordered{"id", fmt.Sprintf("ctc_fake_%d_%d", b.n, i), "type", "custom_tool_call", "status", status,
			"call_id", c.ID, "input", args, "name", c.Name}
	}
	it := ordered{"id", fmt.Sprintf("fc_fake_%d_%d", b.n, i), "type", "function_call", "status", status,
		"arguments", args, "call_id", c.ID, "name", c.Name}
	if c.Namespace != "" {
		it = append(it, "namespace", c.Namespace)
	}
	return it
}

// orRaw returns v's raw JSON, or def when v is absent.
func orRaw(v gjson.Result, def any) any {
	if !v.Exists() {
		return def
	}
	return rawJSON(v.Raw)
}

// response renders the response object with the given status and output.
func (b *responseBuilder) response(status string, output []ordered, withUsage bool) ordered {
	q := b.q
	var usage any
	if withUsage {
		u := b.usage
		var reasoning int
		if b.t.Thinking != nil {
			reasoning = len(b.t.Thinking.Text)/4 + 1
		}
		usage = ordered{"input_tokens", u.PromptTokens, "input_tokens_details", ordered{"cached_tokens", u.CachedTokens},
			"output_tokens", u.CompletionTokens, "output_tokens_details", ordered{"reasoning_tokens", reasoning},
			"total_tokens", u.TotalTokens}
	}
	store := q.store.Type != gjson.False
	out := []any{}
	for _, o := range output {
		out = append(out, o)
	}
	var completedAt, incomplete any
	switch status {
	case "completed":
		completedAt = b.created
	case "incomplete":
		incomplete = ordered{"reason", "max_output_tokens"}
	}
	instructions := any(nil)
	if q.instr.Exists() {
		instructions = rawJSON(q.instr.Raw)
	}
	return ordered{
		"id", b.id, "object", "response", "created_at", b.created, "status", status, "background", false,
		"completed_at", completedAt, "error", nil, "incomplete_details", incomplete, "instructions", instructions,
		"max_output_tokens", orRaw(q.maxOut, nil), "model", b.t.Model, "output", out,
		"parallel_tool_calls", orRaw(q.parallel, true), "previous_response_id", orRaw(q.prev, nil),
		"reasoning", orRaw(q.reasoning, ordered{"effort", nil, "summary", nil}), "store", store,
		"temperature", orRaw(q.temp, 1.0), "text", orRaw(q.text, ordered{"format", ordered{"type", "text"}}),
		"tool_choice", orRaw(q.toolChoice, "auto"), "tools", orRaw(q.tools, []any{}), "top_p", orRaw(q.topP, 1.0),
		"truncation", orRaw(q.trunc, "disabled"), "usage", usage, "user", nil, "metadata", orRaw(q.metadata, ordered{}),
	}
}

// events renders the answer as the stream of a real server.
func (b *responseBuilder) events() []event {
	var evs []event
	seq := 0
	add := func(name string, kv ...any) {
		evs = append(evs, event{name, append(ordered{"type", name, "sequence_number", seq}, kv...)})
		seq++
	}
	t := b.t
	add("response.created", "response", b.response("in_progress", nil, false))
	add("response.in_progress", "response", b.response("in_progress", nil, false))
	for i, item := range b.items {
		switch item[3] { // the "type" value
		case "reasoning":
			id := item[1]
			add("response.output_item.added", "output_index", i, "item", b.reasoningItem(i, "", "in_progress"))
			if text := t.Thinking.Text; text != "" {
				add("response.reasoning_summary_part.added", "item_id", id, "output_index", i, "summary_index", 0,
					"part", ordered{"type", "summary_text", "text", ""})
				for _, piece := range split(text, t.ContentChunks) {
					add("response.reasoning_summary_text.delta", "item_id", id, "output_index", i, "summary_index", 0, "delta", piece)
				}
				add("response.reasoning_summary_text.done", "item_id", id, "output_index", i, "summary_index", 0, "text", text)
				add("response.reasoning_summary_part.done", "item_id", id, "output_index", i, "summary_index", 0,
					"part", ordered{"type", "summary_text", "text", text})
			}
		case "message":
			id := item[1]
			add("response.output_item.added", "output_index", i, "item", b.messageItem(i, "in_progress", []any{}))
			add("response.content_part.added", "item_id", id, "output_index", i, "content_index", 0, "part", outputText(""))
			for _, piece := range split(t.Content, t.ContentChunks) {
				add("response.output_text.delta", "item_id", id, "output_index", i, "content_index", 0, "delta", piece, "logprobs", []any{})
			}
			add("response.output_text.done", "item_id", id, "output_index", i, "content_index", 0, "text", t.Content, "logprobs", []any{})
			add("response.content_part.done", "item_id", id, "output_index", i, "content_index", 0, "part", outputText(t.Content))
		case "custom_tool_call":
			id := item[1]
			c := t.ToolCalls[i-(len(b.items)-len(t.ToolCalls))]
			add("response.output_item.added", "output_index", i, "item", b.callItem(i, c, "", "in_progress"))
			for _, frag := range splitN(c.Arguments, 2) {
				add("response.custom_tool_call_input.delta", "item_id", id, "output_index", i, "delta", frag)
			}
			add("response.custom_tool_call_input.done", "item_id", id, "output_index", i, "input", c.Arguments)
		case "function_call":
			id := item[1]
			c := t.ToolCalls[i-(len(b.items)-len(t.ToolCalls))]
			add("response.output_item.added", "output_index", i, "item", b.callItem(i, c, "", "in_progress"))
			n := t.ArgChunks
			if n <= 0 {
				n = 3
			}
			for _, frag := range splitN(c.Arguments, n) {
				add("response.function_call_arguments.delta", "item_id", id, "output_index", i, "delta", frag)
			}
			add("response.function_call_arguments.done", "item_id", id, "output_index", i, "name", c.Name, "arguments", c.Arguments)
		}
		add("response.output_item.done", "output_index", i, "item", item)
	}
	add("response."+b.status(), "response", b.response(b.status(), b.items, true))
	if t.Fail != nil && t.Fail.After < len(evs) {
		evs = evs[:t.Fail.After]
		seq = t.Fail.After
		typ := t.Fail.Type
		if typ == "" {
			typ = "server_error"
		}
		if t.Fail.Event == "error" {
			add("error", "code", typ, "message", t.Fail.Message, "param", nil)
		} else {
			failed := b.response("failed", nil, false)
			for k := 0; k+1 < len(failed); k += 2 {
				if failed[k] == "error" {
					failed[k+1] = ordered{"code", typ, "message", t.Fail.Message}
				}
			}
			add("response.failed", "response", failed)
		}
	}
	return evs
}

// stored is what the fake keeps of this answer for previous_response_id.
func (b *responseBuilder) stored(prev *storedResponse, q responsesReq) storedResponse {
	var s storedResponse
	if prev != nil {
		s.calls = slices.Clone(prev.calls)
	}
	q.input.ForEach(func(_, it gjson.Result) bool {
		if isCall(it.Get("type").Str) {
			s.calls = append(s.calls, it.Get("call_id").Str)
		}
		return true
	})
	for _, c := range b.t.ToolCalls {
		s.calls = append(s.calls, c.ID)
		s.outCalls = append(s.outCalls, c.ID)
	}
	s.object = appendJSON(nil, b.response("completed", b.items, true))
	for i, it := range inputItems(q) {
		s.input = append(s.input, withID(it, fmt.Sprintf("%s_in_%d", b.id, i)))
	}
	return s
}

// Instructions returns a Responses request's instructions ("" if none or
// not a string).
func (r Request) Instructions() string {
	return gjson.GetBytes(r.Body, "instructions").Str
}

// InputItems returns a Responses request's input items; a string input is
// returned as the one user message item it stands for
// ({"type":"message","role":"user","content":"…"}).
func (r Request) InputItems() []map[string]any {
	in := gjson.GetBytes(r.Body, "input")
	if in.Type == gjson.String {
		return []map[string]any{{"type": "message", "role": "user", "content": in.Str}}
	}
	var items []map[string]any
	in.ForEach(func(_, it gjson.Result) bool {
		m, _ := it.Value().(map[string]any)
		items = append(items, m)
		return true
	})
	return items
}
