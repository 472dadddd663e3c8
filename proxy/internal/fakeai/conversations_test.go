package fakeai

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func get(t *testing.T, f *Server, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(f.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func del(t *testing.T, f *Server, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, f.URL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestConversationsAndStoredResponses(t *testing.T) {
	f := New()
	defer f.Close()
	code, _, b := post(t, f, "/v1/conversations", `{}`, nil)
	cid := gjson.GetBytes(b, "id").Str
	if code != 200 || !strings.HasPrefix(cid, "conv_") {
		t.Fatalf("create: %d %s", code, b)
	}
	for _, tt := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"unknown conversation", `{"model":"m","conversation":"conv_nope","input":"hi"}`, 404, "Conversation with id 'conv_nope' not found."},
		{"with previous_response_id", `{"model":"m","conversation":"` + cid + `","previous_response_id":"resp_1","input":"hi"}`, 400, "Mutually exclusive parameters"},
		{"bad type", `{"model":"m","conversation":5,"input":"hi"}`, 400, "Invalid type for 'conversation'"},
	} {
		code, _, b := post(t, f, "/v1/responses", tt.body, nil)
		if code != tt.status || !strings.Contains(string(b), tt.msg) {
			t.Errorf("%s: %d %s", tt.name, code, b)
		}
	}
	f.Script(Reply(Turn{ToolCalls: []Call{{ID: "call_1", Name: "get_weather", Arguments: `{}`}}}))
	code, _, b = post(t, f, "/v1/responses", `{"model":"m","conversation":{"id":"`+cid+`"},"input":"weather?"}`, nil)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	respID, respObj := gjson.GetBytes(b, "id").Str, b
	// The call is stored unanswered: a turn without its output is refused.
	code, _, b = post(t, f, "/v1/responses", `{"model":"m","conversation":"`+cid+`","input":"and?"}`, nil)
	if code != 400 || !strings.Contains(string(b), "No tool output found for function call call_1.") {
		t.Errorf("unanswered call: %d %s", code, b)
	}
	code, _, b = post(t, f, "/v1/responses", `{"model":"m","conversation":"`+cid+`","input":[{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`, nil)
	if code != 200 {
		t.Errorf("answered call: %d %s", code, b)
	}
	code, b = get(t, f, "/v1/conversations/"+cid+"/items?order=desc&limit=2")
	data := gjson.GetBytes(b, "data").Array()
	if code != 200 || len(data) != 2 || data[0].Get("type").Str != "message" || data[1].Get("type").Str != "function_call_output" ||
		!gjson.GetBytes(b, "has_more").Bool() {
		t.Errorf("items desc: %d %s", code, b)
	}
	code, b = get(t, f, "/v1/conversations/"+cid+"/items?order=asc")
	data = gjson.GetBytes(b, "data").Array()
	if code != 200 || len(data) != 4 || data[0].Get("content").Str != "weather?" || data[1].Get("call_id").Str != "call_1" {
		t.Errorf("items asc: %d %s", code, b)
	}
	// Every item has an id, given when it had none; one can be deleted by it.
	var ids []string
	for _, it := range data {
		ids = append(ids, it.Get("id").Str)
	}
	if ids[0] != "msg_fake_conv_1" || ids[1] != gjson.GetBytes(respObj, "output.0.id").Str || ids[2] != "item_fake_conv_3" {
		t.Errorf("item ids %q", ids)
	}
	// One item is read by its id: the item itself.
	code, b = get(t, f, "/v1/conversations/"+cid+"/items/"+ids[2])
	if code != 200 || string(b) != data[2].Raw {
		t.Errorf("get item: %d %s, want %s", code, b, data[2].Raw)
	}
	code, b = del(t, f, "/v1/conversations/"+cid+"/items/"+ids[2])
	if code != 200 || gjson.GetBytes(b, "id").Str != cid || gjson.GetBytes(b, "object").Str != "conversation" {
		t.Errorf("delete item: %d %s", code, b)
	}
	if code, b := del(t, f, "/v1/conversations/"+cid+"/items/"+ids[2]); code != 404 || !strings.Contains(string(b), "Item with id") {
		t.Errorf("delete item again: %d %s", code, b)
	}
	if code, b := get(t, f, "/v1/conversations/"+cid+"/items/"+ids[2]); code != 404 || gjson.GetBytes(b, "error.message").Str != "Item with id '"+ids[2]+"' not found." {
		t.Errorf("get a deleted item: %d %s", code, b)
	}
	if code, b := get(t, f, "/v1/conversations/conv_nope/items/"+ids[0]); code != 404 || !strings.Contains(string(b), "Conversation with id") {
		t.Errorf("get an item of an unknown conversation: %d %s", code, b)
	}
	if code, b := del(t, f, "/v1/conversations/conv_nope/items/"+ids[0]); code != 404 {
		t.Errorf("delete item of unknown conversation: %d %s", code, b)
	}
	if got := f.Conversation(cid); len(got) != 3 || strings.Contains(strings.Join(got, ""), ids[2]) {
		t.Errorf("after delete: %q", got)
	}
	if n := len(f.Deletes()); n != 3 {
		t.Errorf("%d deletes recorded, want 3", n)
	}
	if code, b := get(t, f, "/v1/conversations/"+cid+"/items?limit=0"); code != 400 {
		t.Errorf("limit 0: %d %s", code, b)
	}
	if code, b := get(t, f, "/v1/conversations/conv_nope/items"); code != 404 {
		t.Errorf("unknown conversation items: %d %s", code, b)
	}
	code, b = get(t, f, "/v1/responses/"+respID)
	if code != 200 || gjson.GetBytes(b, "id").Str != respID || gjson.GetBytes(b, "output.0.call_id").Str != "call_1" {
		t.Errorf("stored response: %d %s", code, b)
	}
	// Its input items, with ids, newest first unless asked otherwise.
	code, b = get(t, f, "/v1/responses/"+respID+"/input_items")
	if in := gjson.GetBytes(b, "data").Array(); code != 200 || len(in) != 1 || in[0].Get("content").Str != "weather?" || in[0].Get("id").Str == "" {
		t.Errorf("input items: %d %s", code, b)
	}
	f.Script(Reply(Turn{Content: "ok"}))
	_, _, b = post(t, f, "/v1/responses", `{"model":"m","input":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]}`, nil)
	three := "/v1/responses/" + gjson.GetBytes(b, "id").Str + "/input_items"
	code, b = get(t, f, three+"?limit=2")
	if code != 200 || gjson.GetBytes(b, "data.#.content").Raw != `["c","b"]` || !gjson.GetBytes(b, "has_more").Bool() {
		t.Errorf("input items desc: %d %s", code, b)
	}
	code, b = get(t, f, three+"?order=asc&after="+gjson.GetBytes(b, "data.0.id").Str)
	if code != 200 || gjson.GetBytes(b, "data.#.content").Raw != `[]` {
		t.Errorf("input items after the last: %d %s", code, b)
	}
	_, b = get(t, f, three+"?order=asc&limit=1")
	code, b = get(t, f, three+"?order=asc&after="+gjson.GetBytes(b, "last_id").Str)
	if code != 200 || gjson.GetBytes(b, "data.#.content").Raw != `["b","c"]` || gjson.GetBytes(b, "has_more").Bool() {
		t.Errorf("input items asc after the first: %d %s", code, b)
	}
	if code, b := get(t, f, "/v1/responses/resp_nope/input_items"); code != 404 {
		t.Errorf("unknown response's input items: %d %s", code, b)
	}
	if code, b := get(t, f, "/v1/responses/resp_nope"); code != 404 {
		t.Errorf("unknown response: %d %s", code, b)
	}
}

func TestWithoutID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"hi","id":"kept"}]}`,
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi","id":"kept"}]}`},
		{`{"type":"message","id":"x"}`, `{"type":"message"}`},
		{`{"id":"x"}`, `{}`},
	} {
		if got := WithoutID(tc.in); got != tc.want {
			t.Errorf("WithoutID(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// A response's items are added to its conversation "after this response
// completes": a streamed response that fails never does; one that ends
// incomplete (max_output_tokens) is complete, its items added.
func TestConversationGetsCompletedResponsesOnly(t *testing.T) {
	for _, tt := range []struct {
		name  string
		turn  Turn
		added int
	}{
		{"completed", Turn{Content: "hi"}, 2},
		{"incomplete", Turn{Content: "hi there", Truncated: true}, 2},
		{"response.failed", Turn{Content: "hi there", Fail: &Failure{After: 3}}, 0},
		{"error event", Turn{Content: "hi there", Fail: &Failure{After: 3, Event: "error"}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := New()
			defer f.Close()
			_, _, b := post(t, f, "/v1/conversations", `{}`, nil)
			cid := gjson.GetBytes(b, "id").Str
			f.Script(Reply(tt.turn))
			if code, _, b := post(t, f, "/v1/responses", `{"model":"m","stream":true,"conversation":"`+cid+`","input":"hi?"}`, nil); code != 200 {
				t.Fatalf("%d %s", code, b)
			}
			if n := len(f.Conversation(cid)); n != tt.added {
				t.Errorf("%d items added, want %d", n, tt.added)
			}
		})
	}
}
