package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// prettySSE answers as next does, with each event's JSON spread over
// several data: lines (indented), as the event-stream format allows.
func prettySSE(next fakeai.Responder) fakeai.Responder {
	return func(w http.ResponseWriter, r *http.Request, rec fakeai.Request) {
		rr := httptest.NewRecorder()
		next(rr, r, rec)
		for k, v := range rr.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rr.Code)
		var out bytes.Buffer
		for line := range strings.SplitSeq(rr.Body.String(), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			var pretty bytes.Buffer
			if !ok || json.Indent(&pretty, []byte(data), "", "  ") != nil {
				out.WriteString(line + "\n")
				continue
			}
			for l := range strings.SplitSeq(pretty.String(), "\n") {
				out.WriteString("data: " + l + "\n")
			}
		}
		_, _ = w.Write(bytes.TrimSuffix(out.Bytes(), []byte("\n")))
	}
}

// An upstream's event whose JSON spans several data: lines reaches the
// client as events a reader of the format decodes: every line a field,
// every event's data (the lines joined with \n) valid JSON. Each API,
// through a hidden round (whose later events the proxy rewrites).
func TestMultiLineEventData(t *testing.T) {
	root := writeSkills(t, map[string]string{"git-helper": "description: Inspect and commit changes with git version control."})
	for _, a := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"m","stream":true,"input":"hi"}`},
		{"/v1/messages", `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(strings.TrimPrefix(a.path, "/v1/"), func(t *testing.T) {
			up, base, _ := turnProxy(t, root)
			up.Script(
				prettySSE(fakeai.Reply(fakeai.Turn{Content: "Loading.", ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"git-helper"}`}}})),
				prettySSE(fakeai.Reply(fakeai.Turn{Content: "All clean."})),
			)
			resp, out := postWith(t, base+a.path, a.body, map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01"})
			if resp.StatusCode != 200 || len(up.Requests()) != 2 {
				t.Fatalf("status %d, %d upstream requests: %s", resp.StatusCode, len(up.Requests()), out)
			}
			events, text := 0, ""
			var data []string
			end := func() {
				if len(data) == 0 {
					return
				}
				d := strings.Join(data, "\n")
				data = nil
				if d == "[DONE]" {
					return
				}
				events++
				var v map[string]any
				if err := json.Unmarshal([]byte(d), &v); err != nil {
					t.Fatalf("event data is not JSON (%v): %q\nstream:\n%s", err, d, out)
				}
				text += textOf(v)
			}
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				line := sc.Text()
				switch field, value, _ := strings.Cut(line, ":"); field {
				case "":
					if line == "" {
						end()
					}
				case "data":
					data = append(data, strings.TrimPrefix(value, " "))
				case "event", "id", "retry":
				default:
					t.Fatalf("line %q is no field of the format:\n%s", line, out)
				}
			}
			end()
			if events < 3 || !strings.Contains(text, "All clean.") {
				t.Fatalf("%d events, text %q:\n%s", events, text, out)
			}
		})
	}
}

// textOf is the text delta an event carries, in any of the three APIs.
func textOf(v map[string]any) string {
	if d, ok := v["delta"].(string); ok && v["type"] == "response.output_text.delta" {
		return d
	}
	if d, ok := v["delta"].(map[string]any); ok {
		if s, ok := d["text"].(string); ok {
			return s
		}
	}
	if cs, ok := v["choices"].([]any); ok && len(cs) > 0 {
		if d, ok := cs[0].(map[string]any)["delta"].(map[string]any); ok {
			s, _ := d["content"].(string)
			return s
		}
	}
	return ""
}
