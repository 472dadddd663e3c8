package router

import (
	"context"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire/responses"
)

// Review agents15: a client that forces or restricts its tool choice
// forbids the model every other tool. OpenAI's reference (openai-node
// 6.30.1, resources/responses/responses.d.ts): ToolChoiceFunction "Use this
// option to force the model to call a specific function", and
// ToolChoiceAllowed "Constrains the tools available to the model to a
// pre-defined set" ("auto allows the model to pick from among the allowed
// tools and generate a message"). The Agents SDK sends both
// (ModelSettings.tool_choice = a tool's name; allowed_tools to keep the
// tools list, and so the prompt cache, stable across agents). In either
// case the model can never call load_skill, yet the rewrite still adds it
// (and search_skills), its catalog still tells the model to "use the
// load_skill ... tool" it is forbidden, and its tokens are counted as
// added: the request should be planned as with tool_choice "none" (no
// proxy tools; the catalog preamble that points at <skill_context>
// instead), unless the allowed set names load_skill.
func TestReviewAgents15ForcedToolChoiceGetsNoProxyTools(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	for _, tc := range []string{
		`{"type":"function","name":"get_weather"}`,
		`{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_weather"}]}`,
	} {
		body := `{"model":"m","tool_choice":` + tc + `,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{}}}],` +
			`"input":"extract the tables from this pdf file and merge two pdf documents"}`
		req, err := responses.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		rw, err := r.Rewrite(context.Background(), req.View(), RewriteOptions{CatalogMode: "all"}, Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range rw.Plan.Tools.Server {
			names = append(names, s.Name)
		}
		if len(names) > 0 || strings.Contains(rw.Plan.Catalog, "load_skill") {
			t.Errorf("tool_choice %s forbids every tool but get_weather, yet the plan offers %v and the catalog says %q",
				tc, names, firstLine(rw.Plan.Catalog, "load_skill"))
		}
	}
}

func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
