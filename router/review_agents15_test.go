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
		// Built-in tools are forced or allowed by type alone.
		`{"type":"web_search"}`,
		`{"type":"allowed_tools","mode":"required","tools":[{"type":"web_search"}]}`,
		`{"type":"mcp","server_label":"wiki"}`,
	} {
		body := `{"model":"m","tool_choice":` + tc + `,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{}}},{"type":"web_search"},{"type":"mcp","server_label":"wiki","server_url":"https://example.com/mcp"}],` +
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

// Review agents15: a reusable prompt (`prompt: {"id","version",
// "variables"}`, the Agents SDK's Agent.prompt) stands in for input and
// instructions: OpenAI's reference makes input optional and the fake
// upstream accepts a request with prompt alone ("input is present (unless
// previous_response_id, prompt or conversation stands in)"). The router
// refuses it ("the request has no messages"): the proxy forwards it
// unmodified with X-Skillrouter-Error and counts a rewrite error on every
// such request, an error for a valid request (dashboards and alerts on
// skillrouter_rewrite_errors_total fire for a healthy Agents SDK app).
// The same holds for any turn whose input has no message and that sends
// no instructions: the hosted-MCP approval turn (previous_response_id and
// one mcp_approval_response) and every turn of a computer-use loop (one
// computer_call_output). Those go upstream without the catalog (which
// previous_response_id does not carry over: "the instructions from a
// previous response will not be carried over"), and, as docs/proxy.md says
// of a turn the proxy did not rewrite, record nothing of the skills the
// conversation holds, so the next turn loads them again.
func TestReviewAgents15NoMessageTurnIsNotARewriteError(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	for _, body := range []string{
		`{"model":"m","prompt":{"id":"pmpt_123","version":"2","variables":{"city":"Paris"}}}`,
		// The hosted-MCP approval turn (Agents SDK human-in-the-loop):
		// the previous response ended in an mcp_approval_request.
		`{"model":"m","previous_response_id":"resp_1","tools":[{"type":"mcp","server_label":"deepwiki","server_url":"https://mcp.deepwiki.com/mcp","require_approval":"always"}],` +
			`"input":[{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true}]}`,
		// A computer-use loop's turn: the screenshot of the last action.
		`{"model":"computer-use-preview","previous_response_id":"resp_1","truncation":"auto","tools":[{"type":"computer_use_preview","display_width":1024,"display_height":768,"environment":"browser"}],` +
			`"input":[{"type":"computer_call_output","call_id":"call_1","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,AAAA"}}]}`,
	} {
		req, err := responses.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Rewrite(context.Background(), req.View(), RewriteOptions{}, Overrides{}); err != nil {
			t.Errorf("a valid request is a rewrite error (%v): %.120s", err, body)
		}
	}
}
