package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// mistralOrder is mistral-common's message-order rule
// (validator.py, _validate_message_order): "" when msgs keep it, else the
// refusal's message.
func mistralOrder(msgs []map[string]any) string {
	follows := map[string]string{"system": " user assistant system ", "user": " assistant system user ",
		"assistant": " assistant user tool ", "tool": " assistant tool "}
	for i := 1; i < len(msgs); i++ {
		prev, _ := msgs[i-1]["role"].(string)
		cur, _ := msgs[i]["role"].(string)
		if !strings.Contains(follows[prev], " "+cur+" ") {
			return fmt.Sprintf("Unexpected role '%s' after role '%s'", cur, prev)
		}
	}
	return ""
}

// The real OpenAI client runs an agent's tool-loop step through the proxy
// in front of an upstream that refuses a user message after a tool message
// as Mistral's API does (400, invalid_request_message_order): the step's
// auto-loaded skill is sent again inside the last user message, the client
// gets the answer, and the streamed run that follows goes merged at once.
func TestSDKMistralMessageOrder(t *testing.T) {
	e := setup(t)
	var mu sync.Mutex
	answers := []fakeai.Turn{
		{ToolCalls: []fakeai.Call{{ID: "call_rf_1", Name: "read_file", Arguments: `{"path":"form.pdf"}`}}},
		{Content: "Filled: name, date, signature."},
		{ToolCalls: []fakeai.Call{{ID: "call_rf_2", Name: "read_file", Arguments: `{"path":"form.pdf"}`}}},
		{Content: "Filled them again.", ContentChunks: 3},
	}
	e.up.Handle("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
		if msg := mistralOrder(rec.Messages()); msg != "" {
			fakeai.Raw(400, "application/json", `{"object":"error","message":"`+msg+`","type":"invalid_request_message_order","param":null,"code":"3230"}`)(w, r, rec)
			return
		}
		mu.Lock()
		turn := fakeai.Turn{Content: "unexpected request"}
		if len(answers) > 0 {
			turn, answers = answers[0], answers[1:]
		}
		mu.Unlock()
		fakeai.Reply(turn)(w, r, rec)
	})
	var got struct {
		Plain  string `json:"plain"`
		Stream string `json:"stream"`
	}
	e.run(t, "message-order.mjs", &got)
	if got.Plain != "Filled: name, date, signature." || got.Stream != "Filled them again." {
		t.Errorf("the client got %+v", got)
	}
	reqs := e.up.Requests()
	// plain: first step, the tool step refused, merged; streamed: both merged at once.
	if len(reqs) != 5 {
		t.Fatalf("upstream got %d requests, want 5", len(reqs))
	}
	if msg := mistralOrder(reqs[1].Messages()); msg != "Unexpected role 'user' after role 'tool'" {
		t.Errorf("the refused request: %q", msg)
	}
	for _, i := range []int{2, 3, 4} {
		msgs := reqs[i].Messages()
		var user map[string]any
		for _, m := range msgs {
			if m["role"] == "user" {
				user = m
			}
		}
		if user == nil || !strings.HasPrefix(content(user), "Please fill in the fields of this PDF form for me.\n\n<skill_context id=\"pdf-forms\">") {
			t.Errorf("request %d: the skill is not inside the last user message: %v", i, msgs)
		}
		if last := msgs[len(msgs)-1]["role"]; i != 3 && last != "tool" {
			t.Errorf("request %d ends with a %v message", i, last)
		}
	}
}
