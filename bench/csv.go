package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// WriteCSV writes one row per strategy (and per library size for a scale
// report), with every metric in its own column.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	head := []string{"dataset", "skills", "strategy", "embedder", "queries", "ranked_queries", "empty_queries"}
	for _, k := range r.Ks {
		head = append(head, fmt.Sprintf("hit_at_%d", k))
	}
	for _, k := range r.Ks {
		head = append(head, fmt.Sprintf("recall_at_%d", k))
	}
	head = append(head, "mrr", "ndcg_at_10", "selected_precision", "selected_recall", "false_injection_rate",
		"shown_hit", "selected_mean", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "cpu_ms_per_request", "fallbacks")
	for _, enc := range r.Encodings {
		head = append(head, "stuff_all_tokens_"+enc, "catalog_only_tokens_"+enc,
			"router_tokens_mean_"+enc, "router_tokens_p95_"+enc, "router_savings_"+enc)
	}
	head = append(head, "index_build_ms", "synthetic", "rss_mb", "arm")
	if err := cw.Write(head); err != nil {
		return err
	}
	write := func(skills, synthetic int, build, rss float64, res Result) error {
		rec := []string{r.Dataset, strconv.Itoa(skills), res.Strategy, res.Embedder, strconv.Itoa(r.Queries),
			strconv.Itoa(res.RankedQueries), strconv.Itoa(res.EmptyQueries)}
		for _, k := range r.Ks {
			rec = append(rec, ffull(res.HitAt.Values[k]))
		}
		for _, k := range r.Ks {
			rec = append(rec, ffull(res.RecallAt.Values[k]))
		}
		rec = append(rec, ffull(res.MRR), ffull(res.NDCG10), ffull(res.SelectedPrecision), ffull(res.SelectedRecall),
			fopt(res.FalseInjectionRate), fopt(res.ShownHit), ffull(res.SelectedMean),
			ffull(res.LatencyMS.P50), ffull(res.LatencyMS.P95), ffull(res.LatencyMS.P99), ffull(res.CPUMS), strconv.Itoa(res.Fallbacks))
		for i, enc := range r.Encodings {
			pt := res.PromptTokens
			if i > 0 {
				pt = res.PromptTokensByEncoding[enc]
			}
			rec = append(rec, ffull(pt.StuffAll.Mean), ffull(pt.CatalogOnly.Mean), ffull(pt.Router.Mean),
				ffull(pt.Router.P95), ffull(pt.RouterSavings))
		}
		rec = append(rec, ffull(build), strconv.Itoa(synthetic), ffull(rss), res.Arm)
		return cw.Write(rec)
	}
	for _, res := range r.Results {
		if err := write(r.Skills, 0, r.IndexBuildMS, 0, res); err != nil {
			return err
		}
	}
	for _, p := range r.Scale {
		for _, res := range p.Results {
			if err := write(p.Size, p.Synthetic, p.IndexBuildMS, p.RSSMB, res); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func ffull(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// fopt writes an undefined metric as an empty cell.
func fopt(x *float64) string {
	if x == nil {
		return ""
	}
	return ffull(*x)
}
