package proxy

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

func TestHealthAndReadiness(t *testing.T) {
	h := newHarness(t, nil)
	resp, b := h.do("GET", "/healthz", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"ok"`) {
		t.Fatalf("healthz %d %s", resp.StatusCode, b)
	}
	resp, _ = h.do("GET", "/readyz", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("readyz %d", resp.StatusCode)
	}
	// Ranking without the embedder is said, and still ready.
	h.rw.degraded = "vector index unavailable: ollama: connection refused"
	resp, b = h.do("GET", "/readyz", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"ranking_degraded":[{"arms":["default"],"reason":"vector index unavailable: ollama: connection refused"}]`) {
		t.Fatalf("readyz when degraded: %d %s", resp.StatusCode, b)
	}
	h.rw.ready = false
	resp, b = h.do("GET", "/readyz", "", nil)
	if resp.StatusCode != 503 || !strings.Contains(string(b), "not ready") {
		t.Fatalf("readyz when not ready: %d %s", resp.StatusCode, b)
	}
	// Probes, a not-ready 503 included, stay out of the info-level log.
	if strings.Contains(h.logText(), "/readyz") || strings.Contains(h.logText(), "/healthz") {
		t.Errorf("probe logged at info level:\n%s", h.logText())
	}
	// A request meanwhile goes upstream unmodified, and is counted so.
	if resp, b := h.chat(simpleChat, nil); resp.StatusCode != 200 || resp.Header.Get("X-Skillrouter-Error") == "" {
		t.Fatalf("request while not ready: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	_, m := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), `skillrouter_requests_before_ready_total{api="chat",arm="default"} 1`)
	mustContain(t, string(m), `skillrouter_rewrite_errors_total{api="chat",arm="default"} 0`)
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestSkillsListAndReload(t *testing.T) {
	root := copyDir(t, "testdata/skills")
	reg := skills.NewRegistry([]string{root}, skills.Options{})
	reloaded := 0
	reg.OnReload(func(*skills.Snapshot) { reloaded++ })
	h := newHarness(t, func(c *Config) { c.Library = reg })

	resp, b := h.do("GET", "/v1/skills", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, b)
	}
	var list struct {
		Object string       `json:"object"`
		Data   []skillEntry `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, s := range list.Data {
		ids = append(ids, s.ID)
	}
	if list.Object != "list" || strings.Join(ids, ",") != "broken,csv-report,pdf-forms" {
		t.Fatalf("list %s", b)
	}
	if !list.Data[0].Skipped || len(list.Data[0].Problems) == 0 {
		t.Fatalf("broken skill must be listed with its problems: %+v", list.Data[0])
	}
	for _, sk := range list.Data {
		for _, p := range sk.Problems {
			if filepath.IsAbs(p.Path) || strings.Contains(p.Path, root) || !strings.HasPrefix(p.Path, sk.ID+"/") {
				t.Errorf("%s: problem path %q is not below the library root", sk.ID, p.Path)
			}
		}
	}
	if list.Data[2].Description == "" || list.Data[2].Type != skills.TypeContextual || list.Data[2].Problems == nil {
		t.Fatalf("entry %+v", list.Data[2])
	}

	// Add a skill, reload: counts follow and subscribers ran.
	dir := filepath.Join(root, "md-table")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: md-table\ndescription: Format data as a Markdown table.\n---\nUse pipes.\n"), 0o644)
	resp, b = h.do("POST", "/v1/skills/reload", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("reload %d %s", resp.StatusCode, b)
	}
	var rl struct {
		Skills, Skipped int
		Problems        []skills.Problem
		Fingerprint     string
	}
	json.Unmarshal(b, &rl)
	if rl.Skills != 3 || rl.Skipped != 1 || len(rl.Problems) == 0 || rl.Fingerprint == "" || reloaded != 1 {
		t.Fatalf("reload answer %s (subscribers ran %d times)", b, reloaded)
	}
	_, m := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), "skillrouter_library_skills 3")
}

func TestSkillsEndpointsWithoutLibrary(t *testing.T) {
	h := newHarness(t, nil)
	for _, p := range []struct{ m, path string }{{"GET", "/v1/skills"}, {"POST", "/v1/skills/reload"}} {
		resp, b := h.do(p.m, p.path, "", nil)
		if resp.StatusCode != 404 {
			t.Fatalf("%s: %d", p.path, resp.StatusCode)
		}
		checkAPIError(t, b, "not_found")
	}
	if len(h.up.Requests()) != 0 {
		t.Fatal("skills endpoints must not reach the upstream")
	}
}

func TestExplainRoute(t *testing.T) {
	h := newHarness(t, nil)
	body := `{"model":"m","tools":[{"type":"function","function":{"name":"get_weather"}}],"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"fill my pdf form"}]}`
	resp, b := h.do("POST", "/v1/skills/route", body, map[string]string{HeaderStrategy: "bm25"})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, b)
	}
	var ex struct {
		Decision    map[string]any `json:"decision"`
		AddedTokens int            `json:"added_tokens"`
		Injected    injection      `json:"injected"`
		Request     map[string]any `json:"request"`
	}
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	if ex.Decision["strategy"] != "bm25" || ex.AddedTokens != 84 {
		t.Fatalf("decision %s", b)
	}
	// The catalog is appended to the client's system message and one envelope follows the last message.
	if len(ex.Injected.Messages) != 2 ||
		ex.Injected.Messages[0].Change != "modified" || ex.Injected.Messages[0].Index != 0 || ex.Injected.Messages[0].Content != "be brief\n\nCATALOG" ||
		ex.Injected.Messages[1].Change != "appended" || ex.Injected.Messages[1].Index != 2 {
		t.Fatalf("injected messages %+v", ex.Injected.Messages)
	}
	if strings.Join(ex.Injected.Tools, ",") != "load_skill" {
		t.Fatalf("injected tools %v", ex.Injected.Tools)
	}
	if len(h.up.Requests()) != 0 {
		t.Fatal("explain must not forward")
	}
	// Invalid bodies are 400 here too.
	resp, b = h.do("POST", "/v1/skills/route", `{"model":"m"}`, nil)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	checkAPIError(t, b, "missing_messages")
}

func TestDiffRequestsModifiedSystem(t *testing.T) {
	before := `{"messages":[{"role":"system","content":"a"},{"role":"user","content":"q"}]}`
	after := `{"messages":[{"role":"system","content":"a\n\nCATALOG"},{"role":"user","content":"q"},{"role":"user","content":"ENV"}],"tools":[{"type":"function","function":{"name":"load_skill"}}]}`
	inj := diffRequests([]byte(before), []byte(after))
	if len(inj.Messages) != 2 || inj.Messages[0].Change != "modified" || inj.Messages[1].Change != "appended" ||
		inj.Messages[1].Index != 2 || len(inj.Tools) != 1 {
		t.Fatalf("%+v", inj)
	}
}

func TestDebugLogCarriesQuery(t *testing.T) {
	var buf bytes.Buffer
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: new(sync.Mutex)}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	h.chat(simpleChat, map[string]string{"Authorization": "Bearer sk-never"})
	h.do("GET", "/healthz", "", nil)
	s := buf.String()
	mustContain(t, s, `"query":"make me a pdf"`)
	mustContain(t, s, `"path":"/healthz"`)
	if strings.Contains(s, "sk-never") {
		t.Fatal("Authorization logged at debug level")
	}
}

// Problems name other copies of a skill by path in their message too (an
// id two roots define, a name two skills share): listed to clients, those
// paths are below their roots as well.
func TestSkillsListHidesLibraryLocations(t *testing.T) {
	r1, r2 := t.TempDir(), t.TempDir()
	write := func(root, dir, name string) {
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		os.WriteFile(filepath.Join(root, dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: Make PDF files.\n---\nSteps.\n"), 0o644)
	}
	write(r1, "pdf", "pdf")
	write(r2, "pdf", "pdf")         // the same id in another root
	write(r2, "tools/pdf-x", "pdf") // the same name in another folder
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(r1, "pdf", "notes.md")) // a resource leading out
	reg := skills.NewRegistry([]string{r1, r2}, skills.Options{})
	h := newHarness(t, func(c *Config) { c.Library = reg })
	_, b := h.do("GET", "/v1/skills", "", nil)
	if !strings.Contains(string(b), `"problems":[{`) {
		t.Fatalf("no problem listed to check: %s", b)
	}
	for _, root := range []string{r1, r2, outside} {
		if strings.Contains(string(b), root) {
			t.Errorf("the listing names %s:\n%s", root, b)
		}
	}
	// The shadowed copy is named with its root: the skill's own path alone
	// would read as the skill itself.
	if !strings.Contains(string(b), rootLabel(r2)+"/pdf/SKILL.md") || rootLabel(r1) == rootLabel(r2) {
		t.Errorf("the duplicate id's problem does not say which root holds the other copy:\n%s", b)
	}
}

func TestRootLabel(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	for root, want := range map[string]string{
		filepath.Join(home, ".claude", "skills"): "~/.claude/skills",
		filepath.Join(home, ".codex", "skills"):  "~/.codex/skills",
		".claude/skills":                         ".claude/skills",
		"/srv/team/skills":                       "team/skills",
	} {
		if got := rootLabel(root); got != want {
			t.Errorf("%s: %s, want %s", root, got, want)
		}
	}
}

// Problems that belong to no skill (a root that is missing, a file, the same
// directory as another; a symlink loop) are listed at the top level of GET
// /v1/skills, in the shape of the skills' own, their paths named as clients
// see paths: no entry of data could carry them, and before they were in
// no answer a client could read.
func TestSkillsListRootlessProblems(t *testing.T) {
	skill := func(root string) {
		os.MkdirAll(filepath.Join(root, "pdf"), 0o755)
		os.WriteFile(filepath.Join(root, "pdf", "SKILL.md"), []byte("---\nname: pdf\ndescription: Make PDF files.\n---\nSteps.\n"), 0o644)
	}
	tests := []struct {
		name  string
		roots func(t *testing.T, r1 string) []string
		want  func(r1 string, roots []string) []skills.Problem
	}{
		{"none", func(t *testing.T, r1 string) []string { return []string{r1} },
			func(string, []string) []skills.Problem { return []skills.Problem{} }},
		{"root does not exist", func(t *testing.T, r1 string) []string {
			return []string{r1, filepath.Join(t.TempDir(), "team", "skills")}
		}, func(_ string, roots []string) []skills.Problem {
			return []skills.Problem{{Path: "team/skills", Severity: skills.SeverityError, Message: "skills root does not exist"}}
		}},
		{"root is a file", func(t *testing.T, r1 string) []string {
			f := filepath.Join(t.TempDir(), "skills.md")
			os.WriteFile(f, []byte("x"), 0o644)
			return []string{f, r1}
		}, func(_ string, roots []string) []skills.Problem {
			return []skills.Problem{{Path: rootLabel(roots[0]), Severity: skills.SeverityError, Message: "skills root is a file, not a directory"}}
		}},
		{"root twice", func(t *testing.T, r1 string) []string {
			link := filepath.Join(t.TempDir(), "again")
			if err := os.Symlink(r1, link); err != nil {
				t.Skip(err)
			}
			return []string{r1, link}
		}, func(r1 string, roots []string) []skills.Problem {
			return []skills.Problem{{Path: rootLabel(roots[1]), Severity: skills.SeverityWarning,
				Message: "skills root is the same directory as " + rootLabel(r1) + "; scanned once"}}
		}},
		{"symlink loop", func(t *testing.T, r1 string) []string {
			if err := os.Symlink(r1, filepath.Join(r1, "loop")); err != nil {
				t.Skip(err)
			}
			return []string{r1}
		}, func(r1 string, _ []string) []skills.Problem {
			return []skills.Problem{{Path: "loop", Severity: skills.SeverityWarning,
				Message: "symlink loop: points back to " + rootLabel(r1) + "; skipped"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r1 := filepath.Join(t.TempDir(), "lib", "skills")
			skill(r1)
			roots := tt.roots(t, r1)
			reg := skills.NewRegistry(roots, skills.Options{})
			h := newHarness(t, func(c *Config) { c.Library = reg })
			resp, b := h.do("GET", "/v1/skills", "", nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d %s", resp.StatusCode, b)
			}
			var list struct {
				Object   string            `json:"object"`
				Data     []skillEntry      `json:"data"`
				Problems *[]skills.Problem `json:"problems"`
			}
			if err := json.Unmarshal(b, &list); err != nil {
				t.Fatal(err)
			}
			if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "pdf" || len(list.Data[0].Problems) != 0 {
				t.Fatalf("the skill's entry changed: %s", b)
			}
			if list.Problems == nil {
				t.Fatalf("no top-level problems (an empty list is []): %s", b)
			}
			if want := tt.want(r1, roots); !reflect.DeepEqual(*list.Problems, want) {
				t.Errorf("problems = %+v\nwant %+v", *list.Problems, want)
			}
			// The full set, as POST /v1/skills/reload and `router skills
			// validate` report it, is the entries' and the top level's.
			if n := len(*list.Problems); n != len(reg.Snapshot().Problems()) {
				t.Errorf("%d problems listed, the library has %d", n, len(reg.Snapshot().Problems()))
			}
			for _, r := range roots {
				if strings.Contains(string(b), filepath.Dir(r)) {
					t.Errorf("the listing names %s:\n%s", r, b)
				}
			}
		})
	}
}

// forClients on the problems Load reports outside any skill: a root is
// named by its label, a path that merely starts like a root is not.
func TestForClientsRootPaths(t *testing.T) {
	sep := string(os.PathListSeparator)
	roots := rootPrefixes([]string{"/srv/team/skills", "/srv/team/skills/nested", "/opt/more/skills"})
	tests := []struct {
		name string
		in   skills.Problem
		want skills.Problem
	}{
		{"root", skills.Problem{Path: "/srv/team/skills", Message: "skills root does not exist"},
			skills.Problem{Path: "team/skills", Message: "skills root does not exist"}},
		{"root with a trailing separator", skills.Problem{Path: "/opt/more/skills/", Message: "x"},
			skills.Problem{Path: "more/skills", Message: "x"}},
		{"nested root", skills.Problem{Path: "/srv/team/skills/nested", Message: "skills root is the same directory as /opt/more/skills; scanned once"},
			skills.Problem{Path: "skills/nested", Message: "skills root is the same directory as more/skills; scanned once"}},
		{"roots joined: a scan stopped early", skills.Problem{Path: "/srv/team/skills" + sep + "/opt/more/skills", Message: "scan stopped early"},
			skills.Problem{Path: "team/skills" + sep + "more/skills", Message: "scan stopped early"}},
		{"folder bound", skills.Problem{Path: "/opt/more/skills", Message: "more than 100000 folders below this root: stopped scanning at /opt/more/skills/a/b (a symlink to a large tree, such as /?); skills further on are not loaded"},
			skills.Problem{Path: "more/skills", Message: "more than 100000 folders below this root: stopped scanning at more/skills/a/b (a symlink to a large tree, such as /?); skills further on are not loaded"}},
		{"a path that starts like a root", skills.Problem{Path: "/srv/team/skills2", Message: "see /srv/team/skills2 and /x/srv/team/skills"},
			skills.Problem{Path: "skills2", Message: "see a path outside the library and a path outside the library"}},
		{"loop back to the root", skills.Problem{Path: "/srv/team/skills/a/loop", Message: "symlink loop: points back to /srv/team/skills; skipped"},
			skills.Problem{Path: "a/loop", Message: "symlink loop: points back to team/skills; skipped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := forClients(tt.in, roots); got != tt.want {
				t.Errorf("forClients = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
