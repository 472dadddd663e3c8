package router

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// newTestRouter ranks the fixture with bm25 (no embedder needed).
func newTestRouter(t testing.TB, snap *skills.Snapshot) *Router {
	t.Helper()
	r, err := New(context.Background(), snap, Options{Strategy: StrategyBM25})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func intp(n int) *int { return &n }

func TestRewriteChat(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	ctx := context.Background()
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"extract the tables from this pdf file and merge two pdf documents"}],"temperature":0}`)

	rw, err := rewriteChat(ctx, r, body, RewriteOptions{}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	checkPreserved(t, body, rw.Body)
	if !slices.Contains(rw.Decision.Selected, "pdf-tools") {
		t.Fatalf("pdf request selected %v (ranked %v)", rw.Decision.Selected, rw.Decision.Ranked)
	}
	msgs := upstreamMessages(t, rw.Body)
	if last := msgs[len(msgs)-1]; !strings.HasPrefix(last.Text, `<skill_context id="pdf-tools">`) || last.Role != "user" {
		t.Fatalf("envelope not appended last: %+v", last)
	}
	if !rw.Session.Handles(ToolLoadSkill) || rw.AddedTokens <= 0 {
		t.Fatal("session/tokens missing")
	}

	// Disable: the body goes upstream untouched.
	off, err := rewriteChat(ctx, r, body, RewriteOptions{}, Overrides{Disable: true})
	if err != nil || !bytes.Equal(off.Body, body) || !off.Disabled || off.Session.Handles(ToolLoadSkill) || off.AddedTokens != 0 {
		t.Fatalf("disable: %v %+v", err, off)
	}
	// Top-K 0: nothing auto-loaded, the catalog stays.
	none, err := rewriteChat(ctx, r, body, RewriteOptions{}, Overrides{TopK: intp(0)})
	if err != nil || len(none.Decision.Selected) != 0 || len(none.Prompt.Envelopes) != 0 || none.Prompt.Catalog == "" {
		t.Fatalf("top-k 0: %v %+v", err, none.Decision)
	}
	// Catalog mode override.
	en, err := rewriteChat(ctx, r, body, RewriteOptions{}, Overrides{CatalogMode: CatalogEnabled})
	if err != nil || !slices.Equal(en.Prompt.CatalogShown, []string{"api-design", "brand-voice"}) || !en.Session.Handles(ToolSearchSkills) {
		t.Fatalf("enabled override: %v %+v", err, en.Prompt)
	}
	if _, err := rewriteChat(ctx, r, body, RewriteOptions{}, Overrides{CatalogMode: "bogus"}); err == nil {
		t.Fatal("unknown catalog mode: want error")
	}
	if _, err := rewriteChat(ctx, r, []byte(`{"messages":[]}`), RewriteOptions{}, Overrides{}); err == nil {
		t.Fatal("empty messages: want error")
	}
	var nilRouter *Router
	if _, err := rewriteChat(ctx, nilRouter, body, RewriteOptions{}, Overrides{}); err == nil {
		t.Fatal("nil router: want error")
	}
}

func TestRewriteChatMention(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	body := chat(t, "user", "#docker-deploy set up compose for the invoice API")
	rw, err := rewriteChat(context.Background(), r, body, RewriteOptions{}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rw.Decision.Selected) == 0 || rw.Decision.Selected[0] != "docker-deploy" {
		t.Fatalf("mention must force-load first: %+v", rw.Decision)
	}
	if !strings.Contains(rw.Prompt.Catalog, "<prioritized_skills>docker-deploy</prioritized_skills>") {
		t.Fatalf("no prioritized line:\n%s", rw.Prompt.Catalog)
	}
}

func TestRewriteChatSearchSkills(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	rw, err := rewriteChat(context.Background(), r, chat(t, "user", "hello"), RewriteOptions{CatalogBudgetTokens: 200}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if !rw.Session.Handles(ToolSearchSkills) {
		t.Fatal("partial catalog must offer search_skills")
	}
	res := rw.Session.Call(context.Background(), "c", ToolSearchSkills, json.RawMessage(`{"query":"sql query review injection","limit":2}`))
	var out struct {
		Results []searchHit `json:"results"`
	}
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil || len(out.Results) == 0 || out.Results[0].ID != "sql-review" {
		t.Fatalf("search answer %s", res.Content)
	}
}

// TestCatalogAnchoredAcrossTurns: with a shortened catalog, the system
// message stays byte-identical from turn to turn although the latest
// message changes topic; per-turn ranking would change it.
func TestCatalogAnchoredAcrossTurns(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	ctx := context.Background()
	turn1 := chat(t, "system", "sys", "user", "review this sql migration for locking problems")
	turn2 := chat(t, "system", "sys", "user", "review this sql migration for locking problems", "assistant", "done", "user", "now resize the product images to 800px")
	opts := RewriteOptions{CatalogBudgetTokens: 260}
	first := func(body []byte, o RewriteOptions) (string, *chatRewrite) {
		rw, err := rewriteChat(ctx, r, body, o, Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		if rw.Prompt.CatalogHidden == 0 {
			t.Fatal("test needs a shortened catalog")
		}
		return upstreamMessages(t, rw.Body)[0].Text, rw
	}
	s1, _ := first(turn1, opts)
	s2, rw2 := first(turn2, opts)
	if s1 != s2 {
		t.Fatalf("system message changed between turns:\n%s\n---\n%s", s1, s2)
	}
	if !slices.Contains(rw2.Decision.Selected, "image-resize") {
		t.Fatalf("the latest message must still drive auto-loading: %v", rw2.Decision.Selected)
	}
	opts.CatalogPerTurn = true
	p1, _ := first(turn1, opts)
	p2, _ := first(turn2, opts)
	if p1 == p2 {
		t.Fatal("per-turn ranking should follow the latest message")
	}
}

func TestPromptMatchesRewriteChat(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	ctx := context.Background()
	body := chat(t, "user", "write a commit message for my staged diff")
	rw, err := rewriteChat(ctx, r, body, RewriteOptions{}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := MessagesFromChat(body)
	p, err := r.Prompt(ctx, Query{Messages: msgs}, RewriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.AddedTokens != rw.AddedTokens || p.Catalog != rw.Prompt.Catalog || !slices.Equal(p.Decision.Selected, rw.Decision.Selected) {
		t.Fatalf("Prompt %+v\nRewriteChat %+v", p, rw.Prompt)
	}
	empty := &Router{}
	if _, err := empty.Prompt(ctx, Query{Messages: msgs}, RewriteOptions{}); err == nil {
		t.Fatal("router without a library: want error")
	}
}
