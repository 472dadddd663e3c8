package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/streamtest"
)

func TestParseView(t *testing.T) {
	body := `{"model":"m","stream":true,"user":"u1","n":1,"tool_choice":{"type":"function","function":{"name":"bash"}},` +
		`"messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"bash","arguments":"{}"}},{"id":"2","type":"function","function":{"name":"bash","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"1","content":"ok"}],` +
		`"tools":[{"type":"function","function":{"name":"bash"}},{"type":"custom","custom":{"name":"patch"}}]}`
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	v := r.View()
	want := []wire.Turn{{Role: "system", Text: "S"}, {Role: "user", Text: "a"}, {Role: "assistant"}, {Role: "tool", Text: "ok", Tool: "bash"}}
	if len(v.Turns) != len(want) {
		t.Fatalf("turns %+v", v.Turns)
	}
	for i := range want {
		if v.Turns[i] != want[i] {
			t.Errorf("turn %d = %+v, want %+v", i, v.Turns[i], want[i])
		}
	}
	if v.API != wire.APIChat || v.Model != "m" || !v.Stream || v.User != "u1" || v.Choices != 1 {
		t.Errorf("scalars %+v", v)
	}
	if len(v.Tools) != 2 || v.Tools[0].Name != "bash" || v.Tools[0].Custom || v.Tools[1].Name != "patch" || !v.Tools[1].Custom {
		t.Errorf("tools %+v", v.Tools)
	}
	if len(v.Called) != 1 || v.Called[0] != "bash" || len(v.ToolChoice.Named) != 1 {
		t.Errorf("called %v tool choice %+v", v.Called, v.ToolChoice)
	}
	if first := v.FirstUserText(); first != "a" {
		t.Errorf("first user text %q", first)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ body, code, param, msg string }{
		{``, "invalid_json", "", "request body is empty"},
		{`[1]`, "invalid_json", "", "must be a JSON object"},
		{`{"messages":[`, "invalid_json", "", "not valid JSON"},
		{`{"model":"m"}`, "missing_messages", "messages", "missing required parameter: 'messages'"},
		{`{"messages":"hi"}`, "invalid_type", "messages", "'messages' must be an array of message objects, got a string"},
		{`{"messages":[]}`, "empty_messages", "messages", "at least one message"},
		{`{"messages":[null]}`, "invalid_type", "messages[0]", "got null"},
		{`{"messages":[{"content":"x"}]}`, "missing_role", "messages[0].role", "missing required parameter"},
		{`{"messages":[{"Role":"user","content":"x"}]}`, "missing_role", "messages[0].role", "missing required parameter"},
		{`{"messages":[{"role":7}]}`, "invalid_type", "messages[0].role", "must be a string, got a number"},
		{`{"model":5,"messages":[{"role":"user"}]}`, "invalid_type", "model", "'model' must be a string, got a number"},
		{`{"stream":"yes","messages":[{"role":"user"}]}`, "invalid_type", "stream", "must be a boolean"},
		{`{"max_tokens":"100","messages":[{"role":"user"}]}`, "invalid_type", "max_tokens", "'max_tokens' must be an integer, got a string"},
		{`{"max_completion_tokens":100.5,"messages":[{"role":"user"}]}`, "invalid_type", "max_completion_tokens", "must be an integer, got 100.5"},
		{`{"stream_options":[],"messages":[{"role":"user"}]}`, "invalid_type", "stream_options", "must be an object"},
		{`{"stream_options":{"include_usage":1},"messages":[{"role":"user"}]}`, "invalid_type", "stream_options.include_usage", "must be a boolean"},
		{`{"n":1.5,"messages":[{"role":"user"}]}`, "invalid_type", "n", "'n' must be an integer, got 1.5"},
		{`{"user":true,"messages":[{"role":"user"}]}`, "invalid_type", "user", "got a boolean"},
		{`{"tools":{},"messages":[{"role":"user"}]}`, "invalid_type", "tools", "must be an array"},
		{`{"tools":[1],"messages":[{"role":"user"}]}`, "invalid_type", "tools[0]", "must be a tool object"},
		{`{"messages":[{"role":"robot","content":"x"}]}`, "invalid_role", "messages[0].role", `must be one of system, developer, user, assistant, tool or function, got "robot"`},
		{`{"messages":[{"role":["user"]}]}`, "invalid_type", "messages[0].role", "must be a string, got an array"},
		{`{"messages":[{"role":"user","content":5}]}`, "invalid_type", "messages[0].content", "'messages[0].content' must be a string or an array of content parts, got a number"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"user","content":{"text":"b"}}]}`, "invalid_type", "messages[1].content", "got an object"},
		{`{"messages":[{"role":"user","content":true}]}`, "invalid_type", "messages[0].content", "got a boolean"},
		{`{"tools":"bash","messages":[{"role":"user"}]}`, "invalid_type", "tools", "must be an array of tool objects, got a string"},
		{"{\"messages\":[{\"role\":\"user\",\"content\":\"ok\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]}]}", "invalid_utf8", "messages[1].content[0].text", "'messages[1].content[0].text' is not valid UTF-8 (byte 0xff at offset"},
		{"{\"model\":\"m\xc3\",\"messages\":[{\"role\":\"user\"}]}", "invalid_utf8", "model", "is not valid UTF-8"},
		{"{\"a\xff\":1,\"messages\":[{\"role\":\"user\"}]}", "invalid_utf8", "a\ufffd", "is not valid UTF-8"},
		{`{"messages":[{"role":"user","content":"a"}],"model":"m","messages":[{"role":"user","content":"b"}]}`, "duplicate_parameter", "messages", "'messages' appears more than once"},
		{`{"tools":[],"messages":[{"role":"user"}],"tools":[{"type":"function","function":{"name":"f"}}]}`, "duplicate_parameter", "tools", "send each parameter once"},
		{`{"messages":[{"role":"user"}],"Tools":[{"type":"function","function":{"name":"f"}}]}`, "unknown_parameter", "Tools", "unknown parameter 'Tools': the API's is 'tools'"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.body))
		we, ok := err.(*wire.Error)
		if !ok {
			t.Errorf("%s: error %v, want a *wire.Error", tt.body, err)
			continue
		}
		if we.Status != 400 || we.Code != tt.code || we.Param != tt.param || !strings.Contains(we.Message, tt.msg) {
			t.Errorf("%s: %+v, want %s %s %q", tt.body, we, tt.code, tt.param, tt.msg)
		}
	}
}

// FuzzParse: validation never panics, accepts only objects with an array of
// message objects, answers 400 and explains itself in API terms.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, `{"messages":[]}`, `{"messages":null}`, `[]`,
		`{"stream":"x","messages":[{}]}`, ``, `{"model":1,"messages":["x"]}`, `{"n":1e9999,"messages":[{"role":"user"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"messages":[{"role":"struct"}]}`)) // a role quoted back in the error
	f.Add([]byte(`{"messages":[{"role":"Go "}]}`))    // a role quoted back in the error
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Parse(in)
		if err != nil {
			we, ok := err.(*wire.Error)
			if !ok || we.Status != 400 || streamtest.DecoderLeak(we.Message, in) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(r.View().Turns) == 0 || !json.Valid(in) {
			t.Fatal("accepted a request without messages or invalid JSON")
		}
		for _, m := range r.Messages() {
			if m.Raw[0] != '{' {
				t.Fatal("accepted a message that is not an object")
			}
		}
		out, err := r.Render(&wire.Plan{Catalog: "C", CatalogJSON: wire.Quote("C"), EnvelopeRole: "user", Changed: true,
			Envelopes: []wire.Envelope{{ID: "x", Text: "E", JSON: wire.Quote("E")}},
			Tools:     wire.ToolSet{Server: []wire.ToolSpec{{Name: "load_skill", Parameters: json.RawMessage(`{"type":"object"}`)}}}})
		if err != nil {
			return
		}
		if _, err := Parse(out); err != nil || !json.Valid(out) {
			t.Fatalf("rendered body does not parse: %v\n%s", err, out)
		}
	})
}

// The skill envelopes go after the last message, or before a trailing
// assistant message with "prefix": true (DeepSeek's and Mistral's prefix
// completion: the API requires the prefix last, and the model continues it).
func TestRenderEnvelopesBeforePrefix(t *testing.T) {
	plan := &wire.Plan{Catalog: "C", CatalogJSON: wire.Quote("C"), EnvelopeRole: "user", Changed: true,
		Envelopes: []wire.Envelope{{ID: "x", Text: "E", JSON: wire.Quote("E")}}}
	for _, c := range []struct {
		name, body, want string
	}{
		{"after the last message",
			`{"messages":[{"role":"user","content":"q"}]}`,
			`{"messages":[{"role":"system","content":"C"},{"role":"user","content":"q"},{"role":"user","content":"E"}]}`},
		{"before a prefix",
			`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"}, {"role":"assistant","content":"x = ","prefix":true}],"stop":["\n"]}`,
			`{"messages":[{"role":"system","content":"S\n\nC"},{"role":"user","content":"q"},{"role":"user","content":"E"}, {"role":"assistant","content":"x = ","prefix":true}],"stop":["\n"]}`},
		{"before a prefix right after the catalog's message",
			`{"messages":[{"role":"system","content":"S"},{"role":"assistant","content":"x","prefix":true}]}`,
			`{"messages":[{"role":"system","content":"S\n\nC"},{"role":"user","content":"E"},{"role":"assistant","content":"x","prefix":true}]}`},
		{"a new system message, then before a prefix",
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"x","prefix":true}]}`,
			`{"messages":[{"role":"system","content":"C"},{"role":"user","content":"q"},{"role":"user","content":"E"},{"role":"assistant","content":"x","prefix":true}]}`},
		{"an assistant message without prefix is history",
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","prefix":false}]}`,
			`{"messages":[{"role":"system","content":"C"},{"role":"user","content":"q"},{"role":"assistant","content":"a","prefix":false},{"role":"user","content":"E"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Render(plan)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Errorf("rendered\n%s\nwant\n%s", out, c.want)
			}
		})
	}
}
