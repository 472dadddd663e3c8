package router

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire/responses"
)

// A request continuing state stored upstream shows only its new input:
// the skills the proxy knows that state holds (Overrides.Present) are not
// auto-loaded again, and are active as envelopes in the request would be.
func TestRewritePresentFromStoredState(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	req, err := responses.Parse([]byte(`{"model":"m","previous_response_id":"resp_1","input":"extract the tables from this pdf file and merge two pdf documents"}`))
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Rewrite(context.Background(), req.View(), RewriteOptions{}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	loaded := first.Decision.Selected
	if len(loaded) == 0 {
		t.Fatal("the fixture auto-loads nothing for this query; the test needs a skill it does")
	}
	again, err := r.Rewrite(context.Background(), req.View(), RewriteOptions{}, Overrides{Present: append(slices.Clone(loaded), "not/in-library")})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range loaded {
		if slices.Contains(again.Decision.Selected, id) || again.Decision.Reasons[id] != "already in the conversation" {
			t.Errorf("%s auto-loaded again (selected %v, reasons %v)", id, again.Decision.Selected, again.Decision.Reasons)
		}
		if !slices.Contains(again.Session.Active(), id) {
			t.Errorf("%s not active: %v", id, again.Session.Active())
		}
	}
	if slices.Contains(again.Session.Active(), "not/in-library") {
		t.Error("an id the library lacks is active")
	}
	if again.AddedTokens >= first.AddedTokens {
		t.Errorf("added tokens %d, not fewer than %d", again.AddedTokens, first.AddedTokens)
	}
	// The stored state may have lost the body (truncation): load_skill of a
	// remembered skill gives it, once; then it is active as usual.
	args := json.RawMessage(`{"skill_id":"` + loaded[0] + `"}`)
	if res := again.Session.Call(context.Background(), "c1", ToolLoadSkill, args); !strings.Contains(res.Content, `<skill_context id="`+loaded[0]+`"`) {
		t.Errorf("load_skill of a remembered skill: %.200s", res.Content)
	}
	if res := again.Session.Call(context.Background(), "c2", ToolLoadSkill, args); !strings.Contains(res.Content, "already_active") {
		t.Errorf("load_skill again: %.200s", res.Content)
	}
}
