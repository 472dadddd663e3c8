package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteMarkdown writes the report as Markdown tables.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", r.Dataset)
	fmt.Fprintf(&b, "%d skills, %d queries (%d with expected skills, %d with `expected: []`)", r.Skills, r.Queries, r.RankedQueries, r.EmptyQueries)
	if r.IndexBuildMS > 0 {
		fmt.Fprintf(&b, ", index build %s ms", fnum(r.IndexBuildMS, 1))
	}
	b.WriteString(".\n")
	if len(r.UnknownExpected) > 0 {
		fmt.Fprintf(&b, "\n**Warning:** %d expected ids are not in the library (counted as misses): %s\n",
			len(r.UnknownExpected), strings.Join(head(r.UnknownExpected, 10), ", "))
	}
	if len(r.SkippedExpected) > 0 {
		fmt.Fprintf(&b, "\n**Warning:** %d expected skills are skipped for errors (`router skills validate`; counted as misses): %s\n",
			len(r.SkippedExpected), strings.Join(head(r.SkippedExpected, 10), ", "))
	}
	if len(r.Results) > 0 {
		b.WriteString("\n")
		qualityTable(&b, r.Ks, r.Results, nil)
		for i, enc := range r.Encodings {
			b.WriteString("\n")
			costTable(&b, r.Results, enc, i)
		}
		missTable(&b, r.Results[len(r.Results)-1])
	}
	if len(r.Scale) > 0 {
		b.WriteString("\n")
		scaleTable(&b, r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// missTable lists the first queries of res (the last strategy run, hybrid
// by default) whose expected skills were not auto-loaded, with where the
// best of them ranked: the skills to reword first.
func missTable(b *strings.Builder, res Result) {
	if res.MissCount == 0 {
		return
	}
	const shown = 10
	fmt.Fprintf(b, "\nQueries whose expected skills %s did not auto-load: %d (the first %d; `router route` on one says why).\n\n",
		res.Label(), res.MissCount, min(shown, len(res.Misses)))
	row(b, []string{"query", "expected", "auto-loaded", "rank of expected"})
	sep(b, 4)
	for _, m := range res.Misses[:min(shown, len(res.Misses))] {
		rank := "not ranked"
		if m.Rank > 0 {
			rank = strconv.Itoa(m.Rank)
		}
		sel := strings.Join(m.Selected, ", ")
		if sel == "" {
			sel = "none"
		}
		row(b, []string{cellText.Replace(m.Query), strings.Join(m.Expected, ", "), sel, rank})
	}
}

// cellText makes a query one table cell: no line breaks, no column
// separator, no backticks that would open a code span across the row.
var cellText = strings.NewReplacer("|", "\\|", "\n", " ", "\r", " ", "`", "'")

func head(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(xs[:n:n], fmt.Sprintf("… %d more", len(xs)-n))
}

func qualityTable(b *strings.Builder, ks []int, rs []Result, lead []string) {
	cols := append([]string{}, lead...)
	cols = append(cols, "strategy", "embedder")
	for _, k := range ks {
		cols = append(cols, fmt.Sprintf("Hit@%d", k))
	}
	for _, k := range ks {
		cols = append(cols, fmt.Sprintf("R@%d", k))
	}
	cols = append(cols, "MRR", "nDCG@10", "sel. P", "sel. R", "false inj.", "shown hit")
	row(b, cols)
	sep(b, len(cols))
	for _, r := range rs {
		cells := []string{r.Label(), r.Embedder}
		for _, k := range ks {
			cells = append(cells, fnum(r.HitAt.Values[k], 3))
		}
		for _, k := range ks {
			cells = append(cells, fnum(r.RecallAt.Values[k], 3))
		}
		cells = append(cells, fnum(r.MRR, 3), fnum(r.NDCG10, 3), fnum(r.SelectedPrecision, 3),
			fnum(r.SelectedRecall, 3), fptr(r.FalseInjectionRate), fptr(r.ShownHit))
		row(b, cells)
	}
}

func costTable(b *strings.Builder, rs []Result, enc string, i int) {
	cols := []string{"strategy", "stuff-all tok", "catalog-only tok", "router tok mean", "router tok p95",
		"catalog part", "bodies part", "router savings", "auto-loaded/query", "p50 ms", "p95 ms", "p99 ms", "CPU ms/req", "fallbacks"}
	fmt.Fprintf(b, "Prompt tokens added per request (%s) and routing latency:\n\n", enc)
	row(b, cols)
	sep(b, len(cols))
	for _, r := range rs {
		pt := r.PromptTokens
		if i > 0 {
			pt = r.PromptTokensByEncoding[enc]
		}
		row(b, []string{r.Label(), fint(pt.StuffAll.Mean), fint(pt.CatalogOnly.Mean), fint(pt.Router.Mean),
			fint(pt.Router.P95), fint(pt.RouterCatalog.Mean), fint(pt.RouterAutoLoaded.Mean), fpct(pt.RouterSavings), fnum(r.SelectedMean, 2),
			fnum(r.LatencyMS.P50, 3), fnum(r.LatencyMS.P95, 3), fnum(r.LatencyMS.P99, 3), fnum(r.CPUMS, 3), strconv.Itoa(r.Fallbacks)})
	}
}

func scaleTable(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "Scale (%s tokens; quality over the queries whose expected skills are in the library):\n\n", r.Encodings[0])
	cols := []string{"skills", "real", "synthetic", "write ms", "load ms", "index build ms", "catalog tok", "stuff-all tok",
		"strategy", "router tok mean", "router tok p95", "catalog part", "bodies part", "tools part", "p50 ms", "p95 ms", "p99 ms", "CPU ms/req", "RSS MB",
		"Hit@3", "MRR", "shown hit", "queries"}
	row(b, cols)
	sep(b, len(cols))
	for _, p := range r.Scale {
		for _, res := range p.Results {
			h3 := "–"
			if _, ok := res.HitAt.Values[3]; ok {
				h3 = fnum(res.HitAt.Values[3], 3)
			}
			row(b, []string{strconv.Itoa(p.Size), strconv.Itoa(p.Real), strconv.Itoa(p.Synthetic),
				fnum(p.WriteMS, 0), fnum(p.LoadMS, 0), fnum(p.IndexBuildMS, 0), strconv.Itoa(p.CatalogTokens), strconv.Itoa(p.StuffAllTokens),
				res.Label(), fint(res.PromptTokens.Router.Mean), fint(res.PromptTokens.Router.P95),
				fint(res.PromptTokens.RouterCatalog.Mean), fint(res.PromptTokens.RouterAutoLoaded.Mean), fint(res.PromptTokens.RouterTools.Mean),
				fnum(res.LatencyMS.P50, 3), fnum(res.LatencyMS.P95, 3), fnum(res.LatencyMS.P99, 3), fnum(res.CPUMS, 3), fnum(p.RSSMB, 0),
				h3, fnum(res.MRR, 3), fptr(res.ShownHit), strconv.Itoa(p.QueriesEvaluated)})
		}
	}
	scaleGrowth(b, r)
}

// scaleGrowth says how the router's prompt tokens change from the first size
// of at least 100 skills (smaller libraries fit the catalog budget whole) to
// the largest, per strategy: the flatness check of a constant-size prompt.
func scaleGrowth(b *strings.Builder, r *Report) {
	from, to := -1, -1
	for i, p := range r.Scale {
		if p.Size >= 100 && (from < 0 || p.Size < r.Scale[from].Size) {
			from = i
		}
		if to < 0 || p.Size > r.Scale[to].Size {
			to = i
		}
	}
	if from < 0 || from == to {
		return
	}
	b.WriteString("\n")
	for _, a := range r.Scale[from].Results {
		for _, z := range r.Scale[to].Results {
			if a.Label() != z.Label() || a.PromptTokens.Router.Mean == 0 {
				continue
			}
			change := z.PromptTokens.Router.Mean/a.PromptTokens.Router.Mean - 1
			fmt.Fprintf(b, "- %s: router prompt tokens %s at %d skills → %s at %d skills (%+.1f%%); catalog-only %d → %d.\n",
				a.Label(), fint(a.PromptTokens.Router.Mean), r.Scale[from].Size, fint(z.PromptTokens.Router.Mean), r.Scale[to].Size,
				change*100, r.Scale[from].CatalogTokens, r.Scale[to].CatalogTokens)
		}
	}
}

func row(b *strings.Builder, cells []string) {
	b.WriteString("| ")
	b.WriteString(strings.Join(cells, " | "))
	b.WriteString(" |\n")
}

func sep(b *strings.Builder, n int) {
	b.WriteString("|")
	for range n {
		b.WriteString("---|")
	}
	b.WriteString("\n")
}

func fnum(x float64, places int) string { return strconv.FormatFloat(x, 'f', places, 64) }

func fint(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

// fpct writes a fraction as a percentage to a tenth; one that rounds to
// 0.0 or 100.0 without being either says so (a 10,000-skill library's
// savings are 99.99%, not all).
func fpct(x float64) string {
	s := strconv.FormatFloat(x*100, 'f', 1, 64)
	switch {
	case s == "100.0" && x < 1:
		return ">99.9%"
	case s == "0.0" && x > 0:
		return "<0.1%"
	}
	return s + "%"
}

func fptr(x *float64) string {
	if x == nil {
		return "–"
	}
	return fnum(*x, 3)
}
