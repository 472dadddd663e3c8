package router_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// Quality of every strategy with the builtin embedder on the two labelled
// sets in ../shared/bench (see its README), until `router bench` reports
// the same figures. Run with -v to see them:
//
//	go test ./router -run TestQuality -v
//
// The asserted goals (issue 3): hybrid beats bm25 on Hit@3 and MRR (on
// upstream-queries Hit@3 is a tie, see below), bm25 beats keyword, and
// upstream-queries' must-not-trigger prompts select nothing.
//
// Knobs for measuring alternatives (each logged figure set is one run):
// QUALITY_VERBOSE=1 logs every miss; QUALITY_SWEEP=1 sweeps thresholds;
// BUILTIN_DIMS=n, HYBRID_W=w (bm25 share of the hybrid ranking),
// HYBRID_RRF=1 (reciprocal rank fusion), CODE_W=w (weight of code blocks).
// METATOOL_HELDOUT=1 also reports bm25 and hybrid on the 18,550 MetaTool
// single-tool queries outside the 2,000 sample, which no threshold or
// weight was tuned on.

func benchDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "bench")
	if _, err := os.Stat(filepath.Join(dir, "metatool", "tools.jsonl")); err != nil {
		t.Skip("bench data not found at " + dir)
	}
	return dir
}

type labelled struct {
	Query    string   `json:"query"`
	Expected []string `json:"expected"`
	Split    string   `json:"split"`
}

func readJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// metatoolLibrary turns MetaTool's tools into skills (id = tool id,
// description as description and body), written as SKILL.md folders so the
// real loader builds the snapshot.
func metatoolLibrary(t testing.TB, dir string) *skills.Snapshot {
	t.Helper()
	type tool struct{ ID, Description string }
	tools := readJSONL[tool](t, filepath.Join(dir, "metatool", "tools.jsonl"))
	root := t.TempDir()
	for _, tl := range tools {
		desc, _ := json.Marshal(strings.TrimSpace(tl.Description))
		md := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n%s\n", kebab(tl.ID), desc, tl.Description)
		if err := os.MkdirAll(filepath.Join(root, tl.ID), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, tl.ID, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := skills.Load(context.Background(), []string{root}, skills.Options{})
	if got := len(snap.Skills()); got != len(tools) {
		t.Fatalf("metatool library: %d of %d tools loaded: %v", got, len(tools), snap.Problems())
	}
	return snap
}

// kebab makes a valid skill name from a tool id: "PDF&URLTool" -> "pdf-url-tool".
func kebab(id string) string {
	var b strings.Builder
	rs := []rune(id)
	for i, r := range rs {
		switch {
		case unicode.IsUpper(r):
			if i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	return strings.Trim(b.String(), "-")
}

type metrics struct {
	n                   int
	h1, h3, h5, mrr     float64
	selHit, selN        int // positives with an expected skill selected
	negClean, negN      int // negatives with nothing selected
	selCount, fallbacks int
}

func (m metrics) String() string {
	n := float64(max(m.n, 1))
	s := fmt.Sprintf("n=%d Hit@1 %.3f Hit@3 %.3f Hit@5 %.3f MRR %.3f | selected-correct %d/%d, avg selected %.2f",
		m.n, m.h1/n, m.h3/n, m.h5/n, m.mrr/n, m.selHit, m.selN, float64(m.selCount)/float64(max(m.selN+m.negN, 1)))
	if m.negN > 0 {
		s += fmt.Sprintf(", negatives clean %d/%d", m.negClean, m.negN)
	}
	if m.fallbacks > 0 {
		s += fmt.Sprintf(", FALLBACKS %d", m.fallbacks)
	}
	return s
}

func evaluate(t testing.TB, r *router.Router, s router.Strategy, qs []labelled, verbose bool) metrics {
	var m metrics
	for _, q := range qs {
		d := r.Route(context.Background(), router.Query{Messages: []router.Message{{Role: "user", Text: q.Query}}, Strategy: s})
		if d.Fallback {
			m.fallbacks++
		}
		m.selCount += len(d.Selected)
		if len(q.Expected) == 0 {
			m.negN++
			if len(d.Selected) == 0 {
				m.negClean++
			} else if verbose {
				t.Logf("  %s: negative %q selected %v (scores %v)", s, q.Query, d.Selected, topScores(d, 3))
			}
			continue
		}
		want := map[string]bool{}
		for _, e := range q.Expected {
			want[e] = true
		}
		rank := 0
		for i, sc := range d.Ranked {
			if want[sc.ID] {
				rank = i + 1
				break
			}
		}
		m.n++
		if rank == 1 {
			m.h1++
		}
		if rank >= 1 && rank <= 3 {
			m.h3++
		}
		if rank >= 1 && rank <= 5 {
			m.h5++
		}
		if rank > 0 {
			m.mrr += 1 / float64(rank)
		}
		m.selN++
		for _, id := range d.Selected {
			if want[id] {
				m.selHit++
				break
			}
		}
		if verbose && (rank != 1 || len(d.Selected) == 0 || d.Selected[0] != d.Ranked[0].ID) {
			t.Logf("  %s: rank %d selected %v top %v for %.70q", s, rank, d.Selected, topScores(d, 2), q.Query)
		}
	}
	return m
}

func topScores(d *router.Decision, n int) []string {
	var out []string
	for _, s := range d.Ranked[:min(n, len(d.Ranked))] {
		out = append(out, fmt.Sprintf("%s=%.3f", s.ID, s.Score))
	}
	return out
}

func builtinOptions() router.Options {
	dims := 0
	fmt.Sscan(os.Getenv("BUILTIN_DIMS"), &dims)
	o := embed.DefaultBuiltinOptions
	if dims > 0 {
		o.Dimensions = dims
	}
	b := embed.NewBuiltinWith(o)
	return router.Options{
		Embedder: b,
		Fit:      func(c []string) router.Embedder { return b.Fit(c) },
	}
}

func TestQuality(t *testing.T) {
	if testing.Short() {
		t.Skip("quality measurement skipped with -short")
	}
	dir := benchDir(t)
	verbose := os.Getenv("QUALITY_VERBOSE") != ""
	ctx := context.Background()

	up := skills.Load(ctx, []string{filepath.Join(dir, "skills")}, skills.Options{})
	upQueries := readJSONL[labelled](t, filepath.Join(dir, "upstream-queries", "queries.jsonl"))
	ru, err := router.New(ctx, up, builtinOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer ru.Close()

	mt := metatoolLibrary(t, dir)
	var single []labelled
	for _, q := range readJSONL[labelled](t, filepath.Join(dir, "metatool", "queries.jsonl")) {
		if q.Split == "single" {
			single = append(single, q)
		}
	}
	// A fixed, seeded sample keeps the run short and the figures stable.
	rng := rand.New(rand.NewSource(1))
	rng.Shuffle(len(single), func(i, j int) { single[i], single[j] = single[j], single[i] })
	heldout := single[min(2000, len(single)):] // the rest: see METATOOL_HELDOUT
	single = single[:min(2000, len(single))]
	rm, err := router.New(ctx, mt, builtinOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()

	if w := os.Getenv("HYBRID_W"); w != "" {
		var x float64
		fmt.Sscan(w, &x)
		defer router.SetHybridBM25Weight(x)()
	}
	if w := os.Getenv("CODE_W"); w != "" {
		var x float64
		fmt.Sscan(w, &x)
		defer router.SetCodeWeight(x)()
	}
	if os.Getenv("HYBRID_RRF") != "" {
		defer router.SetHybridRRF(true)()
	}
	if os.Getenv("QUALITY_SWEEP") != "" {
		for _, rel := range []float64{-1, 0.7, 0.8, 0.9} {
			for _, th := range []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3} {
				o := builtinOptions()
				o.RelativeScore = rel
				o.MinScore = map[router.Strategy]float64{router.StrategyBM25: th, router.StrategyEmbedding: th, router.StrategyHybrid: th}
				a, _ := router.New(ctx, up, o)
				b, _ := router.New(ctx, mt, o)
				for _, s := range router.Strategies[1:] {
					t.Logf("rel %.1f th %.2f %-9s up: %v", rel, th, s, evaluate(t, a, s, upQueries, false))
					t.Logf("rel %.1f th %.2f %-9s mt: %v", rel, th, s, evaluate(t, b, s, single[:500], false))
				}
			}
		}
		return
	}
	if os.Getenv("METATOOL_HELDOUT") != "" {
		// Every single-tool query outside the sample: a check that a gain
		// on the sample is not an artefact of tuning on it.
		for _, s := range []router.Strategy{router.StrategyBM25, router.StrategyHybrid} {
			t.Logf("metatool-heldout  %-9s %v", s, evaluate(t, rm, s, heldout, false))
		}
	}
	res := map[string]map[router.Strategy]metrics{"upstream": {}, "metatool": {}}
	for _, s := range router.Strategies {
		res["upstream"][s] = evaluate(t, ru, s, upQueries, verbose)
		res["metatool"][s] = evaluate(t, rm, s, single, false)
		t.Logf("upstream-queries %-9s %v", s, res["upstream"][s])
		t.Logf("metatool         %-9s %v", s, res["metatool"][s])
	}
	for _, set := range []string{"upstream", "metatool"} {
		m := res[set]
		h, b, k := m[router.StrategyHybrid], m[router.StrategyBM25], m[router.StrategyKeyword]
		if h.fallbacks > 0 {
			t.Errorf("%s: hybrid fell back to bm25 %d times", set, h.fallbacks)
		}
		// Hit@3 on upstream-queries is a tie (36/41 each): the five
		// prompts neither finds need knowledge no lexical method has
		// ("our Research database" means Notion). Hybrid must not lose
		// there and must win everywhere else.
		h3ok := h.h3 > b.h3
		if set == "upstream" {
			h3ok = h.h3 >= b.h3
		}
		if !h3ok || !(h.mrr > b.mrr) {
			t.Errorf("%s: hybrid (Hit@3 %.3f, MRR %.3f) does not beat bm25 (Hit@3 %.3f, MRR %.3f)",
				set, h.h3/float64(h.n), h.mrr/float64(h.n), b.h3/float64(b.n), b.mrr/float64(b.n))
		}
		if !(b.h3 > k.h3 && b.mrr > k.mrr) {
			t.Errorf("%s: bm25 (Hit@3 %.3f, MRR %.3f) does not beat keyword (Hit@3 %.3f, MRR %.3f)",
				set, b.h3/float64(b.n), b.mrr/float64(b.n), k.h3/float64(k.n), k.mrr/float64(k.n))
		}
	}
	for _, s := range []router.Strategy{router.StrategyBM25, router.StrategyEmbedding, router.StrategyHybrid} {
		if m := res["upstream"][s]; m.negClean != m.negN {
			t.Errorf("upstream-queries %s: %d of %d must-not-trigger prompts selected a skill", s, m.negN-m.negClean, m.negN)
		}
	}
}
