package fakeai

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// post sends body to path with headers and returns status and body.
func post(t *testing.T, f *Server, path, body string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

type sse struct {
	name string
	data map[string]any
}

// parseSSE reads named events; it fails on a data line without its event line.
func parseSSE(t *testing.T, b []byte) []sse {
	t.Helper()
	var out []sse
	var name string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatalf("bad data line %q: %v", line, err)
			}
			if name == "" || m["type"] != name {
				t.Fatalf("event %q carries type %v", name, m["type"])
			}
			out = append(out, sse{name, m})
			name = ""
		case line == "":
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return out
}

func names(evs []sse) string {
	var n []string
	for _, e := range evs {
		n = append(n, e.name)
	}
	return strings.Join(n, " ")
}

func TestResponsesValidation(t *testing.T) {
	f := New()
	defer f.Close()
	call := `{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"}`
	out := `{"type":"function_call_output","call_id":"c1","output":"sunny"}`
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"string input", `{"model":"m","input":"hi"}`, 200, `"object":"response"`},
		{"items", `{"model":"m","instructions":"be brief","input":[{"role":"developer","content":"x"},{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"yo"}]}]}`, 200, `"status":"completed"`},
		{"call answered", `{"model":"m","input":[` + call + `,` + out + `]}`, 200, `"output_text"`},
		{"unknown item kept", `{"model":"m","input":[{"type":"web_search_call","id":"ws_1","status":"completed"},{"role":"user","content":"hi"}]}`, 200, `"completed"`},
		{"builtin and flat tools", `{"model":"m","input":"hi","tools":[{"type":"web_search"},{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"}}`, 200, `"name":"f"`},
		{"not JSON", `{"model":`, 400, `"type":"invalid_request_error"`},
		{"no model", `{"input":"hi"}`, 400, `Missing required parameter: 'model'`},
		{"no input", `{"model":"m"}`, 400, `Missing required parameter: 'input'`},
		{"input number", `{"model":"m","input":3}`, 400, `Invalid type for 'input'`},
		{"stream string", `{"model":"m","input":"hi","stream":"yes"}`, 400, `Invalid type for 'stream'`},
		{"chat-format tool", `{"model":"m","input":"hi","tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`, 400, `Missing required parameter: 'tools[0].name'`},
		{"duplicate tool", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}`, 400, `Duplicate tool name`},
		{"tool_choice unknown function", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}}`, 400, `Tool choice 'function' not found`},
		{"tool_choice bad string", `{"model":"m","input":"hi","tool_choice":"sometimes"}`, 400, `Supported values are: 'none'`},
		{"output without call", `{"model":"m","input":[` + out + `]}`, 400, `No tool call found for function call output with call_id c1.`},
		{"call without output", `{"model":"m","input":[` + call + `,{"role":"user","content":"hi"}]}`, 400, `No tool output found for function call c1.`},
		{"user output_text part", `{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"hi"}]}]}`, 400, `Invalid value: 'output_text'`},
		{"assistant input_text part", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_text","text":"hi"}]}]}`, 400, `Invalid value: 'input_text'`},
		{"bad role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, 400, `Invalid value: 'tool'`},
		{"item reference without its type", `{"model":"m","input":[{"id":"msg_1"},{"role":"user","content":"hi"}]}`, 200, `"completed"`},
		{"item without type, role or id", `{"model":"m","input":[{"content":"x"}]}`, 400, `Missing required parameter: 'input[0].type'`},
		{"reasoning by id with store off", `{"model":"m","store":false,"input":[{"type":"reasoning","id":"rs_1","summary":[]},{"role":"user","content":"hi"}]}`, 400, `Items are not persisted when`},
		{"reasoning with foreign encrypted content", `{"model":"m","store":false,"input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},{"role":"user","content":"hi"}]}`, 200, `"completed"`},
		{"tampered encrypted content", `{"model":"m","store":false,"input":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"changed"}],"encrypted_content":"` + signature("original") + `"},{"role":"user","content":"hi"}]}`, 400, `could not be verified`},
		{"unknown previous response", `{"model":"m","input":"hi","previous_response_id":"resp_nope"}`, 400, `Previous response with id 'resp_nope' not found.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := post(t, f, "/v1/responses", tc.body, nil)
			if status != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("status %d, want %d with %q:\n%s", status, tc.status, tc.want, b)
			}
			if status != 200 {
				var e struct {
					Error struct{ Message, Type string }
				}
				if json.Unmarshal(b, &e) != nil || e.Error.Message == "" || e.Error.Type == "" {
					t.Fatalf("not an OpenAI error envelope: %s", b)
				}
			}
		})
	}
}

func TestResponsesAnswer(t *testing.T) {
	f := New()
	defer f.Close()
	f.Script(Reply(Turn{Content: "Hello there friend", Thinking: &Thinking{Text: "think first"},
		ToolCalls: []Call{{Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		Usage:     &Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 4}}))
	status, h, b := post(t, f, "/v1/responses", `{"model":"m1","input":"hi","include":["reasoning.encrypted_content"],"tools":[{"type":"function","name":"get_weather"}]}`, nil)
	if status != 200 || h.Get("X-Request-Id") == "" {
		t.Fatalf("status %d %v: %s", status, h, b)
	}
	var resp struct {
		ID, Object, Status, Model string
		Output                    []map[string]any
		Usage                     map[string]any
		Tools                     []any
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Object != "response" || resp.Status != "completed" || resp.Model != "m1" || len(resp.Tools) != 1 {
		t.Fatalf("%s", b)
	}
	var types []string
	for _, o := range resp.Output {
		types = append(types, o["type"].(string))
	}
	if strings.Join(types, ",") != "reasoning,message,function_call" {
		t.Fatalf("output types %v", types)
	}
	if resp.Output[0]["encrypted_content"] != signature("think first") {
		t.Fatalf("reasoning %v", resp.Output[0])
	}
	if Text(resp.Output[1]["content"]) != "Hello there friend" {
		t.Fatalf("message %v", resp.Output[1])
	}
	fc := resp.Output[2]
	if fc["name"] != "get_weather" || fc["arguments"] != `{"city":"Oslo"}` || !strings.HasPrefix(fc["call_id"].(string), "call_fake_") {
		t.Fatalf("call %v", fc)
	}
	if resp.Usage["input_tokens"] != 10.0 || resp.Usage["output_tokens"] != 5.0 || resp.Usage["total_tokens"] != 15.0 ||
		resp.Usage["input_tokens_details"].(map[string]any)["cached_tokens"] != 4.0 {
		t.Fatalf("usage %v", resp.Usage)
	}
	// The default answer is a plain "ok".
	_, _, b = post(t, f, "/v1/responses", `{"model":"m","input":"hi"}`, nil)
	if !strings.Contains(string(b), `"text":"ok"`) {
		t.Fatalf("default %s", b)
	}
}

func TestResponsesStream(t *testing.T) {
	f := New()
	defer f.Close()
	f.Script(Reply(Turn{Content: "It is sunny", Thinking: &Thinking{Text: "let me see"},
		ToolCalls: []Call{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}))
	status, h, b := post(t, f, "/v1/responses", `{"model":"m","input":"hi","stream":true,"tools":[{"type":"function","name":"get_weather"}]}`, nil)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %v", status, h)
	}
	evs := parseSSE(t, b)
	want := "response.created response.in_progress " +
		"response.output_item.added response.reasoning_summary_part.added response.reasoning_summary_text.delta response.reasoning_summary_text.delta response.reasoning_summary_text.delta response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.done " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.delta response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " +
		"response.completed"
	if got := names(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	var text, args string
	for i, e := range evs {
		if e.data["sequence_number"] != float64(i) {
			t.Fatalf("event %d has sequence_number %v", i, e.data["sequence_number"])
		}
		switch e.name {
		case "response.output_text.delta":
			text += e.data["delta"].(string)
			if e.data["output_index"] != 1.0 {
				t.Fatalf("text at output_index %v", e.data["output_index"])
			}
		case "response.function_call_arguments.delta":
			args += e.data["delta"].(string)
		}
	}
	if text != "It is sunny" || args != `{"city":"Oslo"}` {
		t.Fatalf("text %q args %q", text, args)
	}
	final := evs[len(evs)-1].data["response"].(map[string]any)
	if final["status"] != "completed" || len(final["output"].([]any)) != 3 || final["usage"] == nil {
		t.Fatalf("completed %v", final)
	}
	if evs[0].data["response"].(map[string]any)["status"] != "in_progress" {
		t.Fatalf("created %v", evs[0].data)
	}
}

func TestResponsesStreamFailure(t *testing.T) {
	for _, kind := range []string{"", "error"} {
		f := New()
		f.Script(Reply(Turn{Content: "partial answer here", Fail: &Failure{After: 4, Event: kind, Message: "boom"}}))
		_, _, b := post(t, f, "/v1/responses", `{"model":"m","input":"hi","stream":true}`, nil)
		f.Close()
		evs := parseSSE(t, b)
		if len(evs) != 5 {
			t.Fatalf("%q: %d events: %s", kind, len(evs), names(evs))
		}
		last := evs[4]
		switch kind {
		case "":
			r := last.data["response"].(map[string]any)
			if last.name != "response.failed" || r["status"] != "failed" || r["error"].(map[string]any)["message"] != "boom" {
				t.Fatalf("failed event %v", last)
			}
		case "error":
			if last.name != "error" || last.data["message"] != "boom" || last.data["sequence_number"] != 4.0 {
				t.Fatalf("error event %v", last)
			}
		}
	}
}

// TestResponsesPreviousResponse: a stored response with a function call
// must be continued with its output; store:false keeps nothing.
func TestResponsesPreviousResponse(t *testing.T) {
	f := New()
	defer f.Close()
	f.Script(Reply(Turn{ToolCalls: []Call{{ID: "call_a", Name: "f", Arguments: "{}"}}}))
	_, _, b := post(t, f, "/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"}]}`, nil)
	var first struct{ ID string }
	_ = json.Unmarshal(b, &first)
	tests := []struct {
		name, body string
		status     int
	}{
		{"missing output", `{"model":"m","previous_response_id":"` + first.ID + `","input":"and?"}`, 400},
		{"output for the previous call", `{"model":"m","previous_response_id":"` + first.ID + `","input":[{"type":"function_call_output","call_id":"call_a","output":"1"}]}`, 200},
		{"output for an unknown call", `{"model":"m","previous_response_id":"` + first.ID + `","input":[{"type":"function_call_output","call_id":"call_a","output":"1"},{"type":"function_call_output","call_id":"call_b","output":"1"}]}`, 400},
	}
	for _, tc := range tests {
		status, _, b := post(t, f, "/v1/responses", tc.body, nil)
		if status != tc.status {
			t.Fatalf("%s: status %d: %s", tc.name, status, b)
		}
	}
	_, _, b = post(t, f, "/v1/responses", `{"model":"m","input":"hi","store":false}`, nil)
	var unstored struct{ ID string }
	_ = json.Unmarshal(b, &unstored)
	if status, _, b := post(t, f, "/v1/responses", `{"model":"m","input":"hi","previous_response_id":"`+unstored.ID+`"}`, nil); status != 400 {
		t.Fatalf("store:false response was kept: %d %s", status, b)
	}
}

func TestRequestResponsesHelpers(t *testing.T) {
	r := Request{Body: []byte(`{"instructions":"sys","input":[{"role":"user","content":"a"},{"type":"function_call","name":"f"}],"tools":[{"type":"function","name":"f"},{"type":"web_search"}]}`)}
	if r.Instructions() != "sys" || len(r.InputItems()) != 2 || r.InputItems()[1]["name"] != "f" {
		t.Fatalf("%q %v", r.Instructions(), r.InputItems())
	}
	if got := strings.Join(r.ToolNames(), ","); got != "f,web_search" {
		t.Fatalf("tool names %s", got)
	}
	s := Request{Body: []byte(`{"input":"hello"}`)}
	if items := s.InputItems(); len(items) != 1 || items[0]["role"] != "user" || Text(items[0]["content"]) != "hello" {
		t.Fatalf("%v", items)
	}
}
