package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a server over a copy of testdata/skills, with its router built.
type fixture struct {
	dir string
	reg *skills.Registry
	rt  *router.Router
	srv *Server
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		return os.WriteFile(out, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func newFixture(t *testing.T, exec bool) *fixture {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, "testdata/skills", dir)
	return newFixtureAt(t, dir, exec)
}

func newFixtureAt(t testing.TB, dir string, exec bool) *fixture {
	t.Helper()
	f := newFixtureRoots(t, []string{dir}, exec)
	f.dir = dir
	return f
}

// newFixtureRoots serves the library under roots.
func newFixtureRoots(t testing.TB, roots []string, exec ...bool) *fixture {
	t.Helper()
	ctx := context.Background()
	reg := skills.NewRegistry(roots, skills.Options{})
	b := embed.NewBuiltin(embed.Config{})
	rt, err := router.New(ctx, reg.Snapshot(), router.Options{
		Embedder: b, Fit: func(c []string) router.Embedder { return b.Fit(c) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	reg.OnReload(func(s *skills.Snapshot) { _ = rt.Update(context.Background(), s) })
	sb, err := sandbox.New(sandbox.Config{Enabled: len(exec) > 0 && exec[0], OutputRoot: t.TempDir(), Confinement: sandbox.ConfineNone,
		Lookup: func(id string) (*skills.Skill, bool) { return reg.Snapshot().Get(id) }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rw := router.RewriteOptions{}
	if len(exec) > 0 && exec[0] {
		rw.Tools = sb
	}
	srv, err := New(Config{Rewrite: rw, Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	srv.Sync(reg.Snapshot())
	reg.OnReload(srv.Sync)
	srv.SetRouter(rt)
	return &fixture{reg: reg, rt: rt, srv: srv}
}

// connect opens an in-memory client session.
func (f *fixture) connect(t testing.TB, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	registerExtension(t, c)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func registerExtension(t testing.TB, c *mcp.Client) {
	t.Helper()
	for _, err := range []error{
		mcp.AddSendingCustomMethod[*ListSkillsParams, *ListSkillsResult](c, methodListSkills),
		mcp.AddSendingCustomMethod[*GetSkillParams, *GetSkillResult](c, methodGetSkill),
		mcp.AddSendingCustomMethod[*ReadDirectoryParams, *ReadDirectoryResult](c, methodReadDirectory),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content parts", name, len(res.Content))
	}
	return res, res.Content[0].(*mcp.TextContent).Text
}

func rpcCode(err error) int64 {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func TestInitialize(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	ir := cs.InitializeResult()
	if !strings.Contains(ir.Instructions, "search_skills") || !strings.Contains(ir.Instructions, "load_skill") {
		t.Errorf("instructions: %q", ir.Instructions)
	}
	caps := ir.Capabilities
	ext, ok := caps.Extensions[ExtensionID].(map[string]any)
	if !ok || ext["directoryRead"] != true {
		t.Errorf("extensions: %#v", caps.Extensions)
	}
	if caps.Resources == nil || !caps.Resources.ListChanged || caps.Prompts == nil || !caps.Prompts.ListChanged {
		t.Errorf("capabilities: %+v", caps)
	}
	if caps.Tools == nil || caps.Tools.ListChanged {
		t.Errorf("tools capability: %+v (the tool list never changes)", caps.Tools)
	}
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"load_skill", "read_skill_resource", "search_skills"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v (skill_execute only with exec)", names, want)
	}
}

// TestToolsMatchProxy checks the "one implementation" promise: the text of
// load_skill and search_skills is byte-identical to what the proxy's tool
// loop answers for the same call.
func TestToolsMatchProxy(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	ctx := context.Background()
	// A one-token catalog budget shortens the catalog, so the proxy offers search_skills too.
	rw, err := f.rt.Rewrite(ctx, &wire.Request{API: wire.APIChat, Turns: []wire.Turn{{Role: "user", Text: "hi"}}},
		router.RewriteOptions{CatalogBudgetTokens: 1}, router.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args string
	}{
		{"load_skill", `{"skill_id":"sql-tuning"}`},
		{"load_skill", `{"skill_id":"pdf-forms"}`}, // a name resolves to its id
		{"load_skill", `{"skill_id":"sql-tunning"}`},
		{"search_skills", `{"query":"fill in a pdf form","limit":2}`},
		{"search_skills", `{"query":""}`},
	} {
		want := rw.Session.Call(ctx, "c1", tc.name, json.RawMessage(tc.args)).Content
		_, got := call(t, cs, tc.name, json.RawMessage(tc.args))
		if got != want {
			t.Errorf("%s %s:\nmcp   %s\nproxy %s", tc.name, tc.args, got, want)
		}
	}
}

func TestSearchSkills(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	res, text := call(t, cs, "search_skills", map[string]any{"query": "fill in a pdf form", "limit": 2})
	if res.IsError || !strings.HasPrefix(text, `{"query":"fill in a pdf form","results":[{"id":"team/pdf-forms"`) {
		t.Fatalf("text %s", text)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var sc searchResult
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Results) != 2 {
		t.Fatalf("structured %s", b)
	}
	top := sc.Results[0]
	if top.ID != "team/pdf-forms" || top.Name != "pdf-forms" || top.Score <= 0 || top.URI != "skill://team/pdf-forms/SKILL.md" ||
		!strings.HasPrefix(top.Description, "Fill, flatten") {
		t.Errorf("top hit %+v", top)
	}
	if sc.Results[1].Score > top.Score {
		t.Errorf("not best first: %s", b)
	}

	res, text = call(t, cs, "search_skills", map[string]any{"limit": 2})
	if !res.IsError || !strings.Contains(text, "query is required") {
		t.Errorf("missing query: isError=%v %s", res.IsError, text)
	}
}

func TestLoadSkill(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	for range 2 { // no conversation: the envelope every time, never "already loaded"
		res, text := call(t, cs, "load_skill", map[string]any{"skill_id": "team/pdf-forms"})
		if res.IsError || !strings.HasPrefix(text, `<skill_context id="team/pdf-forms">`) || !strings.Contains(text, "references/acroform.md") {
			t.Fatalf("isError=%v %s", res.IsError, text)
		}
	}
	res, text := call(t, cs, "load_skill", map[string]any{"skill_id": "pdf-form"})
	if !res.IsError || !strings.Contains(text, "<did_you_mean>") || !strings.Contains(text, "team/pdf-forms") {
		t.Errorf("unknown id: isError=%v %s", res.IsError, text)
	}
	res, text = call(t, cs, "load_skill", map[string]any{})
	if !res.IsError || !strings.Contains(text, "skill_id is required") {
		t.Errorf("no id: isError=%v %s", res.IsError, text)
	}
	// A skill the extension does not serve (name differs from its folder) still loads.
	if res, text = call(t, cs, "load_skill", map[string]any{"skill_id": "misnamed-folder"}); res.IsError {
		t.Errorf("misnamed-folder: %s", text)
	}
}

func TestReadSkillResource(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	for _, tc := range []struct {
		args    map[string]any
		isError bool
		want    string
	}{
		{map[string]any{"skill_id": "team/pdf-forms", "path": "references/acroform.md"}, false, `"content":"# AcroForm field types`},
		{map[string]any{"skill_id": "team/pdf-forms", "path": "references"}, false, `"entries":["references/acroform.md","references/logo.png"]`},
		{map[string]any{"skill_id": "team/pdf-forms", "path": "../../sql-tuning/SKILL.md"}, true, `"code":"path_outside_skill"`},
		{map[string]any{"skill_id": "team/pdf-forms", "path": "/etc/passwd"}, true, `"code":"path_outside_skill"`},
		{map[string]any{"skill_id": "team/pdf-forms", "path": "references/logo.png"}, true, `"code":"binary_file"`},
		{map[string]any{"skill_id": "team/pdf-forms", "path": "nope.md"}, true, `"code":"not_found"`},
		{map[string]any{"skill_id": "nope", "path": "SKILL.md"}, true, `"code":"unknown_skill"`},
		{map[string]any{"path": "SKILL.md"}, true, `"code":"invalid_arguments"`},
	} {
		res, text := call(t, cs, "read_skill_resource", tc.args)
		if res.IsError != tc.isError || !strings.Contains(text, tc.want) {
			t.Errorf("%v: isError=%v %s; want %s", tc.args, res.IsError, text, tc.want)
		}
	}
}

func TestSkillExecute(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	f := newFixture(t, true)
	cs := f.connect(t, nil)
	res, text := call(t, cs, "skill_execute", map[string]any{"skill_id": "team/pdf-forms", "command": "scripts/fields.py", "args": []string{"form.pdf"}})
	if res.IsError || !strings.Contains(text, `"ok":true`) || !strings.Contains(text, `fields of ['form.pdf']`) {
		t.Fatalf("isError=%v %s", res.IsError, text)
	}
	res, text = call(t, cs, "skill_execute", map[string]any{"skill_id": "team/pdf-forms", "command": "../../sql-tuning/SKILL.md"})
	if !res.IsError || !strings.Contains(text, "path_outside_skill") {
		t.Errorf("escape: isError=%v %s", res.IsError, text)
	}
}

func TestResources(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	ctx := context.Background()
	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
		if r.URI == "skill://team/pdf-forms/SKILL.md" && (r.Name != "pdf-forms" || r.MIMEType != "text/markdown" || !strings.HasPrefix(r.Description, "Fill")) {
			t.Errorf("SKILL.md resource %+v", r)
		}
	}
	want := []string{
		"skill://misnamed-folder/commit-style/SKILL.md",
		"skill://sql-tuning/SKILL.md", "skill://sql-tuning/references/deep/advanced.md", "skill://sql-tuning/references/indexes.md",
		"skill://team/pdf-forms/SKILL.md", "skill://team/pdf-forms/references/acroform.md", "skill://team/pdf-forms/references/logo.png",
		"skill://team/pdf-forms/scripts/fields.py",
	}
	if !slices.Equal(uris, want) {
		t.Errorf("resources\n%v\nwant\n%v", uris, want)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://team/pdf-forms/SKILL.md"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(f.dir, "team/pdf-forms/SKILL.md"))
	if c := rr.Contents[0]; c.Text != string(raw) || c.MIMEType != "text/markdown" {
		t.Errorf("SKILL.md contents %+v", c)
	}
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://team/pdf-forms/references/logo.png"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(filepath.Join(f.dir, "team/pdf-forms/references/logo.png"))
	if c := rr.Contents[0]; string(c.Blob) != string(raw) || c.Text != "" || c.MIMEType != "image/png" {
		t.Errorf("blob contents %+v", c)
	}
	for _, uri := range []string{"skill://team/pdf-forms/nope.md", "skill://misnamed-folder/SKILL.md", "skill://team/pdf-forms/../../sql-tuning/SKILL.md", "skill://off/SKILL.md"} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: err %v, want -32602", uri, err)
		}
	}
	// Published, then gone or swapped for a link out of the skill before a
	// reload: no longer a resource (-32602), not a failure of the server.
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	acro := filepath.Join(f.dir, "team/pdf-forms/references/acroform.md")
	if err := os.Remove(filepath.Join(f.dir, "team/pdf-forms/scripts/fields.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(acro); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, acro); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"skill://team/pdf-forms/scripts/fields.py", "skill://team/pdf-forms/references/acroform.md"} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("%s, changed since published: err %v, want -32602", uri, err)
		}
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestSkillsExtension(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	ctx := context.Background()
	ls, err := mcp.CallCustomMethod[*ListSkillsParams, *ListSkillsResult](ctx, cs, methodListSkills, &ListSkillsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if ls.ResultType != "complete" || ls.CacheScope != "public" || ls.NextCursor != "" || len(ls.Skills) != 3 {
		t.Fatalf("skills/list %+v", ls)
	}
	// A folder named otherwise than its skill: the name is the path's last segment.
	if m := ls.Skills[0]; m.URI != "skill://misnamed-folder/commit-style/SKILL.md" || m.Frontmatter["name"] != "commit-style" {
		t.Errorf("misnamed entry %+v", m)
	}
	e := ls.Skills[2]
	if e.URI != "skill://team/pdf-forms/SKILL.md" {
		t.Fatalf("entry %+v", e)
	}
	fm, _ := json.Marshal(e.Frontmatter)
	if string(fm) != `{"description":"Fill, flatten and extract PDF form fields (AcroForm). Use when the user has a PDF form to fill in or read.","license":"Apache-2.0","metadata":{"updated":"2025-03-01","version":"1.2"},"name":"pdf-forms"}` {
		t.Errorf("frontmatter %s", fm)
	}
	var got []string
	for _, r := range e.Resources {
		raw, err := os.ReadFile(filepath.Join(f.dir, "team/pdf-forms", strings.TrimPrefix(r.URI, "skill://team/pdf-forms/")))
		if err != nil || r.Digest != sha(raw) || r.Size != int64(len(raw)) {
			t.Errorf("resource %+v: digest or size differs from the file's (%v)", r, err)
		}
		got = append(got, r.URI)
	}
	if want := []string{"skill://team/pdf-forms/SKILL.md", "skill://team/pdf-forms/references/acroform.md",
		"skill://team/pdf-forms/references/logo.png", "skill://team/pdf-forms/scripts/fields.py"}; !slices.Equal(got, want) {
		t.Errorf("manifest %v", got)
	}

	gs, err := mcp.CallCustomMethod[*GetSkillParams, *GetSkillResult](ctx, cs, methodGetSkill, &GetSkillParams{URI: "skill://sql-tuning/SKILL.md"})
	if err != nil || gs.ResultType != "complete" || gs.Skill.Frontmatter["name"] != "sql-tuning" || len(gs.Skill.Resources) != 3 {
		t.Fatalf("skills/get %+v %v", gs, err)
	}
	for _, uri := range []string{"skill://nope/SKILL.md", "skill://sql-tuning/references/indexes.md", "skill://misnamed-folder/SKILL.md", ""} {
		_, err := mcp.CallCustomMethod[*GetSkillParams, *GetSkillResult](ctx, cs, methodGetSkill, &GetSkillParams{URI: uri})
		if rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("skills/get %q: %v, want -32602", uri, err)
		}
	}

	dir := func(uri string) ([]string, error) {
		res, err := mcp.CallCustomMethod[*ReadDirectoryParams, *ReadDirectoryResult](ctx, cs, methodReadDirectory, &ReadDirectoryParams{URI: uri})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range res.Resources {
			out = append(out, r.URI+" "+r.MIMEType)
		}
		return out, nil
	}
	if m, err := dir("skill://misnamed-folder/commit-style"); err != nil || len(m) != 1 {
		t.Errorf("misnamed root %v %v", m, err)
	}
	root, err := dir("skill://sql-tuning")
	if want := []string{"skill://sql-tuning/SKILL.md text/markdown", "skill://sql-tuning/references inode/directory"}; err != nil || !slices.Equal(root, want) {
		t.Errorf("root %v %v", root, err)
	}
	refs, err := dir("skill://sql-tuning/references")
	if want := []string{"skill://sql-tuning/references/deep inode/directory", "skill://sql-tuning/references/indexes.md text/markdown"}; err != nil || !slices.Equal(refs, want) {
		t.Errorf("references %v %v", refs, err)
	}
	for _, uri := range []string{"skill://sql-tuning/SKILL.md", "skill://sql-tuning/nope", "skill://team"} {
		if _, err := dir(uri); rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("directory %s: %v, want -32602", uri, err)
		}
	}
}

// TestPathClash: a folder named otherwise than its skill is published under
// <id>/<name>, unless a skill of that id exists (which wins).
func TestPathClash(t *testing.T) {
	// A skill folder holds no other skills, so the clash needs two roots.
	r1, r2 := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(r1, "a"), filepath.Join(r2, "a", "b")} {
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, "SKILL.md"), []byte("---\nname: b\ndescription: Skill at "+p+".\n---\nBody.\n"), 0o644)
	}
	f := newFixtureRoots(t, []string{r1, r2})
	v := f.srv.current()
	if len(v.served) != 1 || v.served[0].sk.ID != "a/b" || v.served[0].uri != "skill://a/b/SKILL.md" {
		t.Fatalf("served %d skills, first %s %s", len(v.served), v.served[0].sk.ID, v.served[0].uri)
	}
	if _, ok := v.prompts["a"]; !ok {
		t.Error("the unpublished skill lost its prompt")
	}
}

// TestSkillsListPages pages through 120 skills: every skill exactly once.
func TestSkillsListPages(t *testing.T) {
	dir := t.TempDir()
	for i := range 120 {
		name := fmt.Sprintf("skill-%03d", i)
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: Skill number "+name+" for paging.\n---\nBody.\n"), 0o644)
	}
	f := newFixtureAt(t, dir, false)
	cs := f.connect(t, nil)
	ctx := context.Background()
	seen := map[string]int{}
	pages := 0
	p := &ListSkillsParams{}
	for {
		res, err := mcp.CallCustomMethod[*ListSkillsParams, *ListSkillsResult](ctx, cs, methodListSkills, p)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, s := range res.Skills {
			seen[s.URI]++
		}
		if res.NextCursor == "" {
			break
		}
		p = &ListSkillsParams{Cursor: res.NextCursor}
	}
	if pages != 3 || len(seen) != 120 {
		t.Fatalf("%d pages, %d skills", pages, len(seen))
	}
	for uri, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", uri, n)
		}
	}
	_, err := mcp.CallCustomMethod[*ListSkillsParams, *ListSkillsResult](ctx, cs, methodListSkills, &ListSkillsParams{Cursor: "!!"})
	if rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Errorf("bad cursor: %v", err)
	}
}

func TestPrompts(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	ctx := context.Background()
	var names []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
	}
	if want := []string{"misnamed-folder", "sql-tuning", "team/pdf-forms"}; !slices.Equal(names, want) {
		t.Errorf("prompts %v, want %v (no disabled or broken skills)", names, want)
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "team/pdf-forms", Arguments: map[string]string{"request": "fill form.pdf"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Messages[0].Content.(*mcp.TextContent).Text
	_, load := call(t, cs, "load_skill", map[string]any{"skill_id": "team/pdf-forms"})
	if res.Messages[0].Role != "user" || text != load+"\n\nfill form.pdf" {
		t.Errorf("prompt %q", text)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "off"}); err == nil {
		t.Error("a disabled skill's prompt was served")
	}
}

// waitFor fails the test if ch does not fire; the bound only turns a hang
// into a failure.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s", what)
	}
}

func notifier() (chan struct{}, func()) {
	ch := make(chan struct{}, 16)
	return ch, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// addSkill writes a new skill folder and reloads the library.
func (f *fixture) addSkill(t *testing.T) {
	t.Helper()
	d := filepath.Join(f.dir, "regex-builder")
	os.MkdirAll(d, 0o755)
	os.WriteFile(filepath.Join(d, "SKILL.md"), []byte("---\nname: regex-builder\ndescription: Build and test regular expressions.\n---\nUse anchors.\n"), 0o644)
	f.reg.Reload(context.Background())
}

func TestListChanged(t *testing.T) {
	f := newFixture(t, false)
	res, onRes := notifier()
	pr, onPr := notifier()
	cs := f.connect(t, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { onRes() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { onPr() },
	})
	f.addSkill(t)
	waitFor(t, res, "notifications/resources/list_changed")
	waitFor(t, pr, "notifications/prompts/list_changed")
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "skill://regex-builder/SKILL.md"}); err != nil {
		t.Fatal(err)
	}
	// The router follows the reload too.
	if r, text := call(t, cs, "load_skill", map[string]any{"skill_id": "regex-builder"}); r.IsError {
		t.Fatal(text)
	}
}

// TestStreamableHTTP runs the same flows over streamable HTTP.
func TestStreamableHTTP(t *testing.T) {
	f := newFixture(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ts := httptest.NewServer(f.srv.Handler(ctx, nil))
	defer ts.Close()
	res, onRes := notifier()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { onRes() },
	})
	registerExtension(t, c)
	for _, version := range []string{"", "2025-11-25"} { // the client's default (2025-11-25 over HTTP, see TestHTTPProtocolVersion), and asked for
		t.Run("protocol"+version, func(t *testing.T) {
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if r, text := call(t, cs, "search_skills", map[string]any{"query": "slow postgres query"}); r.IsError || !strings.Contains(text, `"id":"sql-tuning"`) {
				t.Fatalf("search: %s", text)
			}
			ls, err := mcp.CallCustomMethod[*ListSkillsParams, *ListSkillsResult](ctx, cs, methodListSkills, &ListSkillsParams{})
			if err != nil || len(ls.Skills) < 2 {
				t.Fatalf("skills/list %v %v", ls, err)
			}
			if version != "" {
				f.addSkill(t)
				waitFor(t, res, "notifications/resources/list_changed over HTTP")
			}
		})
	}
}

// TestViewBuiltOnFirstClient: Sync only notes the snapshot until a client
// connects; the first connection serves the newest one.
func TestViewBuiltOnFirstClient(t *testing.T) {
	f := newFixture(t, false)
	if v := f.srv.view.Load(); len(v.served) != 0 || f.srv.pending == nil {
		t.Fatalf("view built before any client: %d skills served", len(v.served))
	}
	cs := f.connect(t, nil)
	res, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) == 0 || f.srv.pending != nil {
		t.Fatalf("first client sees %d resources", len(res.Resources))
	}
}
