package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func rewriteFixture(t *testing.T, body []byte, dec Decision, opts RewriteOptions, search Searcher) *chatRewrite {
	t.Helper()
	rw, err := rewriteWithChat(context.Background(), body, fixture(t), &dec, opts, search)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

func TestSessionLoadSkill(t *testing.T) {
	body := chat(t, "system", "s", "user", "make a pdf")
	rw := rewriteFixture(t, body, Decision{Selected: []string{"git-commit-messages"}}, RewriteOptions{}, nil)
	s := rw.Session
	ctx := context.Background()
	tests := []struct {
		name, args string
		prefix     string // the answer starts with this
		contains   string
	}{
		{"found", `{"skill_id":"pdf-tools"}`, `<skill_context id="pdf-tools">`, "</skill_context>"},
		{"second time", `{"skill_id":"pdf-tools"}`, `<skill_status id="pdf-tools" status="already_active">`, "already loaded"},
		{"auto-loaded earlier", `{"skill_id":"git-commit-messages"}`, `<skill_status id="git-commit-messages"`, "already_active"},
		{"by name", `{"skill_id":"release-notes"}`, `<skill_context id="team/release-notes">`, ""},
		{"double-encoded", `"{\"skill_id\":\"csv-analysis\"}"`, `<skill_context id="csv-analysis">`, ""},
		{"mention copied", `{"skill_id":"#docker-deploy"}`, `<skill_context id="docker-deploy">`, ""},
		{"alias field", `{"id":"sql-review"}`, `<skill_context id="sql-review">`, ""},
		{"unknown", `{"skill_id":"nope-skill"}`, `<skill_error id="nope-skill" reason="not_found">`, "unavailable"},
		{"typo suggests", `{"skill_id":"api-desing"}`, `<skill_error id="api-desing" reason="not_found">`, "<id>api-design</id>"},
		{"malformed", `{"skill_id":`, `<skill_error id="" reason="invalid_arguments">`, "not valid JSON"},
		{"array", `["pdf-tools"]`, `<skill_error id="" reason="invalid_arguments">`, "JSON object"},
		{"wrong type", `{"skill_id":5}`, `<skill_error id="" reason="invalid_arguments">`, `argument "skill_id" must be a string, got number`},
		{"empty", ``, `<skill_error id="" reason="invalid_arguments">`, "skill_id is required"},
		{"blank id", `{"skill_id":"  "}`, `<skill_error id="" reason="invalid_arguments">`, "skill_id is required"},
	}
	for _, tt := range tests {
		res := s.Call(ctx, "call_"+tt.name, ToolLoadSkill, json.RawMessage(tt.args))
		if res.CallID != "call_"+tt.name || res.Name != ToolLoadSkill {
			t.Errorf("%s: result ids %q/%q", tt.name, res.CallID, res.Name)
		}
		if !strings.HasPrefix(res.Content, tt.prefix) || !strings.Contains(res.Content, tt.contains) {
			t.Errorf("%s: answer\n%s\nwant prefix %q containing %q", tt.name, res.Content, tt.prefix, tt.contains)
		}
	}
	if got, want := s.Loaded(), []string{"pdf-tools", "team/release-notes", "csv-analysis", "docker-deploy", "sql-review"}; !slices.Equal(got, want) {
		t.Errorf("Loaded() = %v, want %v", got, want)
	}
	if got := s.ToolCalls()[ToolLoadSkill]; got != len(tests) {
		t.Errorf("ToolCalls()[load_skill] = %d, want %d", got, len(tests))
	}
}

func TestSessionHandles(t *testing.T) {
	body := chat(t, "user", "hi")
	tests := []struct {
		name string
		body []byte
		opts RewriteOptions
		want map[string]bool
	}{
		{"default, whole catalog", body, RewriteOptions{}, map[string]bool{ToolLoadSkill: true, ToolSearchSkills: false, "run_shell": false}},
		{"partial catalog offers search", body, RewriteOptions{CatalogBudgetTokens: 200}, map[string]bool{ToolLoadSkill: true, ToolSearchSkills: true}},
		{"no tools", body, RewriteOptions{NoTools: true, CatalogBudgetTokens: 200}, map[string]bool{ToolLoadSkill: false, ToolSearchSkills: false}},
		{"client owns load_skill", []byte(`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"load_skill"}}]}`),
			RewriteOptions{}, map[string]bool{ToolLoadSkill: false}},
		{"legacy functions", []byte(`{"messages":[{"role":"user","content":"x"}],"functions":[{"name":"f"}]}`),
			RewriteOptions{}, map[string]bool{ToolLoadSkill: false}},
		{"tool_choice none", []byte(`{"messages":[{"role":"user","content":"x"}],"tool_choice": "none"}`),
			RewriteOptions{}, map[string]bool{ToolLoadSkill: false}},
	}
	for _, tt := range tests {
		rw := rewriteFixture(t, tt.body, Decision{}, tt.opts, nil)
		for name, want := range tt.want {
			if got := rw.Session.Handles(name); got != want {
				t.Errorf("%s: Handles(%s) = %v, want %v", tt.name, name, got, want)
			}
		}
		if (tt.name == "legacy functions" || tt.name == "tool_choice none") && strings.Contains(string(rw.Body), `"tools"`) {
			t.Errorf("%s: tools added: %s", tt.name, rw.Body)
		}
		// Without the tool, the catalog must not tell the model to call it.
		if !tt.want[ToolLoadSkill] && tt.name != "client owns load_skill" && strings.Contains(string(rw.Body), "use the load_skill") {
			t.Errorf("%s: the catalog tells the model to call load_skill: %.300s", tt.name, rw.Body)
		}
	}
	var zero *Session
	if zero.Handles(ToolLoadSkill) || (&Session{}).Handles(ToolLoadSkill) {
		t.Error("a nil or zero session handles nothing")
	}
	if res := (&Session{}).Call(context.Background(), "c", ToolLoadSkill, nil); !strings.Contains(res.Content, "unknown_tool") {
		t.Errorf("zero session answer: %s", res.Content)
	}
}

func TestSessionSearchSkills(t *testing.T) {
	fs := &fakeSearch{hits: []Scored{{ID: "legacy-fax"}, {ID: "sql-review"}, {ID: "gone"}, {ID: "data-pipeline"}, {ID: "pdf-tools"}}}
	rw := rewriteFixture(t, chat(t, "user", "db"), Decision{}, RewriteOptions{CatalogBudgetTokens: 200, DescriptionLimit: 40}, fs)
	s := rw.Session
	ctx := context.Background()
	type result struct {
		Query   string      `json:"query"`
		Results []searchHit `json:"results"`
	}
	call := func(args string) (result, string) {
		res := s.Call(ctx, "c", ToolSearchSkills, json.RawMessage(args))
		var r result
		_ = json.Unmarshal([]byte(res.Content), &r)
		return r, res.Content
	}
	r, raw := call(`{"query":"database review","limit":2}`)
	if got := []string{}; true {
		for _, h := range r.Results {
			got = append(got, h.ID)
		}
		if !slices.Equal(got, []string{"sql-review", "data-pipeline"}) {
			t.Fatalf("search results %v (disabled and unknown skills must be skipped): %s", got, raw)
		}
	}
	if r.Query != "database review" || !strings.HasSuffix(r.Results[1].Description, "…") || len(r.Results[1].Description) > 45 {
		t.Errorf("descriptions should be truncated to the limit: %s", raw)
	}
	r, _ = call(`{"query":"x"}`)
	if len(r.Results) != 3 {
		t.Errorf("default limit: %d results, want the 3 valid of 5+4 asked", len(r.Results))
	}
	r, _ = call(`{"query":"x","limit":500}`)
	if len(r.Results) != 3 {
		t.Errorf("clamped limit: %d results", len(r.Results))
	}
	for _, bad := range []string{`{}`, `{"query":""}`, `{"query":7}`, `nope`, `{"query":"x","limit":"many"}`} {
		if _, raw := call(bad); !strings.Contains(raw, `"type":"invalid_arguments"`) {
			t.Errorf("%s: want invalid_arguments, got %s", bad, raw)
		}
	}
	if _, raw := call(`{"query":"x"}`); !strings.Contains(raw, "load_skill") {
		t.Errorf("result should say how to load: %s", raw)
	}
	empty := rewriteFixture(t, chat(t, "user", "db"), Decision{}, RewriteOptions{CatalogBudgetTokens: 200}, &fakeSearch{})
	if res := empty.Session.Call(ctx, "c", ToolSearchSkills, json.RawMessage(`{"query":"zzz"}`)); !strings.Contains(res.Content, `"results":[]`) {
		t.Errorf("no hits: %s", res.Content)
	}
}

func TestSessionTier3(t *testing.T) {
	prov := &fakeProvider{}
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"resize the logos"}],"tools":[{"type":"function","function":{"name":"read_skill_resource"}}]}`)
	rw := rewriteFixture(t, body, Decision{Selected: []string{"pdf-tools"}}, RewriteOptions{Tools: prov}, nil)
	s := rw.Session
	// The client defines read_skill_resource itself: ours is not offered.
	if s.Handles("read_skill_resource") {
		t.Fatal("a tool the client defines must not be answered server-side")
	}
	if got := toolNames(t, rw.Body); !slices.Equal(got, []string{"read_skill_resource", "load_skill"}) {
		t.Fatalf("tools %v", got)
	}
	ctx := context.Background()
	if s.Handles("run_image-resize") {
		t.Fatal("run_image-resize offered before image-resize is active")
	}
	s.Call(ctx, "c1", ToolLoadSkill, json.RawMessage(`{"skill_id":"image-resize"}`))
	if !s.Handles("run_image-resize") {
		t.Fatal("loading an executable skill must offer its tool")
	}
	assistant := json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"image-resize\"}"}}]}`)
	next, err := rw.followUp(rw.Body, assistant, []ToolResult{{CallID: "c1", Name: ToolLoadSkill, Content: "env"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, next); !slices.Equal(got, []string{"read_skill_resource", "load_skill", "run_image-resize"}) {
		t.Fatalf("tools after load: %v", got)
	}
	res := s.Call(ctx, "c2", "run_image-resize", json.RawMessage(`{}`))
	if res.Content != "ran run_image-resize" {
		t.Fatalf("tier-3 answer %q", res.Content)
	}
	tool := prov.tools["run_image-resize"]
	if len(tool.got) != 1 || tool.got[0].Conversation != s.Conversation() || s.Conversation() == "" {
		t.Fatalf("tool call got %+v, conversation %q", tool.got, s.Conversation())
	}
	tool.err = errors.New("boom")
	if res := s.Call(ctx, "c3", "run_image-resize", nil); !strings.Contains(res.Content, `"type":"tool_failed"`) || !strings.Contains(res.Content, "boom") {
		t.Fatalf("failing tool answer %s", res.Content)
	}
	if got := prov.calls; len(got) != 2 || !slices.Equal(got[1], []string{"pdf-tools", "image-resize"}) {
		t.Fatalf("provider saw active sets %v", got)
	}
}

func TestFollowUp(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"client_fn"}}],"n":1}`)
	rw := rewriteFixture(t, body, Decision{}, RewriteOptions{}, nil)

	assistant := json.RawMessage(`{"role":"assistant","content":"Let me look.","annotations":[],"tool_calls":[` +
		`{"index":0,"id":"a","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"pdf-tools\"}"}},` +
		`{"index":1,"id":"b","type":"function","function":{"name":"client_fn","arguments":"{}"}},` +
		`{"index":2,"id":"c","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"}}]}`)
	results := []ToolResult{{CallID: "c", Name: ToolLoadSkill, Content: "not found"}, {CallID: "a", Name: ToolLoadSkill, Content: "<skill_context id=\"pdf-tools\">"}}
	next, err := rw.followUp(rw.Body, assistant, results)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    *string         `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  json.RawMessage `json:"tool_calls"`
			Other      json.RawMessage `json:"annotations"`
		} `json:"messages"`
		N int `json:"n"`
	}
	if err := json.Unmarshal(next, &req); err != nil {
		t.Fatalf("%v\n%s", err, next)
	}
	ms := req.Messages
	if len(ms) != 5 || req.N != 1 {
		t.Fatalf("want system, user, assistant, 2 tool messages; got %d: %s", len(ms), next)
	}
	a := ms[2]
	if a.Role != "assistant" || a.Content == nil || *a.Content != "Let me look." || a.Other != nil {
		t.Fatalf("assistant message %s", next)
	}
	if got := string(a.ToolCalls); got != `[{"id":"a","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"pdf-tools\"}"}},{"id":"c","type":"function","function":{"name":"load_skill","arguments":"{\"skill_id\":\"x\"}"}}]` {
		t.Fatalf("tool_calls: only the answered ones, without index: %s", got)
	}
	if ms[3].ToolCallID != "a" || ms[4].ToolCallID != "c" || *ms[3].Content != `<skill_context id="pdf-tools">` || ms[3].Role != "tool" {
		t.Fatalf("tool messages in call order: %s", next)
	}
	if got := toolNames(t, next); !slices.Equal(got, []string{"client_fn", "load_skill"}) {
		t.Fatalf("tools %v", got)
	}
	// The original prefix of the request is untouched.
	if !strings.HasPrefix(string(next), string(rw.Body[:strings.Index(string(rw.Body), `{"role":"user"`)])) {
		t.Fatal("follow-up changed the start of the request")
	}

	errCases := []struct {
		name      string
		assistant string
		results   []ToolResult
	}{
		{"unknown id", `{"role":"assistant","tool_calls":[{"id":"a"}]}`, []ToolResult{{CallID: "zz"}}},
		{"no tool_calls", `{"role":"assistant","content":"x"}`, []ToolResult{{CallID: "a"}}},
		{"not json", `{"role":`, []ToolResult{{CallID: "a"}}},
		{"not object", `[1]`, []ToolResult{{CallID: "a"}}},
		{"empty call id", `{"tool_calls":[{"id":""}]}`, []ToolResult{{CallID: ""}}},
	}
	for _, ec := range errCases {
		if _, err := rw.followUp(rw.Body, json.RawMessage(ec.assistant), ec.results); err == nil {
			t.Errorf("%s: want error", ec.name)
		}
	}
	if _, err := rw.followUp([]byte(`{"messages":`), assistant, results); err == nil {
		t.Error("broken body: want error")
	}
	same, err := rw.followUp(rw.Body, assistant, nil)
	if err != nil || string(same) != string(rw.Body) {
		t.Error("no results: body unchanged")
	}
	// A role-less assistant message gets one.
	out, err := rw.followUp(rw.Body, json.RawMessage(`{"tool_calls":[{"id":"a","function":{"name":"load_skill","arguments":"{}"}}]}`), []ToolResult{{CallID: "a", Content: "x"}})
	if err != nil || !strings.Contains(string(out), `"role":"assistant"`) {
		t.Errorf("role-less assistant: %v %s", err, out)
	}
	// A zero session still appends (nothing server-side to refresh).
	if out, err := rw.followUp(rw.Body, assistant, results); err != nil || !json.Valid(out) {
		t.Errorf("zero session follow-up: %v", err)
	}
}

func TestSessionConcurrentCalls(t *testing.T) {
	prov := &fakeProvider{}
	rw := rewriteFixture(t, chat(t, "user", "x"), Decision{}, RewriteOptions{Tools: prov, CatalogBudgetTokens: 200}, &fakeSearch{hits: []Scored{{ID: "pdf-tools"}}})
	s := rw.Session
	ids := []string{"pdf-tools", "image-resize", "csv-analysis", "sql-review", "pdf-tools", "image-resize"}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.Call(context.Background(), fmt.Sprint(i), ToolLoadSkill, json.RawMessage(`{"skill_id":"`+id+`"}`))
		}()
		go func() {
			defer wg.Done()
			s.Call(context.Background(), fmt.Sprint(i), ToolSearchSkills, json.RawMessage(`{"query":"q"}`))
			s.Handles("run_image-resize")
		}()
	}
	wg.Wait()
	if got := len(s.Loaded()); got != 4 {
		t.Fatalf("loaded %v, want each skill once", s.Loaded())
	}
	if !s.Handles("run_image-resize") {
		t.Fatal("the newest activation set must win: run_image-resize missing")
	}
}

func TestConversationID(t *testing.T) {
	turn1 := []Message{{Role: "system", Text: "s"}, {Role: "user", Text: "first"}}
	turn2 := append(slices.Clone(turn1), Message{Role: "assistant", Text: "a"}, Message{Role: "user", Text: "second"})
	if conversationID(turn1) != conversationID(turn2) {
		t.Fatal("conversation id changed between turns")
	}
	if conversationID(turn1) == conversationID([]Message{{Role: "system", Text: "s"}, {Role: "user", Text: "other"}}) {
		t.Fatal("different conversations share an id")
	}
	if conversationID([]Message{{Role: "system", Text: "ab"}, {Role: "user", Text: "c"}}) == conversationID([]Message{{Role: "system", Text: "a"}, {Role: "user", Text: "bc"}}) {
		t.Fatal("ids must not collide on shifted boundaries")
	}
}

// TestReviewF15SearchLimitNotWhole: search_skills with "limit": 2.5 (MCP
// hosts and models send it) answered `argument "limit" must be a number,
// got number 2.5`: the value is a number, the message contradicts itself.
// It must say a whole number is wanted.
func TestReviewF15SearchLimitNotWhole(t *testing.T) {
	rw := rewriteFixture(t, chat(t, "user", "db"), Decision{}, RewriteOptions{CatalogBudgetTokens: 200}, &fakeSearch{})
	res := rw.Session.Call(context.Background(), "c", ToolSearchSkills, json.RawMessage(`{"query":"db","limit":2.5}`))
	if !strings.Contains(res.Content, `argument \"limit\" must be a whole number, got number 2.5`) {
		t.Errorf("search_skills limit 2.5: %s", res.Content)
	}
}

// TestConversationIDFormat: the id is the digest of the same bytes as
// ever (conversation folders and anchors are named by it), written
// without fmt now.
func TestConversationIDFormat(t *testing.T) {
	ref := func(msgs []Message) string {
		h := sha256.New()
		var sys, user bool
		for _, m := range msgs {
			switch {
			case !sys && (m.Role == "system" || m.Role == "developer"):
				sys = true
				fmt.Fprintf(h, "system\x00%d\x00%s\x00", len(m.Text), m.Text)
			case !user && m.Role == "user":
				user = true
				fmt.Fprintf(h, "user\x00%d\x00%s\x00", len(m.Text), m.Text)
			}
		}
		return hex.EncodeToString(h.Sum(nil)[:12])
	}
	for _, msgs := range [][]Message{
		nil,
		{{Role: "user", Text: "hello"}},
		{{Role: "developer", Text: "be brief"}, {Role: "assistant", Text: "x"}, {Role: "user", Text: "日本語\x00%d"}, {Role: "user", Text: "later"}},
		{{Role: "system", Text: ""}, {Role: "system", Text: "second"}, {Role: "user", Text: strings.Repeat("long ", 2000)}},
	} {
		if got, want := conversationID(msgs), ref(msgs); got != want {
			t.Errorf("%v: %s, want %s", msgs, got, want)
		}
	}
}

// TestLoadSkillNotFoundNamesOfferedTools: the next step names search_skills
// only when the request was offered it.
func TestLoadSkillNotFoundNamesOfferedTools(t *testing.T) {
	body := chat(t, "user", "x")
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		opts   RewriteOptions
		search bool
	}{{"whole catalog", RewriteOptions{}, false}, {"cut catalog", RewriteOptions{CatalogBudgetTokens: 250}, true}} {
		rw := rewriteFixture(t, body, Decision{}, tt.opts, nil)
		res := rw.Session.Call(ctx, "c", ToolLoadSkill, json.RawMessage(`{"skill_id":"zzz-nothing-like-it"}`))
		if got := strings.Contains(res.Content, "search_skills"); got != tt.search || !strings.Contains(res.Content, `reason="not_found"`) {
			t.Errorf("%s: names search_skills %v, want %v:\n%s", tt.name, got, tt.search, res.Content)
		}
		if !res.Failed {
			t.Errorf("%s: a not-found result is not marked failed (Messages' is_error)", tt.name)
		}
	}
}
