package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// The ranking fixture of package router.
var routeFixture = filepath.Join("..", "..", "router", "testdata", "ranking")

func TestRouteJSON(t *testing.T) {
	tests := []struct {
		args     []string
		strategy string
		selected []string
		pinned   []string
	}{
		{[]string{"my SQL query is slow, which index should I add?"}, "hybrid", []string{"sql-tuning"}, nil},
		{[]string{"--strategy", "bm25", "deploy to kubernetes with helm"}, "bm25", []string{"k8s-deploy"}, nil},
		{[]string{"--strategy", "keyword", "hello there"}, "keyword", []string{}, nil},
		{[]string{"what's the capital of Australia?"}, "hybrid", []string{}, nil},
		{[]string{"--top-k", "0", "/pdf-forms and a slow sql query"}, "hybrid", []string{"pdf-forms"}, []string{"pdf-forms"}},
	}
	for _, tt := range tests {
		args := append([]string{"route", "--skills", routeFixture, "--json"}, tt.args...)
		out, errOut, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tt.args, err, errOut)
		}
		var d struct {
			Query    string  `json:"query"`
			Strategy string  `json:"strategy"`
			Embedder *string `json:"embedder"`
			Fallback *bool   `json:"fallback"`
			Ranked   []struct {
				ID         string             `json:"id"`
				Score      *float64           `json:"score"`
				Components map[string]float64 `json:"components"`
			} `json:"ranked"`
			Selected []string `json:"selected"`
			Pinned   []string `json:"pinned"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v: %v\n%s", tt.args, err, out)
		}
		wantEmb := "builtin"
		if !router.UsesEmbedder(router.Strategy(tt.strategy)) {
			wantEmb = "" // keyword and bm25 rank without it, as bench labels them
		}
		if d.Strategy != tt.strategy || d.Embedder == nil || *d.Embedder != wantEmb || d.Fallback == nil || *d.Fallback {
			t.Errorf("%v: header %+v", tt.args, d)
		}
		if d.Query != tt.args[len(tt.args)-1] || len(d.Ranked) != 8 || d.Ranked[0].Score == nil || len(d.Ranked[0].Components) == 0 {
			t.Errorf("%v: query %q, %d ranked", tt.args, d.Query, len(d.Ranked))
		}
		if d.Selected == nil || strings.Join(d.Selected, ",") != strings.Join(tt.selected, ",") {
			t.Errorf("%v: selected %v, want %v", tt.args, d.Selected, tt.selected)
		}
		if strings.Join(d.Pinned, ",") != strings.Join(tt.pinned, ",") {
			t.Errorf("%v: pinned %v, want %v", tt.args, d.Pinned, tt.pinned)
		}
	}
}

func TestRouteTable(t *testing.T) {
	out, _, err := run(t, "route", "--skills", routeFixture, "--rows", "3", "slow sql query, add an index")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"strategy: hybrid   embedder: builtin", "RANK", "COSINE", "1 ", "sql-tuning  *", "auto-load: sql-tuning"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n") > 20 {
		t.Errorf("--rows 3 printed too much:\n%s", out)
	}
}

func TestRouteErrors(t *testing.T) {
	tests := [][]string{
		{"route", "--skills", routeFixture},
		{"route", "--skills", routeFixture, "--strategy", "magic", "x"},
		{"route", "--skills", routeFixture, "--embedder", "cohere", "x"},
		{"route", "--skills", routeFixture, "--top-k", "-1", "x"},
		{"route", "--skills", routeFixture, "  "},
		{"route", "--skills", filepath.Join(t.TempDir(), "missing"), "x"},
	}
	for _, args := range tests {
		if _, _, err := run(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestRouteFallbackWhenEmbedderDown(t *testing.T) {
	// An ollama endpoint nobody serves: routing still answers, with bm25.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out, errOut, err := run(t, "route", "--skills", routeFixture, "--json", "--embedder", "ollama",
		"--embed-url", "http://127.0.0.1:1", "slow sql query")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var d router.Decision
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if !d.Fallback || d.Strategy != router.StrategyBM25 || d.FallbackReason == "" || d.Embedder != "ollama" {
		t.Errorf("decision %+v", d)
	}
	if !strings.Contains(errOut, "vector index unavailable") {
		t.Errorf("stderr does not explain the fallback:\n%s", errOut)
	}
}

func TestBuildRouterFollowsReloads(t *testing.T) {
	ctx := context.Background()
	reg, r, err := buildRouter(ctx, []string{routeFixture}, skills.Options{}, embed.Config{}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Snapshot() != reg.Snapshot() {
		t.Fatal("router and registry disagree")
	}
	snap := reg.Reload(ctx)
	if r.Snapshot() != snap {
		t.Error("router did not follow the reload")
	}
	d := r.Route(ctx, router.Query{Messages: []router.Message{{Role: "user", Text: "slow sql query"}}})
	if d.Embedder != "builtin" || d.Fallback || len(d.Selected) == 0 {
		t.Errorf("decision %+v", d)
	}
}

// --ranked lists that many ranked skills in --json; 0 lists the whole
// library.
func TestRouteRanked(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want int
	}{{"3", 3}, {"0", 8}, {"50", 8}} {
		out, errOut, err := run(t, "route", "--skills", routeFixture, "--json", "--ranked", tc.flag, "slow sql query")
		if err != nil {
			t.Fatalf("--ranked %s: %v\n%s", tc.flag, err, errOut)
		}
		var d struct {
			Ranked []json.RawMessage `json:"ranked"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Ranked) != tc.want {
			t.Errorf("--ranked %s: %d ranked (%v), want %d", tc.flag, len(d.Ranked), err, tc.want)
		}
	}
	if _, _, err := run(t, "route", "--skills", routeFixture, "--ranked", "-1", "x"); err == nil {
		t.Error("--ranked -1 accepted")
	}
}

// A skill an error keeps out of the library is named, with its path and
// line, by every command that works from the library, as serve logs it: an
// author whose edit broke a skill otherwise sees it missing from the ranking
// with no word why.
func TestCommandsReportSkippedSkills(t *testing.T) {
	lib := t.TempDir()
	writeSkillFile(t, filepath.Join(lib, "good", "SKILL.md"), "---\nname: good\ndescription: Tune slow SQL queries.\n---\nBody\n")
	writeSkillFile(t, filepath.Join(lib, "broken", "SKILL.md"), "---\nname: broken\ndescription: [oops\n---\nBody\n")
	writeSkillFile(t, filepath.Join(lib, "renamed", "SKILL.md"), "---\nname: other\ndescription: A warning only.\n---\nBody\n")
	queries := filepath.Join(t.TempDir(), "q.jsonl")
	writeSkillFile(t, queries, `{"query": "slow sql", "expected": ["good"]}`+"\n")
	want := filepath.Join(lib, "broken", "SKILL.md") + ":3: error: invalid YAML in frontmatter"
	for _, args := range [][]string{
		{"route", "--skills", lib, "slow sql"},
		{"route", "--skills", lib, "--json", "slow sql"},
		{"skills", "catalog", "--skills", lib},
		{"skills", "list", "--skills", lib},
		{"bench", "--skills", lib, "--queries", queries, "--strategies", "bm25"},
	} {
		_, errOut, err := run(t, args...)
		if err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		if !strings.Contains(errOut, want) {
			t.Errorf("%v: stderr does not name the skipped skill (want %q):\n%s", args, want, errOut)
		}
		if !strings.Contains(errOut, "1 warning") || strings.Contains(errOut, "does not match its folder") {
			t.Errorf("%v: warnings should be counted, not listed:\n%s", args, errOut)
		}
	}
}

// route says what the proxy would auto-load: a skill whose body does not fit
// the auto-load token budget is ranked first but not loaded, as in the
// rewrite (and bench), with the reason; --auto-load-budget moves the limit.
func TestRouteAppliesTheAutoLoadBudget(t *testing.T) {
	lib := t.TempDir()
	long := strings.Repeat("Check the query plan, the indexes and the statistics of every table involved. ", 600)
	writeSkillFile(t, filepath.Join(lib, "sql-tuning", "SKILL.md"), "---\nname: sql-tuning\ndescription: Speed up slow SQL queries with query plans and indexes.\n---\n"+long)
	writeSkillFile(t, filepath.Join(lib, "regex", "SKILL.md"), "---\nname: regex\ndescription: Write regular expressions.\n---\nBody\n")
	tests := []struct {
		args     []string
		selected []string
	}{
		{nil, []string{}},
		{[]string{"--auto-load-budget", "100000"}, []string{"sql-tuning"}},
	}
	for _, tt := range tests {
		args := append(append([]string{"route", "--skills", lib, "--json"}, tt.args...), "my slow sql query needs an index")
		out, errOut, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tt.args, err, errOut)
		}
		var d router.Decision
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Ranked) == 0 || d.Ranked[0].ID != "sql-tuning" {
			t.Fatalf("%v: ranking %+v", tt.args, d.Ranked)
		}
		if strings.Join(d.Selected, ",") != strings.Join(tt.selected, ",") {
			t.Errorf("%v: selected %v, want %v", tt.args, d.Selected, tt.selected)
		}
		if len(tt.selected) == 0 && !strings.Contains(d.Reasons["sql-tuning"], "over the auto-load budget") {
			t.Errorf("%v: reasons %v", tt.args, d.Reasons)
		}
	}
	out, _, err := run(t, "route", "--skills", lib, "my slow sql query needs an index")
	if err != nil || !strings.Contains(out, "auto-load: nothing") || strings.Contains(out, "no skill is a confident match") ||
		!strings.Contains(out, "over the auto-load budget") {
		t.Errorf("table (err %v):\n%s", err, out)
	}
}

// TestRouteJSONCJK: queries written without spaces, on the CJK fixture of
// package router, rank and select the skill written in their language.
func TestRouteJSONCJK(t *testing.T) {
	fixture := filepath.Join("..", "..", "router", "testdata", "ranking-cjk")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"把这个PDF文件转换成Word文档"}, "pdf-convert"},
		{[]string{"--strategy", "bm25", "帮我优化一下这个很慢的数据库查询"}, "db-query"},
		{[]string{"この文章の誤字脱字を校正してください"}, "ja-proofread"},
		{[]string{"--strategy", "bm25", "이력서를작성해주세요"}, "ko-resume"},
	}
	for _, tt := range tests {
		args := append([]string{"route", "--skills", fixture, "--json"}, tt.args...)
		out, errOut, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tt.args, err, errOut)
		}
		var d struct {
			Ranked []struct {
				ID string `json:"id"`
			} `json:"ranked"`
			Selected []string `json:"selected"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v: %v\n%s", tt.args, err, out)
		}
		if len(d.Ranked) == 0 || d.Ranked[0].ID != tt.want || len(d.Selected) == 0 || d.Selected[0] != tt.want {
			t.Errorf("%v: ranked %v, selected %v, want %q first", tt.args, d.Ranked, d.Selected, tt.want)
		}
	}
}

// A routing index kept by a server stopped before it settled an edit (its
// build kept the library's older fit) is settled before `route` ranks:
// a one-off route ranks as a fresh start does.
func TestRouteSettlesAKeptIndex(t *testing.T) {
	lib := t.TempDir()
	write := func(id, desc string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(lib, id), 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + id + "\ndescription: " + desc + "\n---\n# " + id + "\n\nSteps for " + desc + "\n"
		if err := os.WriteFile(filepath.Join(lib, id, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, topic := range []string{"postgres query plans", "kubernetes pod crashes", "pdf form filling", "regex for dates",
		"git commit messages", "docker image size", "csv data profiling", "incident postmortems", "api pagination",
		"changelog entries", "terraform state drift", "react hooks bugs", "python packaging", "go race conditions",
		"sql index tuning", "css grid layouts", "bash script safety", "kafka consumer lag", "redis eviction", "latex tables"} {
		write(fmt.Sprintf("skill-%02d", i), "Helps with "+topic+". Use when the user asks about "+topic+".")
	}
	idx := t.TempDir()
	t.Setenv("SKILLROUTER_ROUTING_INDEX_DIR", idx)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	opts := router.Options{SettleAfter: -1, IndexDir: idx}
	reg, r, err := buildRouter(ctx, []string{lib}, skills.Options{}, embed.Config{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	write("json-fixer", "Repairs malformed JSON with trailing commas and unquoted keys. Use when JSON fails to parse.")
	reg.Reload(ctx)
	if err := r.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	r.Close() // the edit's index is kept, unsettled
	const q = "my JSON has trailing commas and the postgres query plan is slow"
	kept, _, err := run(t, "route", "--skills", lib, "--json", "--ranked", "0", q)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SKILLROUTER_ROUTING_INDEX_DIR", t.TempDir()) // a fresh start
	fresh, _, err := run(t, "route", "--skills", lib, "--json", "--ranked", "0", q)
	if err != nil {
		t.Fatal(err)
	}
	strip := func(s string) string { // the one field that differs by nature
		var d map[string]any
		_ = json.Unmarshal([]byte(s), &d)
		delete(d, "latency_ms")
		b, _ := json.Marshal(d)
		return string(b)
	}
	if strip(kept) != strip(fresh) {
		t.Errorf("route on the kept, unsettled index ranks differently from a fresh start:\nkept  %s\nfresh %s", kept, fresh)
	}
}

// TestRouteMentionsNotPinned: route says which #mentions pinned nothing
// and why (skipped for errors, no such skill with a suggestion), and lists
// the skills not loaded in rank order.
func TestRouteMentionsNotPinned(t *testing.T) {
	lib := t.TempDir()
	writeSkillFile(t, filepath.Join(lib, "good", "SKILL.md"), "---\nname: good\ndescription: Do good things with widgets.\n---\nBody\n")
	writeSkillFile(t, filepath.Join(lib, "badyaml", "SKILL.md"), "---\nname: badyaml\ndescription: [x\n---\nBody\n")
	writeSkillFile(t, filepath.Join(lib, "a", "pdf", "SKILL.md"), "---\nname: pdf\ndescription: Make PDF files from documents.\n---\nBody\n")
	writeSkillFile(t, filepath.Join(lib, "b", "pdf", "SKILL.md"), "---\nname: pdf\ndescription: Read tables out of PDF files.\n---\nBody\n")
	out, errOut, err := run(t, "route", "--skills", lib, "use #badyaml and #Good and #goood and #pdf please")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"pinned:    good", "#badyaml: skipped for errors", "#goood: no skill has this id or name; did you mean #good?",
		"#pdf: names more than one skill (a/pdf, b/pdf): mention one by its id"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(strings.ToLower(out), "#good:") { // pinned, whatever its case
		t.Errorf("a pinned mention is listed as not pinned:\n%s", out)
	}
}

func TestRouteNotLoadedInRankOrder(t *testing.T) {
	var b strings.Builder
	d := &router.Decision{Query: "q", Strategy: "bm25",
		Ranked:  []router.Scored{{ID: "zeta", Score: 3}, {ID: "alpha", Score: 2}, {ID: "mid", Score: 1}},
		Reasons: map[string]string{"alpha": "second", "zeta": "first", "mid": "third", "aaa-mentioned": "not ranked"}}
	if err := writeDecisionTable(&b, d, 10, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "not loaded:")
	if got := out[i:]; !regexp.MustCompile(`(?s)zeta.*alpha.*mid.*aaa-mentioned`).MatchString(got) {
		t.Errorf("not in rank order:\n%s", got)
	}
}
