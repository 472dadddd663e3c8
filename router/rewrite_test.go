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

func TestRewriteRejects(t *testing.T) {
	snap := fixture(t)
	tests := []struct{ name, body, want string }{
		{"empty", ``, "request body is empty"},
		{"garbage", `{"messages":[}`, "not valid JSON"},
		{"array body", `[{"role":"user"}]`, "must be a JSON object"},
		{"no messages", `{"model":"m"}`, "missing required parameter: 'messages'"},
		{"messages null", `{"messages":null}`, "missing required parameter: 'messages'"},
		{"messages object", `{"messages":{"role":"user"}}`, "must be an array"},
		{"messages empty", `{"messages":[]}`, "must contain at least one message"},
		{"message not object", `{"messages":["hi"]}`, "'messages[0]' must be a message object, got a string"},
		{"no role", `{"messages":[{"content":"x"}]}`, "missing required parameter: 'messages[0].role'"},
		{"role number", `{"messages":[{"role":1}]}`, "'messages[0].role' must be a string"},
		{"content number", `{"messages":[{"role":"system","content":42},{"role":"user","content":"u"}]}`, "'messages[0].content' must be a string or an array of content parts, got a number"},
		{"content object", `{"messages":[{"role":"user","content":{"weird":true}}]}`, "'messages[0].content' must be a string or an array of content parts, got an object"},
		{"tools object", `{"messages":[{"role":"user","content":"x"}],"tools":{}}`, "'tools' must be an array"},
	}
	for _, tt := range tests {
		_, err := rewriteWithChat(context.Background(), []byte(tt.body), snap, nil, RewriteOptions{}, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	for _, o := range []RewriteOptions{{CatalogMode: "most"}, {AutoLoadRole: "assistant"}, {CatalogFormat: "yaml"}} {
		if _, err := rewriteWithChat(context.Background(), chat(t, "user", "x"), snap, nil, o, nil); err == nil {
			t.Errorf("options %+v: want error", o)
		}
	}
}

func TestMessagesFromChat(t *testing.T) {
	body := `{"messages":[
		{"role":"system","content":"S"},
		{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"},{"type":"text"},"junk"]},
		{"role":"assistant","content":null,"tool_calls":[]},
		{"role":"tool","tool_call_id":"1","content":"T"},
		{"role":"user"}]}`
	got, err := MessagesFromChat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []Message{{Role: "system", Text: "S"}, {Role: "user", Text: "a\nb"}, {Role: "assistant", Text: ""}, {Role: "tool", Text: "T"}, {Role: "user", Text: ""}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestRewriteCatalogPlacement(t *testing.T) {
	tests := []struct {
		name  string
		msgs  string
		check func(t *testing.T, out []Message)
	}{
		{"first system not at index 0", `[{"role":"user","content":"u"},{"role":"system","content":"S"},{"role":"developer","content":"D"}]`, func(t *testing.T, out []Message) {
			if !strings.HasPrefix(out[1].Text, "S\n\n## Agent Skills") || out[2].Text != "D" || out[0].Text != "u" {
				t.Errorf("catalog must go to the first system/developer message: %q", out)
			}
		}},
		{"null content", `[{"role":"system","content":null},{"role":"user","content":"u"}]`, func(t *testing.T, out []Message) {
			if !strings.HasPrefix(out[0].Text, "## Agent Skills") {
				t.Errorf("null content: %q", out[0].Text)
			}
		}},
		{"missing content", `[{"role":"system","name":"x"},{"role":"user","content":"u"}]`, func(t *testing.T, out []Message) {
			if !strings.HasPrefix(out[0].Text, "## Agent Skills") {
				t.Errorf("missing content: %q", out[0].Text)
			}
		}},
		{"empty parts", `[{"role":"system","content":[]},{"role":"user","content":"u"}]`, func(t *testing.T, out []Message) {
			if !strings.HasPrefix(out[0].Text, "## Agent Skills") {
				t.Errorf("empty parts: %q", out[0].Text)
			}
		}},
	}
	for _, tt := range tests {
		body := []byte(`{"messages":` + tt.msgs + `}`)
		rw := rewriteFixture(t, body, Decision{}, RewriteOptions{}, nil)
		checkPreserved(t, body, rw.Body)
		tt.check(t, upstreamMessages(t, rw.Body))
	}
}

func TestRewriteDedup(t *testing.T) {
	// An envelope arrives inside array content, with its id XML-escaped.
	env := `<skill_context id=\"team/release-notes\">…</skill_context> and <skill_context id=\"pdf-tools\"> too; not an envelope: <skill_context id=\"sql-review\" x>`
	body := []byte(`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"mcp__skillrouter__load_skill","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":[{"type":"text","text":"` + env + `"}]},{"role":"user","content":"again"}]}`)
	rw := rewriteFixture(t, body, Decision{Selected: []string{"team/release-notes", "pdf-tools", "sql-review"}}, RewriteOptions{}, nil)
	if got := rw.Decision.Selected; !slices.Equal(got, []string{"sql-review"}) {
		t.Fatalf("selected %v: envelopes already present must not be injected again", got)
	}
	// The same text in another tool's result (a fetched page), or in the
	// model's own words, is no skill the model loaded.
	for _, other := range []string{
		strings.Replace(string(body), "mcp__skillrouter__load_skill", "web_fetch", 1),
		`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"` + env + `"},{"role":"user","content":"again"}]}`,
	} {
		rw := rewriteFixture(t, []byte(other), Decision{Selected: []string{"team/release-notes", "pdf-tools", "sql-review"}}, RewriteOptions{}, nil)
		if got := rw.Decision.Selected; !slices.Equal(got, []string{"team/release-notes", "pdf-tools", "sql-review"}) {
			t.Errorf("selected %v: an envelope no load_skill returned counted as loaded in %s", got, other)
		}
	}
	if rw.Decision.Reasons["pdf-tools"] != "already in the conversation" {
		t.Fatalf("reasons %v", rw.Decision.Reasons)
	}
	res := rw.Session.Call(context.Background(), "c", ToolLoadSkill, json.RawMessage(`{"skill_id":"team/release-notes"}`))
	if !strings.Contains(res.Content, "already_active") {
		t.Fatalf("loading a present skill: %s", res.Content)
	}
	// The router's decision is copied, not modified.
	dec := Decision{Selected: []string{"pdf-tools"}, Reasons: map[string]string{"x": "y"}}
	rw2, err := rewriteWithChat(context.Background(), body, fixture(t), &dec, RewriteOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Reasons) != 1 || len(dec.Selected) != 1 || rw2.Decision == &dec {
		t.Fatal("RewriteWith modified the caller's decision")
	}
}

func TestRewriteUnknownAndDisabled(t *testing.T) {
	rw := rewriteFixture(t, chat(t, "user", "x"), Decision{Selected: []string{"ghost", "legacy-fax"}, Pinned: []string{"phantom"}}, RewriteOptions{}, nil)
	r := rw.Decision.Reasons
	if len(rw.Decision.Selected) != 0 || r["ghost"] == "" || !strings.Contains(r["legacy-fax"], "disabled") || !strings.Contains(r["phantom"], "mentioned") {
		t.Fatalf("decision %+v", rw.Decision)
	}
	// A mention forces even a disabled skill: the user asked for it by name.
	rw = rewriteFixture(t, chat(t, "user", "x"), Decision{Pinned: []string{"legacy-fax"}}, RewriteOptions{}, nil)
	if !slices.Equal(rw.Decision.Selected, []string{"legacy-fax"}) {
		t.Fatalf("pinned disabled skill: %+v", rw.Decision)
	}
}

func TestRewritePinnedIgnoresAutoLoadBudget(t *testing.T) {
	rw := rewriteFixture(t, chat(t, "user", "x"), Decision{Pinned: []string{"pdf-tools"}, Selected: []string{"sql-review"}}, RewriteOptions{AutoLoadBudgetTokens: 100}, nil)
	if !slices.Equal(rw.Decision.Selected, []string{"pdf-tools"}) || !strings.Contains(rw.Decision.Reasons["sql-review"], "auto-load budget") {
		t.Fatalf("decision %+v", rw.Decision)
	}
}

// TestMaxAutoLoadReasonCountsBudgetDrops: a skill max_auto_load kept out
// says the count included a pick the budget then left out, so that "1
// reached" does not stand beside no load at all.
func TestMaxAutoLoadReasonCountsBudgetDrops(t *testing.T) {
	dec := Decision{Selected: []string{"sql-review"}, Reasons: map[string]string{"csv-analysis": "max_auto_load 1 reached"}}
	rw := rewriteFixture(t, chat(t, "user", "x"), dec, RewriteOptions{AutoLoadBudgetTokens: 100}, nil)
	want := "max_auto_load 1 reached, counting sql-review, then left out for the auto-load budget"
	if len(rw.Decision.Selected) != 0 || rw.Decision.Reasons["csv-analysis"] != want {
		t.Fatalf("decision %+v", rw.Decision)
	}
	rw = rewriteFixture(t, chat(t, "user", "x"), dec, RewriteOptions{}, nil)
	if rw.Decision.Reasons["csv-analysis"] != "max_auto_load 1 reached" {
		t.Fatalf("with room for the pick: %+v", rw.Decision)
	}
}

// TestReasonTellsConfidenceFromThreshold: a confidence just below the
// threshold does not read as equal to it.
func TestReasonTellsConfidenceFromThreshold(t *testing.T) {
	ix := &rankIndex{list: []*skills.Skill{{ID: "a"}}, pos: map[string]int{"a": 0}}
	var d Decision
	ix.selectSkills(&d, &rankResult{n: 1, top: []rankEntry{{i: 0, conf: 0.1498, score: 0.3}}}, nil, 2, 0.15, 0.5)
	if got, want := d.Reasons["a"], "confidence 0.1498 below threshold 0.1500"; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
}

func TestApart(t *testing.T) {
	for _, tt := range []struct {
		x, limit float64
		a, b     string
	}{
		{0.1498, 0.15, "0.1498", "0.1500"},
		{0.12, 0.15, "0.120", "0.150"},
		{0.149999999, 0.15, "0.149999999", "0.150000000"},
	} {
		if a, b := apart(tt.x, tt.limit); a != tt.a || b != tt.b {
			t.Errorf("apart(%v, %v) = %s, %s; want %s, %s", tt.x, tt.limit, a, b, tt.a, tt.b)
		}
	}
}

func TestAddedTokens(t *testing.T) {
	body := chat(t, "user", "x")
	rw := rewriteFixture(t, body, Decision{Selected: []string{"pdf-tools", "sql-review"}}, RewriteOptions{}, nil)
	p := rw.Prompt
	sum := p.CatalogTokens + p.ToolTokens + MessageOverheadTokens // new system message
	for _, e := range p.Envelopes {
		sum += e.Tokens + MessageOverheadTokens
	}
	if rw.AddedTokens != sum || sum <= p.CatalogTokens {
		t.Fatalf("AddedTokens %d, parts sum to %d", rw.AddedTokens, sum)
	}
	none := rewriteFixture(t, body, Decision{}, RewriteOptions{NoTools: true}, nil)
	if none.AddedTokens != none.Prompt.CatalogTokens+MessageOverheadTokens || none.Prompt.ToolTokens != 0 {
		t.Fatalf("catalog only: %d", none.AddedTokens)
	}
}

func TestLoadSkillEnumDroppedWhenPartial(t *testing.T) {
	full := rewriteFixture(t, chat(t, "user", "x"), Decision{}, RewriteOptions{}, nil)
	part := rewriteFixture(t, chat(t, "user", "x"), Decision{}, RewriteOptions{CatalogBudgetTokens: 250}, nil)
	if !bytes.Contains(full.Body, []byte(`"enum":["api-design"`)) {
		t.Fatal("whole catalog: load_skill should list the ids")
	}
	if bytes.Contains(part.Body, []byte(`"enum"`)) || !json.Valid(part.Prompt.Tools[0].Parameters) {
		t.Fatal("partial catalog: load_skill must not carry an enum")
	}
}

func TestBuildPromptMatchesRewrite(t *testing.T) {
	snap := fixture(t)
	dec := Decision{Ranked: scored("sql-review", "pdf-tools"), Selected: []string{"sql-review"}}
	body := chat(t, "system", "s", "user", "check my query")
	rw := rewriteFixture(t, body, dec, RewriteOptions{CatalogBudgetTokens: 300}, nil)
	msgs, _ := MessagesFromChat(body)
	p, err := BuildPrompt(context.Background(), snap, &dec, msgs, RewriteOptions{CatalogBudgetTokens: 300})
	if err != nil {
		t.Fatal(err)
	}
	if p.AddedTokens != rw.AddedTokens || p.Catalog != rw.Prompt.Catalog || !slices.Equal(p.ToolNames, rw.Prompt.ToolNames) {
		t.Fatalf("BuildPrompt and RewriteWith disagree: %+v vs %+v", p, rw.Prompt)
	}
	if _, err := BuildPrompt(context.Background(), snap, nil, msgs, RewriteOptions{CatalogMode: "x"}); err == nil {
		t.Fatal("bad options: want error")
	}
}

func TestRewriteToolsPlacement(t *testing.T) {
	ld := `{"type":"function","function":{"name":"load_skill"`
	tests := []struct{ name, body, wantPrefix string }{
		{"tools before messages", `{"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`,
			`{"tools":[{"type":"function","function":{"name":"f"}},` + ld},
		{"tools null", `{"tools":null,"messages":[{"role":"user","content":"x"}]}`, `{"tools":[` + ld},
		{"tools empty after", `{"messages":[{"role":"user","content":"x"}], "tools" : [ ] , "temperature":1}`, ``},
		{"no tools, messages last", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]\n}", `{"model":"m","messages":[`},
	}
	for _, tt := range tests {
		rw := rewriteFixture(t, []byte(tt.body), Decision{}, RewriteOptions{}, nil)
		checkPreserved(t, []byte(tt.body), rw.Body)
		if !strings.HasPrefix(string(rw.Body), tt.wantPrefix) {
			t.Errorf("%s: %s", tt.name, rw.Body)
		}
		if names := toolNames(t, rw.Body); names[len(names)-1] != ToolLoadSkill {
			t.Errorf("%s: tools %v", tt.name, names)
		}
		var v map[string]any
		if err := json.Unmarshal(rw.Body, &v); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// TestClientLoadSkill: a client's own load_skill is never shadowed; when it
// takes no skill_id the catalog must not tell the model to call load_skill
// with an id, nor offer search_skills, whose results only load_skill takes.
func TestClientLoadSkill(t *testing.T) {
	tests := []struct {
		name, params string
		foreign      bool
	}{
		{"own tool", `{"type":"object","properties":{"slot":{"type":"integer"}}}`, true},
		{"no parameters", ``, true},
		{"the proxy's, as skills catalog --tool prints it", `{"type":"object","properties":{"skill_id":{"type":"string"}},"required":["skill_id"]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := `{"name":"load_skill"`
			if tt.params != "" {
				fn += `,"parameters":` + tt.params
			}
			body := []byte(`{"model":"m","messages":[{"role":"user","content":"check my query"}],"tools":[{"type":"function","function":` + fn + `}}]}`)
			rw := rewriteFixture(t, body, Decision{}, RewriteOptions{CatalogBudgetTokens: 250}, nil)
			p := rw.Prompt
			if !p.CatalogTruncated && p.CatalogHidden == 0 {
				t.Fatalf("want a cut catalog: %+v", p)
			}
			mentions := strings.Contains(p.Catalog, "load_skill")
			search := slices.Contains(p.ToolNames, ToolSearchSkills)
			if slices.Contains(p.ToolNames, ToolLoadSkill) {
				t.Fatalf("the client's load_skill was shadowed: %v", p.ToolNames)
			}
			if tt.foreign && (mentions || search) {
				t.Errorf("foreign load_skill: catalog names load_skill %v, search_skills offered %v\n%s", mentions, search, p.Catalog)
			}
			if !tt.foreign && (!mentions || !search) {
				t.Errorf("compatible load_skill: catalog names load_skill %v, search_skills offered %v\n%s", mentions, search, p.Catalog)
			}
		})
	}
}

// TestClientCustomToolNotShadowed: a custom (freeform) tool of the client's,
// Chat's {"type":"custom","custom":{"name":...}}, names a tool as a function
// does: the proxy adds no tool of that name (two tools of one name), and a
// custom load_skill, which takes no skill_id, counts as the client's own.
func TestClientCustomToolNotShadowed(t *testing.T) {
	for _, c := range []struct {
		name    string
		absent  []string
		present []string
	}{
		{ToolSearchSkills, []string{ToolSearchSkills}, []string{ToolLoadSkill}},
		{ToolLoadSkill, []string{ToolLoadSkill, ToolSearchSkills}, nil},
		{"apply_patch", nil, []string{ToolLoadSkill, ToolSearchSkills}},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(`{"model":"m","messages":[{"role":"user","content":"check my query"}],"tools":[{"type":"custom","custom":{"name":"` + c.name + `"}}]}`)
			rw := rewriteFixture(t, body, Decision{}, RewriteOptions{CatalogBudgetTokens: 250}, nil)
			for _, n := range c.absent {
				if slices.Contains(rw.Prompt.ToolNames, n) {
					t.Errorf("the proxy offers %s beside the client's custom tool: %v", n, rw.Prompt.ToolNames)
				}
				if rw.Session.Handles(n) {
					t.Errorf("the session answers the client's %s", n)
				}
			}
			for _, n := range c.present {
				if !slices.Contains(rw.Prompt.ToolNames, n) {
					t.Errorf("%s not offered: %v", n, rw.Prompt.ToolNames)
				}
			}
		})
	}
}
