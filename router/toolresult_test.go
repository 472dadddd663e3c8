package router

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// Every answer load_skill and search_skills give is told apart by its
// shape alone (a stored read-back goes by it where the call is out of
// reach); what a client's own tool could answer is not.
func TestIsToolResult(t *testing.T) {
	ctx := context.Background()
	rw := rewriteFixture(t, chat(t, "system", "s", "user", "make a pdf"), Decision{Selected: []string{"git-commit-messages"}},
		RewriteOptions{CatalogBudgetTokens: 200}, &fakeSearch{hits: []Scored{{ID: "sql-review"}, {ID: "pdf-tools"}}})
	s := rw.Session
	answers := map[string]string{}
	for name, args := range map[string]string{
		"envelope": `{"skill_id":"pdf-tools"}`, "not found": `{"skill_id":"nope-skill"}`, "suggestions": `{"skill_id":"api-desing"}`,
		"malformed": `{"skill_id":`, "empty": ``,
	} {
		answers["load_skill, "+name] = s.Call(ctx, "c", ToolLoadSkill, json.RawMessage(args)).Content
	}
	answers["load_skill, already active"] = s.Call(ctx, "c", ToolLoadSkill, json.RawMessage(`{"skill_id":"pdf-tools"}`)).Content
	for name, args := range map[string]string{"hits": `{"query":"database"}`, "invalid": `{"query":7}`, "no query": `{}`} {
		answers["search_skills, "+name] = s.Call(ctx, "c", ToolSearchSkills, json.RawMessage(args)).Content
	}
	empty := rewriteFixture(t, chat(t, "user", "db"), Decision{}, RewriteOptions{CatalogBudgetTokens: 200}, &fakeSearch{})
	answers["search_skills, no hits"] = empty.Session.Call(ctx, "c", ToolSearchSkills, json.RawMessage(`{"query":"zzz"}`)).Content
	answers["unavailable search"] = rewriteFixture(t, chat(t, "user", "db"), Decision{}, RewriteOptions{CatalogBudgetTokens: 200}, nil).
		Session.Call(ctx, "c", ToolSearchSkills, json.RawMessage(`{"query":"zzz"}`)).Content
	answers["no session"] = (*Session)(nil).Call(ctx, "c", ToolLoadSkill, nil).Content
	answers["not offered"] = (&Session{}).Call(ctx, "c", ToolSearchSkills, nil).Content
	answers["unreadable skill"] = skills.ReadError("pdf-tools", errors.New("permission denied"))
	answers["no library"] = loadSkillError("pdf-tools", "not_found", "The skill \"pdf-tools\" is unavailable: no skill library is loaded.")
	for name, a := range answers {
		if !IsToolResult(a) {
			t.Errorf("%s: %q not told apart", name, a)
		}
	}
	for _, text := range []string{
		"", "sunny", `{"query":"pdf","results":[]}`,
		`{"query":"pdf","results":[],"hint":"anything else"}`,
		`{"query":"pdf","results":[],"hint":"No skill matches; try other words or continue without a skill.","more":1}`,
		`{"error":{"tool":"get_weather","type":"failed"}}`,
		`{"error":{"tool":"x","type":"y","message":"z","code":1}}`,
		`{"ok":false,"error":{"code":"not_found","message":"no"}}`,
		`<skill_error id="x" reason="y">`, `see <skill_error id="x" reason="y"></skill_error>`,
		"<skill_status id=\"a\nb\" status=\"already_active\"></skill_status>",
	} {
		if IsToolResult(text) {
			t.Errorf("%q taken for the proxy's answer", text)
		}
	}
}
