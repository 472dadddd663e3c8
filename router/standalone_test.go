package router

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

type countingSearcher struct {
	r *Router
	n int
}

func (c *countingSearcher) Search(ctx context.Context, q string, limit int) []Scored {
	c.n++
	return c.r.Search(ctx, q, limit)
}

func TestNewSession(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	ctx := context.Background()
	tools := &fakeProvider{}
	cs := &countingSearcher{r: r}
	s, err := r.NewSession(ctx, SessionOptions{
		Rewrite: RewriteOptions{Tools: tools}, Conversation: "conv-1", Active: []string{"pdf-tools", "no-such-skill"}, Search: cs,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Active(); !slices.Equal(got, []string{"pdf-tools"}) {
		t.Errorf("active %v", got)
	}
	for _, name := range []string{ToolLoadSkill, ToolSearchSkills, "read_skill_resource"} {
		if !s.Handles(name) {
			t.Errorf("%s not offered", name)
		}
	}
	// The same answers as a rewritten request's session.
	rw, err := rewriteChat(ctx, r, chat(t, "user", "hi"), RewriteOptions{CatalogBudgetTokens: 1}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, args string }{
		{ToolLoadSkill, `{"skill_id":"git-commit-messages"}`},
		{ToolLoadSkill, `{"skill_id":"nope"}`},
		{ToolSearchSkills, `{"query":"merge pdf files","limit":3}`},
	} {
		got := s.Call(ctx, "1", c.name, json.RawMessage(c.args)).Content
		want := rw.Session.Call(ctx, "1", c.name, json.RawMessage(c.args)).Content
		if got != want {
			t.Errorf("%s %s:\n%s\n%s", c.name, c.args, got, want)
		}
	}
	if cs.n != 1 {
		t.Errorf("search_skills used the given searcher %d times", cs.n)
	}
	// An active skill is already loaded; tier-3 tools see the conversation.
	if got := s.Call(ctx, "2", ToolLoadSkill, json.RawMessage(`{"skill_id":"pdf-tools"}`)).Content; !strings.Contains(got, "already_active") {
		t.Errorf("active skill: %s", got)
	}
	s.Call(ctx, "3", "read_skill_resource", json.RawMessage(`{}`))
	if got := tools.tools["read_skill_resource"].got; len(got) != 1 || got[0].Conversation != "conv-1" {
		t.Errorf("tier-3 calls %+v", got)
	}
	if _, err := r.NewSession(ctx, SessionOptions{Rewrite: RewriteOptions{AutoLoadRole: "bogus"}}); err == nil {
		t.Error("bad options accepted")
	}
}
