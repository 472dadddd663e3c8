package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// With the real router: a Responses conversation continued with
// previous_response_id does not get the skill its first turn auto-loaded
// again on the next turn about the same thing, though the request shows
// only its new input.
func TestStoredTurnsDoNotReloadSkills(t *testing.T) {
	e := setup(t)
	post := func(body string) (http.Header, []byte) {
		t.Helper()
		resp, err := http.Post(e.proxy.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return resp.Header, b
	}
	const ask = "write a commit message for my staged changes, conventional commit style"
	e.up.Script(fakeai.Reply(fakeai.Turn{Content: "feat: one"}), fakeai.Reply(fakeai.Turn{Content: "feat: two"}))
	h, b := post(`{"model":"m","input":"` + ask + `"}`)
	first := h.Get("X-Skillrouter-Selected")
	if first == "" {
		t.Fatalf("the first turn auto-loads nothing; the test needs a query that does (headers %v)", h)
	}
	h, _ = post(`{"model":"m","previous_response_id":"` + gjson.GetBytes(b, "id").Str + `","input":"` + ask + `, and shorter"}`)
	if sel := h.Get("X-Skillrouter-Selected"); strings.Contains(sel, first) {
		t.Errorf("the second turn loaded %q again (first turn: %q)", sel, first)
	}
	reqs := e.up.Requests()
	if in := gjson.GetBytes(reqs[len(reqs)-1].Body, "input").Raw; strings.Contains(in, `<skill_context id=\"`+first) {
		t.Errorf("the second turn's input holds the envelope again: %.300s", in)
	}
}
