package router

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

// FuzzRewrite: arbitrary bytes never panic; a request the rewrite accepts
// comes out as valid JSON with every original message and field kept.
func FuzzRewrite(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "requests", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"x"}]}`,
		`{"messages":[{"role":"system","content":"\ud800"},{"role":"user","content":[{"type":"text","text":"#pdf-tools"}]}],"tools":null}`,
		`{"a":1,"messages":[{"role":"developer","content":[]}],"messages":[{"role":"user"}]}`,
		` {"messages" : [ {"role":"tool","content":"<skill_context id=\"pdf-tools\">"} ] } `,
		`{"messages":[{"role":"user","content":"x"}],"functions":[]}`,
		// A capped stream: the rewrite asks for usage (chat.Request.Render).
		`{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":100}`,
		`{"messages":[{"role":"user","content":"x"}],"stream":true,"max_completion_tokens":100,"stream_options":{"x":1}}`,
		`[]`, `{`, `"x"`, ``,
	} {
		f.Add([]byte(s))
	}
	snap := fixture(f)
	dec := &Decision{Ranked: scored("sql-review", "pdf-tools"), Selected: []string{"pdf-tools", "csv-analysis"}, Pinned: []string{"docker-deploy"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		rw, err := rewriteWithChat(context.Background(), body, snap, dec, RewriteOptions{CatalogBudgetTokens: 300}, nil)
		if _, perr := parseRequest(body); (err == nil) != (perr == nil) {
			t.Fatalf("RewriteWith err %v, parseRequest err %v", err, perr)
		}
		if err != nil {
			return
		}
		checkPreserved(t, body, rw.Body)
		if !rw.Session.Handles(ToolLoadSkill) {
			return // the request takes no tools (legacy functions, tool_choice none)
		}
		// The tool loop on top of it never panics either.
		next, err := rw.followUp(rw.Body, json.RawMessage(`{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"load_skill","arguments":"{}"}}]}`),
			[]ToolResult{rw.Session.Call(context.Background(), "1", ToolLoadSkill, body)})
		if errors.Is(err, wire.ErrBudgetSpent) {
			return // the body's output cap leaves no room for a follow-up: the answer ends there
		}
		if err != nil || !json.Valid(next) {
			t.Fatalf("follow-up: %v", err)
		}
	})
}

// FuzzFollowUp: arbitrary assistant messages and tool arguments never panic.
func FuzzFollowUp(f *testing.F) {
	f.Add([]byte(`{"role":"assistant","tool_calls":[{"index":0,"id":"a","function":{"name":"load_skill","arguments":"{\"skill_id\":\"pdf-tools\"}"}}]}`), "a", []byte(`{"skill_id":"pdf-tools"}`))
	f.Add([]byte(`{"tool_calls":[{"id":"a"},{"id":"a"}],"annotations":[]}`), "a", []byte(`"{\"query\":\"x\",\"limit\":-3}"`))
	f.Add([]byte(`{}`), "", []byte(`null`))
	snap := fixture(f)
	f.Fuzz(func(t *testing.T, assistant []byte, id string, args []byte) {
		rw, err := rewriteWithChat(context.Background(), []byte(`{"messages":[{"role":"user","content":"x"}]}`), snap, nil, RewriteOptions{CatalogBudgetTokens: 200}, &fakeSearch{hits: []Scored{{ID: "pdf-tools"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{ToolLoadSkill, ToolSearchSkills, "other"} {
			_ = rw.Session.Call(context.Background(), id, name, args)
		}
		out, err := rw.followUp(rw.Body, assistant, []ToolResult{{CallID: id, Content: "r"}})
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid follow-up body for assistant %q", assistant)
		}
	})
}
