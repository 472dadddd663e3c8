package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./bench -run %s -update):\n%s", p, t.Name(), got)
	}
}

func ptr(v float64) *float64 { return &v }

func kmap(ks []int, vs ...float64) KMap {
	m := KMap{Ks: ks, Values: map[int]float64{}}
	for i, k := range ks {
		m.Values[k] = vs[i]
	}
	return m
}

// sampleReport is a hand-made report: output tests do not depend on a router.
func sampleReport() *Report {
	ks := []int{1, 3, 5, 10}
	pt := func(router, p95 float64) PromptTokens {
		return PromptTokens{
			StuffAll: Stat{Mean: 1070464, P95: 1070464}, CatalogOnly: Stat{Mean: 36012, P95: 36012},
			Router: Stat{Mean: router, P95: p95}, RouterSavings: round(1-router/1070464, 4),
			CatalogOnlySavings: round(1-36012.0/1070464, 4),
		}
	}
	return &Report{
		Dataset: "upstream-queries", Skills: 407, Queries: 44, RankedQueries: 41, EmptyQueries: 3,
		Encodings: []string{"o200k_base", "cl100k_base"}, Ks: ks, IndexBuildMS: 812.5,
		UnknownExpected: []string{"gone/skill"},
		Results: []Result{
			{Strategy: "bm25", Embedder: "none", HitAt: kmap(ks, 0.4, 0.6, 0.7, 0.8), RecallAt: kmap(ks, 0.35, 0.55, 0.65, 0.75),
				MRR: 0.51, NDCG10: 0.56, SelectedPrecision: 0.5, SelectedRecall: 0.3, FalseInjectionRate: ptr(1.0 / 3),
				ShownHit: ptr(1), LatencyMS: Latency{P50: 0.21, P95: 0.4, P99: 0.9, Mean: 0.25, Max: 1.2}, CPUMS: 0.19,
				PromptTokens: pt(42000.5, 51000), RankedQueries: 41, EmptyQueries: 3, SelectedMean: 1.2, CatalogEntriesMean: 407,
				PromptTokensByEncoding: map[string]PromptTokens{"o200k_base": pt(42000.5, 51000), "cl100k_base": pt(43000, 52000)}},
			{Strategy: "hybrid", Embedder: "builtin", HitAt: kmap(ks, 0.5, 0.7, 0.8, 0.9), RecallAt: kmap(ks, 0.45, 0.65, 0.75, 0.85),
				MRR: 0.61, NDCG10: 0.66, SelectedPrecision: 0.6, SelectedRecall: 0.4, FalseInjectionRate: ptr(0),
				LatencyMS: Latency{P50: 0.5, P95: 0.8, P99: 1.4, Mean: 0.55, Max: 2}, CPUMS: 0.42, Fallbacks: 2,
				PromptTokens: pt(41000, 50000), RankedQueries: 41, EmptyQueries: 3, SelectedMean: 1, CatalogEntriesMean: 407,
				PromptTokensByEncoding: map[string]PromptTokens{"o200k_base": pt(41000, 50000), "cl100k_base": pt(42000, 51000)}},
		},
	}
}

func sampleScale() *Report {
	r := sampleReport()
	base := r.Results
	r.Results = nil
	r.Encodings = r.Encodings[:1]
	for i, n := range []int{10, 100, 1000, 10000} {
		p := ScalePoint{Size: n, Real: min(n, 407), Synthetic: max(n-407, 0), WriteMS: float64(n) / 20, LoadMS: float64(n) / 10,
			IndexBuildMS: float64(n) / 3, CatalogTokens: 90 * n, StuffAllTokens: 2600 * n, QueriesEvaluated: min(41, n),
			RSSMB: 60 + float64(n)/40}
		for _, b := range base {
			b.PromptTokensByEncoding = nil
			b.PromptTokens.Router = Stat{Mean: 5000 + float64(i)*100, P95: 9000}
			b.LatencyMS.P50 *= float64(i + 1)
			b.LatencyMS.P99 *= float64(i*i + 1)
			b.CPUMS *= 1 + float64(i)/4
			p.Results = append(p.Results, b)
		}
		r.Scale = append(r.Scale, p)
	}
	return r
}

func TestJSONShape(t *testing.T) {
	b, err := json.MarshalIndent(sampleReport(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// The keys, in its order for hit_at.
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dataset", "skills", "queries", "results"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("missing top-level key %q", k)
		}
	}
	res := doc["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"strategy", "embedder", "hit_at", "recall_at", "mrr", "ndcg_at_10", "selected_precision",
		"selected_recall", "false_injection_rate", "latency_ms", "prompt_tokens"} {
		if _, ok := res[k]; !ok {
			t.Errorf("missing result key %q", k)
		}
	}
	for _, k := range []string{"p50", "p95", "p99"} {
		if _, ok := res["latency_ms"].(map[string]any)[k]; !ok {
			t.Errorf("missing latency_ms.%s", k)
		}
	}
	ptk := res["prompt_tokens"].(map[string]any)
	for _, path := range [][2]string{{"stuff_all", "mean"}, {"catalog_only", "mean"}, {"router", "mean"}, {"router", "p95"}} {
		if _, ok := ptk[path[0]].(map[string]any)[path[1]]; !ok {
			t.Errorf("missing prompt_tokens.%s.%s", path[0], path[1])
		}
	}
	compact, _ := json.Marshal(sampleReport())
	if !strings.Contains(string(compact), `"hit_at":{"1":0.4,"3":0.6,"5":0.7,"10":0.8}`) {
		t.Errorf("hit_at not in k order:\n%s", compact)
	}
	golden(t, "report.json", append(b, '\n'))

	// Round trip, KMap included.
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Results[1].HitAt.Values[10]; got != 0.9 {
		t.Errorf("round trip hit@10 = %v", got)
	}
	if ks := back.Results[1].HitAt.Ks; len(ks) != 4 || ks[3] != 10 {
		t.Errorf("round trip ks = %v", ks)
	}
	if back.Results[1].ShownHit != nil {
		t.Error("absent shown_hit came back")
	}
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{
		"| strategy | embedder | Hit@1 | Hit@3 | Hit@5 | Hit@10 |",
		"| hybrid | builtin | 0.500 | 0.700 | 0.800 | 0.900 |",
		"0.333 | 1.000 |", // bm25 false injection and shown hit
		"0.000 | – |",     // hybrid: no shown hit known
		"Prompt tokens added per request (cl100k_base)",
		"| bm25 | 1070464 | 36012 | 43000 | 52000 | 0 | 0 | 96.0% |",
		"1 expected ids are not in the library",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("markdown lacks %q:\n%s", want, s)
		}
	}
	golden(t, "report.md", b.Bytes())

	b.Reset()
	if err := WriteMarkdown(&b, sampleScale()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| 10000 | 407 | 9593 |") ||
		!strings.Contains(b.String(), "- hybrid: router prompt tokens 5100 at 100 skills → 5300 at 10000 skills (+3.9%)") {
		t.Errorf("scale markdown:\n%s", b.String())
	}
	golden(t, "scale.md", b.Bytes())
}

func TestCSV(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want header + 2 rows, got %d lines", len(lines))
	}
	head := strings.Split(lines[0], ",")
	row := strings.Split(lines[2], ",")
	if len(head) != len(row) {
		t.Fatalf("header has %d columns, row %d", len(head), len(row))
	}
	col := func(name string) string {
		for i, h := range head {
			if h == name {
				return row[i]
			}
		}
		t.Fatalf("no column %q", name)
		return ""
	}
	if col("hit_at_10") != "0.9" || col("shown_hit") != "" || col("router_tokens_mean_cl100k_base") != "42000" || col("fallbacks") != "2" {
		t.Errorf("row: %s", lines[2])
	}
	golden(t, "report.csv", b.Bytes())

	b.Reset()
	if err := WriteCSV(&b, sampleScale()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 1+4*2 {
		t.Errorf("scale csv has %d lines, want 9", n)
	}
}

func TestCharts(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHitChart(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, b.Bytes())
	if n := strings.Count(b.String(), "<polyline"); n != 2 {
		t.Errorf("hit chart has %d lines, want 2", n)
	}
	golden(t, "hit_at_k.svg", b.Bytes())

	var again bytes.Buffer
	_ = WriteHitChart(&again, sampleReport())
	if !bytes.Equal(b.Bytes(), again.Bytes()) {
		t.Error("hit chart is not deterministic")
	}

	b.Reset()
	if err := WriteScaleChart(&b, sampleScale()); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, b.Bytes())
	// tokens: stuff-all, catalog-only, 2 router lines; latency: p50 and p99 per strategy.
	if n := strings.Count(b.String(), "<polyline"); n != 4+4 {
		t.Errorf("scale chart has %d lines, want 8", n)
	}
	for _, tick := range []string{">10<", ">100<", ">1k<", ">10k<"} {
		if !strings.Contains(b.String(), tick) {
			t.Errorf("scale chart lacks log tick %s", tick)
		}
	}
	golden(t, "scale.svg", b.Bytes())

	if err := WriteHitChart(&b, &Report{}); err == nil {
		t.Error("empty report charted")
	}
	if err := WriteScaleChart(&b, sampleReport()); err == nil {
		t.Error("scale chart without scale results")
	}
}

func wellFormed(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return
			}
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
}

func TestLogAxis(t *testing.T) {
	a := logAxis("x", []float64{10, 10000, 0, -1}, fcount)
	if a.min != 10 || a.max != 10000 || len(a.ticks) != 4 {
		t.Fatalf("axis %+v", a)
	}
	a = logAxis("x", []float64{0.03, 2.5}, fms)
	if a.min != 0.01 || a.max != 10 {
		t.Fatalf("axis %+v", a)
	}
	a = logAxis("x", nil, fms)
	if a.min != 1 || a.max != 10 {
		t.Fatalf("empty axis %+v", a)
	}
	if got := fcount(1e6); got != "1M" {
		t.Errorf("fcount = %s", got)
	}
}

// The report names the queries whose expected skills were not auto-loaded
// (a skill author's next step), with where the best of them ranked.
func TestMisses(t *testing.T) {
	q := Query{Text: "make | a pdf", Expected: []string{"pdf", "pdf-forms"}}
	if _, ok := missOf(q, Judged{Expected: q.Expected, Ranked: []string{"docx", "pdf"}, Selected: []string{"pdf"}}); ok {
		t.Error("a query that auto-loaded an expected skill is a miss")
	}
	if _, ok := missOf(Query{Text: "hi"}, Judged{Selected: []string{"x"}}); ok {
		t.Error("a query without expectations is a miss")
	}
	m, ok := missOf(q, Judged{Expected: q.Expected, Ranked: []string{"docx", "xlsx", "pdf-forms"}, Selected: []string{"docx", "docx"}})
	if !ok || m.Rank != 3 || strings.Join(m.Selected, ",") != "docx" {
		t.Fatalf("%+v %v", m, ok)
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, &Report{Dataset: "d", Results: []Result{{Strategy: "hybrid", Misses: []Miss{m}, MissCount: 1}}}); err != nil {
		t.Fatal(err)
	}
	if want := "| make \\| a pdf | pdf, pdf-forms | docx | 3 |"; !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "did not auto-load: 1") {
		t.Errorf("markdown lacks %q:\n%s", want, b.String())
	}
}

// TestFpct: a share that rounds to 0.0% or 100.0% without being either is
// not printed as either.
func TestFpct(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{{0, "0.0%"}, {1, "100.0%"}, {0.5, "50.0%"}, {0.12345, "12.3%"}, {0.99992, ">99.9%"}, {0.00004, "<0.1%"}} {
		if got := fpct(c.x); got != c.want {
			t.Errorf("fpct(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}
