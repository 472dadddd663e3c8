package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
)

// wordRouter is a deterministic stand-in for the real router: it ranks by
// the number of query words (4+ letters) found in a skill's description, ties
// by id, and selects the top skill when it shares at least two words.
type wordRouter struct {
	ranked map[int]int // calls by Query.Ranked
	snap   *skills.Snapshot
	calls  int
}

func (w *wordRouter) Route(_ context.Context, q router.Query) *router.Decision {
	w.calls++
	if w.ranked == nil {
		w.ranked = map[int]int{}
	}
	w.ranked[q.Ranked]++
	text := strings.ToLower(q.Messages[len(q.Messages)-1].Text)
	var words []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return !(r >= 'a' && r <= 'z') }) {
		if len(f) >= 4 {
			words = append(words, f)
		}
	}
	var ranked []router.Scored
	for _, s := range w.snap.Skills() {
		d := strings.ToLower(s.Description)
		n := 0
		for _, wd := range words {
			if strings.Contains(d, wd) {
				n++
			}
		}
		ranked = append(ranked, router.Scored{ID: s.ID, Score: float64(n)})
	}
	slices.SortStableFunc(ranked, func(a, b router.Scored) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	d := &router.Decision{Strategy: q.Strategy, Embedder: "words", Ranked: ranked}
	if len(ranked) > 0 && ranked[0].Score >= 2 {
		d.Selected = []string{ranked[0].ID}
	}
	return d
}

func fixtureLibrary(t *testing.T) (*skills.Snapshot, *MetaTool) {
	t.Helper()
	m, err := LoadMetaTool(filepath.Join("testdata", "metatool"), Selection{})
	if err != nil {
		t.Fatal(err)
	}
	snap, dir, missing, err := Materialize(context.Background(), m.SkillFiles(), skills.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if len(missing) > 0 {
		t.Fatalf("tools not loaded: %v", missing)
	}
	return snap, m
}

type countingProgress struct {
	added     int
	described []string
}

func (c *countingProgress) Describe(s string) { c.described = append(c.described, s) }
func (c *countingProgress) Add(n int)         { c.added += n }
func (c *countingProgress) Finish()           {}

func testConfig(t *testing.T, snap *skills.Snapshot, qs []Query) (Config, *wordRouter) {
	acc, err := NewAccountant(tokens.O200kBase, tokens.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	wr := &wordRouter{snap: snap}
	return Config{
		Dataset: "fixture", Snapshot: snap, Queries: qs,
		Strategies: []router.Strategy{router.StrategyBM25, router.StrategyHybrid},
		Ks:         []int{1, 3}, Embedder: "none", Tokens: acc,
		Build: func(_ context.Context, s *skills.Snapshot) (Router, error) { wr.snap = s; return wr, nil },
	}, wr
}

func TestMaterializeMetaTool(t *testing.T) {
	snap, m := fixtureLibrary(t)
	if got := len(snap.Skills()); got != len(m.Tools) {
		t.Fatalf("%d skills loaded, want %d", got, len(m.Tools))
	}
	s, ok := snap.Get("PDF&URLTool")
	if !ok {
		t.Fatal("PDF&URLTool not loaded")
	}
	if s.Description != "Summarise a PDF document or a web page from its URL." || strings.TrimSpace(s.Body()) != s.Description {
		t.Fatalf("description %q body %q", s.Description, s.Body())
	}
	q, _ := snap.Get("claude_helper")
	if q.Description != `Answers "quoted" questions: with colons, and <angle> brackets.` {
		t.Fatalf("quoted description %q", q.Description)
	}
	// A file the loader cannot parse is reported, not lost silently.
	_, dir, missing, err := Materialize(context.Background(), []SkillFile{
		{ID: "good", Content: SkillMarkdown("good", "fine", "body")},
		{ID: "broken", Content: "no frontmatter at all"},
	}, skills.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if len(missing) != 1 || missing[0].ID != "broken" || !strings.HasPrefix(missing[0].String(), "broken: ") {
		t.Fatalf("missing = %v", missing)
	}
}

func TestRun(t *testing.T) {
	snap, m := fixtureLibrary(t)
	qs := append(slices.Clone(m.Queries),
		Query{ID: "chat", Text: "Good morning, how are you?", Expected: []string{}},
		Query{ID: "chat2", Text: "Real stock weather market prices today", Expected: []string{}},
	)
	cfg, wr := testConfig(t, snap, qs)
	prog := &countingProgress{}
	cfg.Progress = prog
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skills != 4 || rep.Queries != 8 || rep.RankedQueries != 6 || rep.EmptyQueries != 2 || len(rep.Results) != 2 {
		t.Fatalf("report header %+v", rep)
	}
	if prog.added != 2*8 || !slices.Equal(prog.described, []string{"bm25", "hybrid"}) {
		t.Fatalf("progress %+v", prog)
	}
	// One untimed warm-up per strategy, then every query twice: timed for
	// the top the proxy uses, untimed for the whole ranking.
	if wr.calls != 2*(2*8+1) {
		t.Fatalf("router called %d times", wr.calls)
	}
	if d := router.RankDepth(cfg.Rewrite); wr.ranked[d] != 2*(8+1) || wr.ranked[0] != 2*8 {
		t.Fatalf("calls by depth %v: want %d at the proxy's depth %d, %d for the whole ranking", wr.ranked, 2*(8+1), d, 2*8)
	}

	// Quality must equal Evaluate over the router's own outcomes.
	var js []Judged
	for _, q := range qs {
		d := wr.Route(context.Background(), toRouterQuery(q, router.StrategyBM25))
		js = append(js, Judged{Expected: q.Expected, Ranked: rankedIDs(d), Selected: d.Selected, Shown: rankedIDs(d), ShownKnown: true})
	}
	want := Evaluate(js, []int{1, 3})
	res := rep.Results[0]
	// bm25 uses no embedder whatever the router says; hybrid takes the decision's.
	if res.Strategy != "bm25" || res.Embedder != "none" || rep.Results[1].Embedder != "words" {
		t.Fatalf("labels %q %q %q", res.Strategy, res.Embedder, rep.Results[1].Embedder)
	}
	if res.HitAt.Values[1] != round(want.HitAt[1], 4) || res.MRR != round(want.MRR, 4) || res.SelectedPrecision != round(want.SelectedPrecision, 4) {
		t.Fatalf("metrics %+v, want %+v", res, want)
	}
	if res.FalseInjectionRate == nil || *res.FalseInjectionRate != 0.5 {
		t.Fatalf("false injection %v (chat2 names three descriptions' words)", res.FalseInjectionRate)
	}
	// A 4-skill catalog fits the budget: everything is shown.
	if res.ShownHit == nil || *res.ShownHit != 1 || res.CatalogEntriesMean != 4 {
		t.Fatalf("shown hit %v entries %v", res.ShownHit, res.CatalogEntriesMean)
	}

	// Tokens: stuff-all is the sum of every SKILL.md; o200k router tokens equal
	// the rewrite's own AddedTokens for each query.
	o200k, _ := tokens.Get(tokens.O200kBase)
	stuff := 0
	for _, s := range snap.Skills() {
		stuff += o200k.Count(s.Content())
	}
	if res.PromptTokens.StuffAll.Mean != float64(stuff) {
		t.Fatalf("stuff-all %v, want %d", res.PromptTokens.StuffAll.Mean, stuff)
	}
	var added []int
	for _, q := range qs {
		rq := toRouterQuery(q, router.StrategyBM25)
		p, err := router.BuildPrompt(context.Background(), snap, wr.Route(context.Background(), rq), rq.Messages, router.RewriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, p.AddedTokens)
		if got := cfg.Tokens.Router(p).Total()[0]; got != p.AddedTokens {
			t.Errorf("query %s: counted %d tokens, the rewrite says %d", q.ID, got, p.AddedTokens)
		}
	}
	if res.PromptTokens.Router.Mean != round(Mean(added), 1) || res.PromptTokens.Router.P95 != float64(Percentile(added, 95)) {
		t.Fatalf("router tokens %+v, want mean %v", res.PromptTokens.Router, Mean(added))
	}
	cl := res.PromptTokensByEncoding["cl100k_base"]
	if cl.Router.Mean <= 0 || cl.StuffAll.Mean <= 0 || res.PromptTokensByEncoding["o200k_base"] != res.PromptTokens {
		t.Fatalf("by encoding %+v", res.PromptTokensByEncoding)
	}
	if res.LatencyMS.P50 < 0 || res.LatencyMS.P50 > res.LatencyMS.P99 {
		t.Fatalf("latency %+v", res.LatencyMS)
	}
}

func TestRunCatalogModeAll(t *testing.T) {
	snap, m := fixtureLibrary(t)
	cfg, _ := testConfig(t, snap, m.Queries)
	cfg.Rewrite = router.RewriteOptions{CatalogMode: router.CatalogAll}
	cfg.Tokens, _ = NewAccountant(tokens.O200kBase)
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	pt := rep.Results[0].PromptTokens
	// In mode all the catalog shown is the full catalog.
	if pt.RouterCatalog.Mean != pt.CatalogOnly.Mean {
		t.Fatalf("router catalog %v, catalog-only %v", pt.RouterCatalog.Mean, pt.CatalogOnly.Mean)
	}
	if rep.Results[0].PromptTokensByEncoding != nil {
		t.Fatal("by-encoding map with a single encoding")
	}
}

func TestRunWarnsAndFails(t *testing.T) {
	snap, _ := fixtureLibrary(t)
	qs := []Query{{ID: "a", Text: "weather", Expected: []string{"NoSuchTool"}}}
	cfg, _ := testConfig(t, snap, qs)
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.UnknownExpected, []string{"NoSuchTool"}) || rep.Results[0].HitAt.Values[3] != 0 {
		t.Fatalf("unknown expected %v", rep.UnknownExpected)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}

	failing := cfg
	failing.Build = func(context.Context, *skills.Snapshot) (Router, error) { return nil, errors.New("no index") }
	if _, err := Run(context.Background(), failing); err == nil || !strings.Contains(err.Error(), "no index") {
		t.Fatalf("build failure: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"no queries":    func(c *Config) { c.Queries = nil },
		"no strategies": func(c *Config) { c.Strategies = nil },
		"bad k":         func(c *Config) { c.Ks = []int{0} },
		"no library":    func(c *Config) { c.Snapshot = nil },
	} {
		c := cfg
		mut(&c)
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRunScale(t *testing.T) {
	snap, m := fixtureLibrary(t)
	cfg, _ := testConfig(t, snap, m.Queries)
	cfg.Strategies = []router.Strategy{router.StrategyBM25}
	var warnings []string
	rep, err := RunScale(context.Background(), ScaleConfig{Config: cfg, Sizes: []int{2, 10}, Seed: 1,
		Warnings: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	if len(rep.Scale) != 2 || rep.Results != nil {
		t.Fatalf("report %+v", rep)
	}
	small, big := rep.Scale[0], rep.Scale[1]
	if small.Size != 2 || small.Real != 2 || small.Synthetic != 0 || big.Size != 10 || big.Real != 4 || big.Synthetic != 6 {
		t.Fatalf("sizes %+v %+v", small, big)
	}
	// Expected skills come first: at size 2 the two tools expected by the
	// first queries are in, so the queries naming only them are evaluated.
	if small.QueriesEvaluated == 0 || small.QueriesEvaluated >= big.QueriesEvaluated || big.QueriesEvaluated != 6 {
		t.Fatalf("evaluated %d then %d", small.QueriesEvaluated, big.QueriesEvaluated)
	}
	if big.CatalogTokens <= small.CatalogTokens || big.StuffAllTokens <= small.StuffAllTokens {
		t.Fatalf("tokens do not grow: %+v %+v", small, big)
	}
	if small.Results[0].RankedQueries != small.QueriesEvaluated {
		t.Fatalf("quality over %d queries, want %d", small.Results[0].RankedQueries, small.QueriesEvaluated)
	}
	if _, err := RunScale(context.Background(), ScaleConfig{Config: cfg}); err == nil {
		t.Fatal("no sizes accepted")
	}
	if _, err := RunScale(context.Background(), ScaleConfig{Config: cfg, Sizes: []int{0}}); err == nil {
		t.Fatal("size 0 accepted")
	}
}

// An expected skill the library skipped for errors is not "not in the
// library": it is reported apart, so its author runs validate.
func TestRunReportsSkippedExpected(t *testing.T) {
	root := t.TempDir()
	for name, fm := range map[string]string{"good": "name: good\ndescription: Check the weather.", "bad": "name: Bad Name\ndescription: Broken."} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name, "SKILL.md"), []byte("---\n"+fm+"\n---\nBody.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := skills.Load(context.Background(), []string{root}, skills.Options{})
	qs := []Query{{ID: "a", Text: "weather", Expected: []string{"bad", "gone"}}}
	cfg, _ := testConfig(t, snap, qs)
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.SkippedExpected, []string{"bad"}) || !slices.Equal(rep.UnknownExpected, []string{"gone"}) {
		t.Fatalf("skipped %v, unknown %v", rep.SkippedExpected, rep.UnknownExpected)
	}
}

// Arms are rows of their own: each routes with its strategy, an arm with a
// builder of its own gets a router built for it (and closed), the others
// share the main one; rows are labelled with the arm, also at every scale
// size.
func TestRunArms(t *testing.T) {
	snap, m := fixtureLibrary(t)
	cfg, wr := testConfig(t, snap, m.Queries)
	own := &wordRouter{}
	built := 0
	cfg.Arms = []Arm{
		{Name: "control", Strategy: router.StrategyHybrid},
		{Name: "candidate", Strategy: router.StrategyBM25, Embedder: "other",
			Build: func(_ context.Context, s *skills.Snapshot) (Router, error) { built++; own.snap = s; return own, nil }},
	}
	prog := &countingProgress{}
	cfg.Progress = prog
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[0].Label() != "control (hybrid)" || rep.Results[1].Label() != "candidate (bm25)" {
		t.Fatalf("rows %+v", rep.Results)
	}
	if rep.Results[0].Arm != "control" || rep.Results[1].Strategy != "bm25" || rep.Results[1].Embedder != "none" {
		t.Errorf("labels %+v %+v", rep.Results[0], rep.Results[1])
	}
	n := len(m.Queries)
	if built != 1 || wr.calls != 2*n+1 || own.calls != 2*n+1 {
		t.Errorf("built %d own routers; main router %d calls, the arm's %d, want %d each", built, wr.calls, own.calls, 2*n+1)
	}
	if !slices.Equal(prog.described, []string{"control (hybrid)", "candidate (bm25)"}) {
		t.Errorf("progress %v", prog.described)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, rep); err != nil || !strings.Contains(md.String(), "| candidate (bm25) | none |") {
		t.Errorf("markdown (%v) has no candidate row:\n%s", err, md.String())
	}

	sc, err := RunScale(context.Background(), ScaleConfig{Config: cfg, Sizes: []int{3}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Scale[0].Results; len(got) != 2 || got[1].Label() != "candidate (bm25)" || built != 2 {
		t.Errorf("scale rows %+v after %d builds", got, built)
	}
}
