package fakeai

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReplyReadsRequest: Reply answers in the shape the request asks for and
// rejects bodies an OpenAI server would, without decoding the prompt.
func TestReplyReadsRequest(t *testing.T) {
	f := New()
	defer f.Close()
	tests := []struct {
		name, body string
		status     int
		want       []string // substrings of the answer
	}{
		{"plain", `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`, 200, []string{`"object":"chat.completion"`, `"model":"m1"`}},
		{"stream", `{"model":"m2","stream":true,"messages":[]}`, 200, []string{`"object":"chat.completion.chunk"`, "data: [DONE]"}},
		{"stream with usage", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, 200, []string{`"choices":[],`, `"prompt_tokens":`}},
		{"stream false, null options", `{"model":"m","stream":false,"stream_options":null,"messages":[]}`, 200, []string{`"object":"chat.completion"`}},
		{"not JSON", `{"model":`, 400, []string{`"type":"invalid_request_error"`}},
		{"array", `[1,2]`, 400, []string{"not a JSON object"}},
		{"stream as string", `{"model":"m","stream":"true","messages":[]}`, 400, []string{"booleans"}},
		{"model as number", `{"model":7,"messages":[]}`, 400, []string{"model must be a string"}},
		{"options as string", `{"model":"m","stream":true,"stream_options":"x","messages":[]}`, 400, []string{"booleans"}},
		{"duplicate key, last wins", `{"model":"a","stream":true,"stream":false,"messages":[]}`, 200, []string{`"object":"chat.completion"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(f.BaseURL()+"/chat/completions", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("answer lacks %q:\n%s", w, b)
				}
			}
		})
	}
}
