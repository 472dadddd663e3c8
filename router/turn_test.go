package router

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

func TestTurnKey(t *testing.T) {
	TurnKey := func(r *wire.Request) (string, bool) { return turnKey(r, conversationID(r.Turns)) }
	turns := func(ts ...string) *wire.Request {
		r := &wire.Request{}
		for _, s := range ts {
			role, text, _ := strings.Cut(s, ":")
			r.Turns = append(r.Turns, wire.Turn{Role: role, Text: text})
		}
		return r
	}
	first, cont := TurnKey(turns("system:s", "user:fix my sql"))
	if first == "" || cont {
		t.Fatalf("the turn's first request: key %q, continues %v", first, cont)
	}
	for _, tt := range []struct {
		name      string
		req       *wire.Request
		same      bool
		continues bool
	}{
		{"a step: the model's call and the tool's output", turns("system:s", "user:fix my sql", "assistant:", "tool:ok"), true, true},
		{"harness text after the ask is no ask", turns("system:s", "user:fix my sql", "assistant:", "tool:ok", "user: "), true, true},
		{"a new ask", turns("system:s", "user:fix my sql", "assistant:done", "user:fix my sql"), false, false},
		{"another system prompt", turns("system:t", "user:fix my sql", "assistant:", "tool:ok"), false, true},
		{"another conversation", turns("system:s", "user:fix my css", "assistant:", "tool:ok"), false, true},
	} {
		key, c := TurnKey(tt.req)
		if (key == first) != tt.same || c != tt.continues {
			t.Errorf("%s: same key %v (want %v), continues %v (want %v)", tt.name, key == first, tt.same, c, tt.continues)
		}
	}
	if key, _ := TurnKey(turns("system:s", "assistant:hi")); key != "" {
		t.Error("a request without a user ask has a turn")
	}
	stored := turns("user:fix my sql", "tool:ok")
	stored.Stateful = true
	if key, _ := TurnKey(stored); key != "" {
		t.Error("a request continuing stored state has a turn (presence covers it)")
	}
}

// Skills carried from earlier in the turn are loaded again after the last
// message, whatever the auto-load budget, count as active, and leave the
// catalog (the cached prefix) as it was; unknown ones and ones the request
// shows already are not added.
func TestRewriteCarried(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	ctx := context.Background()
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"extract the tables from this pdf file"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"done"}]}`)
	opts := RewriteOptions{AutoLoadBudgetTokens: 10}
	plain, err := rewriteChat(ctx, r, body, opts, Overrides{TopK: intp(0)})
	if err != nil {
		t.Fatal(err)
	}
	var asked []string // the turns Carried was asked about
	carried := func(ids ...string) func(string) []string {
		return func(turn string) []string { asked = append(asked, turn); return ids }
	}
	rw, err := rewriteChat(ctx, r, body, opts, Overrides{TopK: intp(0), Carried: carried("sql-review", "ghost")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rw.Decision.Selected, []string{"sql-review"}) {
		t.Fatalf("selected %v, want the carried sql-review", rw.Decision.Selected)
	}
	msgs := upstreamMessages(t, rw.Body)
	if last := msgs[len(msgs)-1]; !strings.Contains(last.Text, `<skill_context id="sql-review">`) {
		t.Fatalf("the carried body is not after the last message: %+v", last)
	}
	if got, want := upstreamMessages(t, rw.Body)[0].Text, upstreamMessages(t, plain.Body)[0].Text; got != want {
		t.Fatal("carrying a skill changed the system prompt")
	}
	res := rw.Session.Call(ctx, "c2", ToolLoadSkill, json.RawMessage(`{"skill_id":"sql-review"}`))
	if !strings.Contains(res.Content, "already_active") {
		t.Fatalf("a carried skill is not active: %s", res.Content)
	}
	// Shown in the request already: not added again.
	shown := []byte(strings.Replace(strings.Replace(string(body), `"content":"done"`, `"content":"done <skill_context id=\"sql-review\">x</skill_context>"`, 1), `"name":"bash"`, `"name":"load_skill"`, 1))
	rw, err = rewriteChat(ctx, r, shown, opts, Overrides{TopK: intp(0), Carried: carried("sql-review")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rw.Decision.Selected) != 0 {
		t.Fatalf("selected %v: the request shows the skill already", rw.Decision.Selected)
	}
}

// A rewrite names its turn and asks Overrides.Carried about it only for a
// later step of the turn.
func TestRewriteTurn(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	ctx := context.Background()
	ask := `{"role":"system","content":"sys"},{"role":"user","content":"extract the tables from this pdf file"}`
	var asked []string
	ov := Overrides{Carried: func(turn string) []string { asked = append(asked, turn); return nil }}
	first, err := rewriteChat(ctx, r, []byte(`{"messages":[`+ask+`]}`), RewriteOptions{}, ov)
	if err != nil {
		t.Fatal(err)
	}
	step, err := rewriteChat(ctx, r, []byte(`{"messages":[`+ask+`,{"role":"assistant","content":"ok"},{"role":"tool","tool_call_id":"c","content":"x"}]}`), RewriteOptions{}, ov)
	if err != nil {
		t.Fatal(err)
	}
	if first.Turn == "" || step.Turn != first.Turn || len(asked) != 1 || asked[0] != first.Turn {
		t.Fatalf("turns %q and %q, Carried asked about %q", first.Turn, step.Turn, asked)
	}
}
