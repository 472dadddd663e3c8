package mcpserver

// The tools: search_skills, load_skill and skill_execute are answered by a
// router.Session (the proxy's own code, so the text is byte-identical to
// what the proxy's tool loop gives a model); read_skill_resource by the
// sandbox's reader. A Session per call: an MCP server holds no conversation
// (a host may clear its context while the server lives on), so load_skill
// always returns the envelope, never "already loaded".

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
)

// Tool names.
const (
	ToolSearchSkills = router.ToolSearchSkills
	ToolLoadSkill    = router.ToolLoadSkill
	ToolReadResource = "read_skill_resource"
	ToolExecute      = "skill_execute"
)

// instructions is the initialize result's text: how to use the tools so a
// host with hundreds of skills stays at a constant context.
func instructions(exec bool) string {
	s := "This server holds a library of Agent Skills: expert instructions for specific tasks. " +
		"Before a task that a skill may cover, call search_skills with a few words about the task; " +
		"then call load_skill with the id of the best match and follow the instructions it returns. " +
		"Skill ids are folder paths such as \"anthropics/pdf\". Load only skills you will use. " +
		"read_skill_resource reads a file a loaded skill lists (e.g. references/api.md)."
	if exec {
		s += " skill_execute runs a script that ships with a skill, in a sandbox."
	}
	return s
}

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}

func (s *Server) addTools() {
	s.srv.AddTool(&mcp.Tool{
		Name:  ToolSearchSkills,
		Title: "Search skills",
		Description: "Find skills for a task in the whole skill library, best match first. " +
			"Returns each match's id, name, description and score; load one with load_skill.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"What the task is about, in a few words."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":20,"description":"How many matches to return (default 5)."}},` +
			`"required":["query"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string"},` +
			`"results":{"type":"array","items":{"type":"object","properties":{` +
			`"id":{"type":"string"},"name":{"type":"string"},"description":{"type":"string"},` +
			`"score":{"type":"number"},"uri":{"type":"string"}},"required":["id","name","description","score"]}},` +
			`"hint":{"type":"string"}},"required":["query","results"]}`),
		Annotations: readOnly,
	}, s.searchSkills)
	s.srv.AddTool(&mcp.Tool{
		Name:  ToolLoadSkill,
		Title: "Load a skill",
		Description: "Load a skill's full instructions, with the list of files in its folder. " +
			"Call it with an id from search_skills (a folder path such as \"anthropics/pdf\"), then follow the instructions.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"skill_id":{"type":"string","description":"The skill's id, e.g. \"anthropics/pdf\"."}},` +
			`"required":["skill_id"]}`),
		Annotations: readOnly,
	}, s.routerTool(ToolLoadSkill))
	s.srv.AddTool(&mcp.Tool{
		Name:  ToolReadResource,
		Title: "Read a skill file",
		Description: "Read a text file from a skill's folder, such as a reference or template the skill lists. " +
			"path is relative to the skill folder (e.g. references/api.md); a folder path lists its entries. Large files are cut.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"skill_id":{"type":"string","description":"The skill's id, e.g. \"anthropics/pdf\"."},` +
			`"path":{"type":"string","description":"File path relative to the skill folder."}},` +
			`"required":["skill_id","path"]}`),
		Annotations: readOnly,
	}, s.readSkillResource)
	if s.cfg.Sandbox.Enabled() {
		s.srv.AddTool(&mcp.Tool{
			Name:  ToolExecute,
			Title: "Run a skill script",
			Description: "Run a script that ships with a skill (load the skill first) and get its exit code, stdout, stderr and the files it wrote. " +
				"command is a path relative to the skill folder (e.g. scripts/convert.py); .py runs with Python, .sh with bash, .js with node. " +
				"The working directory is an output folder kept for this session; the skill folder is read-only. Runs are time- and output-limited.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"skill_id":{"type":"string","description":"The skill's id, e.g. \"anthropics/pdf\"."},` +
				`"command":{"type":"string","description":"Script path relative to the skill folder."},` +
				`"args":{"type":"array","items":{"type":"string"},"description":"Command-line arguments."}},` +
				`"required":["skill_id","command"]}`),
			Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
		}, s.routerTool(ToolExecute))
	}
}

// session builds the Session one call is answered by.
func (s *Server) session(ctx context.Context, req *mcp.CallToolRequest, search router.Searcher, active ...string) (*router.Session, error) {
	r, err := s.router(ctx)
	if err != nil {
		return nil, err
	}
	return r.NewSession(ctx, router.SessionOptions{
		Rewrite: s.cfg.Rewrite, Conversation: s.conversation(req.Session), Active: active, Search: search,
	})
}

// routerTool answers load_skill and skill_execute through a Session. The
// skill skill_execute names is made active for the call: there is no
// conversation in which it could have been loaded before.
func (s *Server) routerTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var active []string
		if name == ToolExecute {
			var a struct {
				SkillID string `json:"skill_id"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &a)
			if r, err := s.router(ctx); err == nil {
				// load_skill's rule: a unique name or id suffix names it
				// too (the sandbox resolves the argument the same way).
				if sk, ok := r.ResolveSkill(a.SkillID); ok {
					active = append(active, sk.ID)
				}
			}
		}
		sess, err := s.session(ctx, req, nil, active...)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		var out string
		if name == ToolExecute && !sess.Offers(ToolExecute) {
			// No skill of that id (or none given): the session offers no
			// skill_execute and would answer "not a tool"; the sandbox's
			// own tool refuses the call as the proxy does.
			out = s.refuseExecute(ctx, sess.Conversation(), req.Params.Arguments)
		}
		if out == "" {
			out = sess.Call(ctx, "", name, req.Params.Arguments).Content
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}, IsError: router.ToolFailed(name, out)}, nil
	}
}

// refuseExecute answers a skill_execute call whose skill is not in the
// library with the sandbox's refusal (unknown_skill, invalid_arguments);
// "" if the sandbox offers no skill_execute.
func (s *Server) refuseExecute(ctx context.Context, conversation string, args json.RawMessage) string {
	for _, t := range s.cfg.Sandbox.Tools(ctx, nil) {
		if t.Name() == ToolExecute {
			if out, err := t.Call(ctx, router.ToolCall{Conversation: conversation, Arguments: args}); err == nil {
				return out
			}
		}
	}
	return ""
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}

// recorder remembers the ranking search_skills used, for the scores of the
// structured result.
type recorder struct {
	r    *router.Router
	last []router.Scored
}

func (c *recorder) Search(ctx context.Context, query string, limit int) []router.Scored {
	c.last = c.r.Search(ctx, query, limit)
	return c.last
}

// searchResult is search_skills' structured content.
type searchResult struct {
	Query   string      `json:"query"`
	Results []searchHit `json:"results"`
	Hint    string      `json:"hint,omitempty"`
}

type searchHit struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
	URI         string  `json:"uri,omitempty"` // SKILL.md's resource, when the extension serves the skill
}

// searchSkills answers with the proxy's text and, as structured content,
// the same hits with names, scores and resource URIs.
func (s *Server) searchSkills(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	r, err := s.router(ctx)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	rec := &recorder{r: r}
	sess, err := s.session(ctx, req, rec)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	out := sess.Call(ctx, "", ToolSearchSkills, req.Params.Arguments).Content
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}
	if router.ToolFailed(ToolSearchSkills, out) {
		res.IsError = true
		return res, nil
	}
	var text searchResult
	if err := json.Unmarshal([]byte(out), &text); err != nil {
		return res, nil
	}
	scores := make(map[string]float64, len(rec.last))
	for _, sc := range rec.last {
		scores[sc.ID] = sc.Score
	}
	v := s.current()
	snap := r.Snapshot()
	structured := searchResult{Query: text.Query, Results: []searchHit{}, Hint: text.Hint}
	for _, h := range text.Results {
		h.Score = scores[h.ID]
		if sk, ok := snap.Get(h.ID); ok {
			h.Name = sk.Name
		}
		if ss, ok := v.byID[h.ID]; ok {
			h.URI = ss.uri
		}
		structured.Results = append(structured.Results, h)
	}
	res.StructuredContent = structured
	return res, nil
}

// readSkillResource reads a file of any skill in the library (no load
// needed: the same files are resources anyway), with read_skill_resource's
// rules and answers.
func (s *Server) readSkillResource(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		SkillID string `json:"skill_id"`
		Path    string `json:"path"`
	}
	// The proxy's one decoder: a wrong argument is named in the model's
	// terms (`argument "path" must be a string, got number`), not Go's.
	if err := router.DecodeToolArgs(req.Params.Arguments, &a); err != nil {
		out := sandbox.InvalidArgumentsResult(`%v; call read_skill_resource with {"skill_id": "<id>", "path": "<file>"}`, err)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}, IsError: true}, nil
	}
	r, err := s.router(ctx)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	// load_skill's rule: a unique name or id suffix names a skill too.
	sk, _ := r.ResolveSkill(a.SkillID)
	out := s.cfg.Sandbox.ReadSkillResource(skills.SkillArg(a.SkillID), sk, a.Path)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}, IsError: router.ToolFailed(ToolReadResource, out)}, nil
}
