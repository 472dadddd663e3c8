package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skillrouter/skillrouter/router"
)

// Report is the benchmark's JSON document. The keys of the shape come
// first; the rest are additions.
type Report struct {
	Dataset string   `json:"dataset"`
	Skills  int      `json:"skills"`
	Queries int      `json:"queries"`
	Results []Result `json:"results,omitempty"`

	RankedQueries   int      `json:"ranked_queries"` // queries with expectations
	EmptyQueries    int      `json:"empty_queries"`  // expected: []
	Encodings       []string `json:"encodings"`      // prompt_tokens uses the first
	Ks              []int    `json:"k"`
	IndexBuildMS    float64  `json:"index_build_ms,omitempty"`
	UnknownExpected []string `json:"unknown_expected,omitempty"`
	// SkippedExpected are expected skills the library skipped for errors.
	SkippedExpected []string     `json:"skipped_expected,omitempty"`
	Scale           []ScalePoint `json:"scale,omitempty"`
}

// Result is one strategy's figures, or one arm's.
type Result struct {
	Arm                string   `json:"arm,omitempty"` // the A/B arm the row is (Config.Arms)
	Strategy           string   `json:"strategy"`
	Embedder           string   `json:"embedder"`
	HitAt              KMap     `json:"hit_at"`
	RecallAt           KMap     `json:"recall_at"`
	MRR                float64  `json:"mrr"`
	NDCG10             float64  `json:"ndcg_at_10"`
	SelectedPrecision  float64  `json:"selected_precision"`
	SelectedRecall     float64  `json:"selected_recall"`
	FalseInjectionRate *float64 `json:"false_injection_rate"` // null without expected: [] queries
	LatencyMS          Latency  `json:"latency_ms"`
	// CPUMS is the process CPU time per routing (mean, milliseconds): the
	// routing itself and the collector's share of it.
	CPUMS        float64      `json:"cpu_ms_per_request"`
	PromptTokens PromptTokens `json:"prompt_tokens"`

	// ShownHit: share of queries with expectations whose expected skill was in
	// the catalog shown or auto-loaded.
	ShownHit               *float64                `json:"shown_hit,omitempty"`
	PromptTokensByEncoding map[string]PromptTokens `json:"prompt_tokens_by_encoding,omitempty"`
	RankedQueries          int                     `json:"ranked_queries"`
	EmptyQueries           int                     `json:"empty_queries"`
	SelectedMean           float64                 `json:"selected_mean"`        // skills auto-loaded per query
	CatalogEntriesMean     float64                 `json:"catalog_entries_mean"` // skills listed in the catalog shown
	Fallbacks              int                     `json:"fallbacks"`            // decisions that fell back to bm25
	AutoLoadDropped        int                     `json:"auto_load_dropped"`    // selections left out by the auto-load budget

	// Misses are the first maxMisses queries with expected skills that
	// auto-loaded none of them, in query order; MissCount counts them all.
	// They are what a skill author looks at next (which skill to reword).
	Misses    []Miss `json:"misses,omitempty"`
	MissCount int    `json:"miss_count"`
}

// Miss is one query whose expected skills were not auto-loaded.
type Miss struct {
	Query    string   `json:"query"`
	Expected []string `json:"expected"`
	Selected []string `json:"selected"`
	Rank     int      `json:"rank"` // 1-based rank of the best-ranked expected skill; 0: not in the ranking looked at
}

// maxMisses bounds the misses a result lists (MetaTool has thousands).
const maxMisses = 50

// Latency is routing latency per query in milliseconds (nearest-rank).
type Latency struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// PromptTokens is the prompt cost of the skill machinery per query.
type PromptTokens struct {
	StuffAll    Stat `json:"stuff_all"`
	CatalogOnly Stat `json:"catalog_only"`
	Router      Stat `json:"router"`
	// Savings versus stuff-all: 1 − mean/stuff_all.mean.
	RouterSavings      float64 `json:"router_savings_vs_stuff_all"`
	CatalogOnlySavings float64 `json:"catalog_only_savings_vs_stuff_all"`
	// The router's mean split into its parts.
	RouterCatalog    Stat `json:"router_catalog"`
	RouterAutoLoaded Stat `json:"router_auto_loaded"`
	RouterTools      Stat `json:"router_tools"`
}

// Stat is a mean and a nearest-rank p95 over queries.
type Stat struct {
	Mean float64 `json:"mean"`
	P95  float64 `json:"p95"`
}

// KMap maps a cut-off k to a value and marshals in the order of k (1, 3, 5, 10)
// rather than encoding/json's string order (1, 10, 3, 5).
type KMap struct {
	Ks     []int
	Values map[int]float64
}

// MarshalJSON writes {"1":v,"3":v,...} in k order.
func (m KMap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.Ks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(strconv.Itoa(k)))
		b.WriteByte(':')
		v, _ := json.Marshal(m.Values[k])
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the object back (keys in any order).
func (m *KMap) UnmarshalJSON(data []byte) error {
	var raw map[string]float64
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	m.Values = map[int]float64{}
	m.Ks = m.Ks[:0]
	for s, v := range raw {
		k, err := strconv.Atoi(s)
		if err != nil {
			return err
		}
		m.Ks = append(m.Ks, k)
		m.Values[k] = v
	}
	slices.Sort(m.Ks)
	return nil
}

// Rounding keeps reports readable and diffable; 4 decimals is finer than the
// sampling error of any of these data sets.
func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}

func roundPtr(x *float64) *float64 {
	if x == nil {
		return nil
	}
	v := round(*x, 4)
	return &v
}

func durMS(d time.Duration) float64 { return round(float64(d.Nanoseconds())/1e6, 3) }

func encodingNames(a *Accountant) []string {
	out := make([]string, len(a.Encodings()))
	for i, e := range a.Encodings() {
		out[i] = string(e)
	}
	return out
}

func summarize(lib *library, cfg Config, s router.Strategy, qs []Query, obs []observation, evaluate func(Query) bool) Result {
	var judged []Judged
	lat := make([]time.Duration, len(obs))
	var selected, shown []int
	res := Result{Strategy: string(s), Embedder: cfg.Embedder}
	if !router.UsesEmbedder(s) {
		res.Embedder = "none"
	}
	var cpu time.Duration
	for i, o := range obs {
		lat[i] = o.latency
		cpu += o.cpu
		if o.fallbk {
			res.Fallbacks++
		}
		res.AutoLoadDropped += o.dropped
		// The decision's provider wins over a label naming another (a
		// router built some other way); a label of the same provider says
		// more (its model and size).
		if provider, _, _ := strings.Cut(res.Embedder, " "); o.emb != "" && router.UsesEmbedder(s) && provider != o.emb {
			res.Embedder = o.emb
		}
		selected = append(selected, len(dedupe(o.judged.Selected)))
		shown = append(shown, len(o.judged.Shown))
		if evaluate == nil || evaluate(qs[i]) {
			judged = append(judged, o.judged)
			if m, ok := missOf(qs[i], o.judged); ok {
				if res.MissCount++; len(res.Misses) < maxMisses {
					res.Misses = append(res.Misses, m)
				}
			}
		}
	}
	q := Evaluate(judged, cfg.Ks)
	res.HitAt = KMap{Ks: q.Ks, Values: map[int]float64{}}
	res.RecallAt = KMap{Ks: q.Ks, Values: map[int]float64{}}
	for _, k := range q.Ks {
		res.HitAt.Values[k] = round(q.HitAt[k], 4)
		res.RecallAt.Values[k] = round(q.RecallAt[k], 4)
	}
	res.MRR = round(q.MRR, 4)
	res.NDCG10 = round(q.NDCG10, 4)
	res.SelectedPrecision = round(q.SelectedPrecision, 4)
	res.SelectedRecall = round(q.SelectedRecall, 4)
	res.FalseInjectionRate = roundPtr(q.FalseInjectionRate)
	res.ShownHit = roundPtr(q.ShownHit)
	res.RankedQueries, res.EmptyQueries = q.Ranked, q.Empty
	res.SelectedMean = round(Mean(selected), 3)
	res.CatalogEntriesMean = round(Mean(shown), 1)
	res.LatencyMS = Latency{
		P50: durMS(Percentile(lat, 50)), P95: durMS(Percentile(lat, 95)), P99: durMS(Percentile(lat, 99)),
		Mean: durMS(time.Duration(Mean(durInts(lat)))), Max: durMS(Percentile(lat, 100)),
	}
	if len(obs) > 0 {
		res.CPUMS = round(float64(cpu)/float64(len(obs))/1e6, 4)
	}
	encs := cfg.Tokens.Encodings()
	res.PromptTokensByEncoding = map[string]PromptTokens{}
	for e := range encs {
		pt := promptTokens(lib, obs, e)
		if e == 0 {
			res.PromptTokens = pt
		}
		if len(encs) > 1 {
			res.PromptTokensByEncoding[string(encs[e])] = pt
		}
	}
	if len(encs) == 1 {
		res.PromptTokensByEncoding = nil
	}
	return res
}

// missOf reports whether a query with expected skills auto-loaded none of
// them, and how.
func missOf(q Query, j Judged) (Miss, bool) {
	if len(j.Expected) == 0 {
		return Miss{}, false
	}
	for _, id := range j.Selected {
		if slices.Contains(j.Expected, id) {
			return Miss{}, false
		}
	}
	m := Miss{Query: clip(q.Text, 120), Expected: j.Expected, Selected: dedupe(j.Selected)}
	for r, id := range j.Ranked {
		if slices.Contains(j.Expected, id) {
			m.Rank = r + 1
			break
		}
	}
	if m.Selected == nil {
		m.Selected = []string{}
	}
	return m, true
}

// clip shortens s to n runes, marking the cut.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func durInts(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = int64(d)
	}
	return out
}

func promptTokens(lib *library, obs []observation, e int) PromptTokens {
	total := make([]int, len(obs))
	cat := make([]int, len(obs))
	auto := make([]int, len(obs))
	tools := make([]int, len(obs))
	for i, o := range obs {
		total[i] = o.tokens.Total()[e]
		cat[i] = o.tokens.Catalog[e]
		auto[i] = o.tokens.AutoLoaded[e]
		tools[i] = o.tokens.Tools[e]
	}
	stat := func(xs []int) Stat { return Stat{Mean: round(Mean(xs), 1), P95: float64(Percentile(xs, 95))} }
	constant := func(n int) Stat { return Stat{Mean: float64(n), P95: float64(n)} }
	pt := PromptTokens{
		StuffAll:         constant(lib.stuffAll[e]),
		CatalogOnly:      constant(lib.catOnly[e]),
		Router:           stat(total),
		RouterCatalog:    stat(cat),
		RouterAutoLoaded: stat(auto),
		RouterTools:      stat(tools),
	}
	if sa := float64(lib.stuffAll[e]); sa > 0 {
		pt.RouterSavings = round(1-Mean(total)/sa, 4)
		pt.CatalogOnlySavings = round(1-float64(lib.catOnly[e])/sa, 4)
	}
	return pt
}

// Label names the row: the strategy, and its arm when it is one.
func (r Result) Label() string {
	return Arm{Name: r.Arm, Strategy: router.Strategy(r.Strategy)}.label()
}
