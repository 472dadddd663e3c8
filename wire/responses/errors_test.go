package responses

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

// A later round's follow-up refused by the upstream ends the client's
// stream as the API ends a failed response: an error event with the
// upstream's code, message and param, then response.failed for the
// response the client was announced, with what it was shown.
func TestUpstreamErrorEventEndsWithResponseFailed(t *testing.T) {
	tests := []struct {
		name                 string
		status               int
		body                 string
		code, message, param string
	}{
		{"openai error", 400, `{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`,
			"context_length_exceeded", "Your input exceeds the context window of this model.", "input"},
		{"no code: its type", 500, `{"error":{"message":"The server had an error.","type":"server_error","param":null,"code":null}}`,
			"server_error", "The server had an error.", ""},
		{"not an openai error", 502, `<html>bad gateway</html>`,
			"upstream_502", "upstream answered 502 in tool round 1: <html>bad gateway</html>", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := Parse([]byte(`{"input":"make a pdf","stream":true}`))
			s := r.NewStream(func(n string) bool { return n == "load_skill" })
			runRound(s, false, sse(
				`{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","instructions":"CAT","output":[],"usage":null}}`,
				`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_0","role":"assistant","content":[]}}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_0","role":"assistant","content":[{"type":"output_text","text":"Loading."}]}}`,
				`{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":""}}`,
				`{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"load_skill","arguments":"{}"}}`,
				`{"type":"response.completed","response":{"id":"resp_1","output":[],"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}}`,
			))
			s.Round(false)
			out, msg := s.UpstreamErrorEvent(tc.status, []byte(tc.body), 1)
			if msg != tc.message {
				t.Errorf("log message %q, want %q", msg, tc.message)
			}
			var evs []*wire.Event
			rd := wire.NewEventReader(strings.NewReader(string(out)))
			for {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				evs = append(evs, &wire.Event{Raw: ev.Raw, Data: append([]byte(nil), ev.Data...), HasData: ev.HasData})
			}
			if len(evs) != 2 || evs[0].Type() != "error" || evs[1].Type() != "response.failed" {
				t.Fatalf("events:\n%s", out)
			}
			e, f := gjson.ParseBytes(evs[0].Data), gjson.ParseBytes(evs[1].Data)
			if e.Get("code").Str != tc.code || e.Get("message").Str != tc.message || e.Get("param").Str != tc.param ||
				e.Get("sequence_number").Int() != 3 {
				t.Errorf("error event %s", evs[0].Data)
			}
			resp := f.Get("response")
			want := map[string]string{"id": "resp_1", "status": "failed", "error.code": tc.code, "error.message": tc.message,
				"output.#": "1", "output.0.id": "msg_0", "usage.input_tokens": "5"}
			for path, v := range want {
				if got := resp.Get(path).String(); got != v {
					t.Errorf("response.%s = %q, want %q", path, got, v)
				}
			}
			if f.Get("sequence_number").Int() != 4 {
				t.Errorf("response.failed %s", evs[1].Data)
			}
		})
	}
}

func TestHiddenPath(t *testing.T) {
	call := `{"type":"function_call","id":"fc_1","call_id":"c1","name":"load_skill","arguments":"{}"}`
	tests := []struct {
		name, body, id, turn, want string
	}{
		{"stored", `{"input":"x"}`, "resp_1", call, "/v1/responses/resp_1"},
		{"store false", `{"input":"x","store":false}`, "resp_1", call, ""},
		{"conversation", `{"input":"x","conversation":"conv_1"}`, "resp_1", call, ""},
		{"reasoning by id", `{"input":"x"}`, "resp_1", `{"type":"reasoning","id":"rs_1","summary":[]},` + call, ""},
		{"reasoning whole", `{"input":"x"}`, "resp_1", `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"},` + call, "/v1/responses/resp_1"},
		{"no id", `{"input":"x"}`, "", call, ""},
		{"id not one segment", `{"input":"x"}`, "a/b", call, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.HiddenPath(&wire.Answer{ID: tc.id, Turn: []byte(tc.turn)}); got != tc.want {
				t.Errorf("HiddenPath %q, want %q", got, tc.want)
			}
		})
	}
}
