package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillrouter/skillrouter/bench"
	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
)

// benchFlags are the options of `router bench`.
type benchFlags struct {
	queries    string
	metatool   string
	split      string
	limit      int
	sample     int
	seed       uint64
	strategies string
	arms       bool
	ks         string
	out        string
	json       bool
	scale      string
	encodings  string
}

func newBenchCmd() *cobra.Command {
	var f benchFlags
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "bench (--queries FILE.jsonl | --metatool DIR) [flags]",
		Short: "Benchmark selection strategies: quality, prompt tokens, latency, scale",
		Long: `Routes labelled queries through each strategy and reports ranking quality
(Hit@k, Recall@k, MRR, nDCG@10), the auto-load decision (selected precision and
recall, false-injection rate on expected: [] queries), routing latency
(p50/p95/p99) and the prompt tokens the skill machinery adds per request
(stuff-all vs catalog-only vs router).

Query files are JSON Lines: {"query": "...", "expected": ["skill-id", ...]}.
--metatool DIR reads DIR/tools.jsonl as in-memory skills and DIR/queries.jsonl
as queries. --scale 10,100,1000,10000 repeats the run on libraries of those
sizes (the real skills first, then deterministic synthetic variants).

A Markdown table goes to stdout (--json: the JSON report instead); --out DIR
also writes results.json, results.csv, results.md and SVG charts.`,
		Example: `  router bench --skills ../shared/bench/skills --queries ../shared/bench/upstream-queries/queries.jsonl
  router bench --metatool ../shared/bench/metatool --split single --sample 5000 --seed 1 --out bench-out/metatool
  router bench --skills ../shared/bench/skills --queries ../shared/bench/upstream-queries/queries.jsonl --scale 10,100,1000,10000 --strategies hybrid`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.metatool == "" && cmd.Flags().Changed("split") {
				return usageError{errors.New("--split applies to --metatool only")}
			}
			// Checked before the library loads, as the other flags are.
			if f.arms && cmd.Flags().Changed("strategies") {
				return usageError{errors.New("--arms compares the configuration's ab.arms, each with its own strategy: leave out --strategies")}
			}
			if f.sample < 0 || f.limit < 0 {
				return usageError{fmt.Errorf("--sample %d --limit %d: each must be 0 (all queries) or more", f.sample, f.limit)}
			}
			cfg, err := loadConfig(cmd.Flags(), &cf, os.LookupEnv)
			if err != nil {
				return err
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, cfg, tryCommand(cmd, nil), validateCommand(cmd))
		},
	}
	fs := cmd.Flags()
	cf.register(fs, append(rankingKeys, "rewrite.catalog_mode", "rewrite.catalog_budget_tokens", "rewrite.auto_load_budget_tokens")...)
	cf.alias(fs, "top-k", "max-auto-load")
	cf.alias(fs, "catalog", "catalog-mode")
	// Every strategy in --strategies is benchmarked; the shared --strategy
	// (the default of route and serve) means nothing here.
	_ = fs.MarkHidden("strategy")
	fs.StringVar(&f.queries, "queries", "", "JSON Lines query file: {\"query\": ..., \"expected\": [skill ids]}")
	fs.StringVar(&f.metatool, "metatool", "", "MetaTool data folder (tools.jsonl as in-memory skills, queries.jsonl as queries)")
	fs.StringVar(&f.split, "split", "single", "MetaTool query split: single or multi")
	fs.IntVar(&f.limit, "limit", 0, "use at most N queries (after --sample); 0 = all")
	fs.IntVar(&f.sample, "sample", 0, "use a seeded random sample of N queries, kept in file order; 0 = all")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for --sample and for the synthetic libraries of --scale")
	fs.StringVar(&f.strategies, "strategies", strings.Join(strategyNames, ","), "comma-separated strategies to compare")
	fs.BoolVar(&f.arms, "arms", false, "compare the configuration's ab.arms (each its strategy and embedder) instead of --strategies")
	fs.StringVar(&f.ks, "k", "1,3,5,10", "comma-separated cut-offs for Hit@k and Recall@k")
	fs.StringVar(&f.out, "out", "", "also write results.json, results.csv, results.md and SVG charts to this folder")
	fs.BoolVar(&f.json, "json", false, "print the JSON report instead of Markdown")
	fs.StringVar(&f.scale, "scale", "", "comma-separated library sizes to benchmark, e.g. 10,100,1000,10000")
	fs.StringVar(&f.encodings, "encoding", "o200k_base,cl100k_base", "tokenizer encodings to count prompt tokens with (the first is the headline)")
	return cmd
}

// benchBuilder returns how to build a router for any library with the
// ranking options the configuration describes and the embedder ec (a
// fitted builtin per library), and the embedder's name.
func benchBuilder(cfg *config, ec embed.Config) (bench.Builder, string, error) {
	opts, err := withEmbedder(ec, cfg.routerOptions(nil))
	if err != nil {
		return nil, "", err
	}
	// Every routing is timed as a cold one: a repeated query (the warm-up,
	// duplicates in a sample) must not report a cache hit's latency.
	opts.RankCache = -1
	build := func(ctx context.Context, snap *skills.Snapshot) (bench.Router, error) {
		return router.New(ctx, snap, opts)
	}
	return build, embedderLabel(opts.Embedder), nil
}

// embedderLabel names an embedder in bench rows: its provider, then for a
// remote one its model, and its size when known, so two arms on the same
// provider tell apart ("builtin (1024 d)", "ollama nomic-embed-text (768 d)").
func embedderLabel(e router.Embedder) string {
	label := e.Name()
	if _, builtin := e.(*embed.Builtin); !builtin && e.Model() != "" {
		label += " " + e.Model() // the builtin's model is a fingerprint
	}
	if d := e.Dimensions(); d > 0 {
		label += fmt.Sprintf(" (%d d)", d)
	}
	return label
}

// benchArms are the configuration's A/B arms as bench rows when asked for:
// an arm without a strategy runs the default one, as it does in serve, and
// one with an embedder of its own gets a router of its own.
func benchArms(cfg *config, asked bool) ([]bench.Arm, error) {
	if !asked {
		return nil, nil
	}
	if len(cfg.AB.Arms) == 0 {
		return nil, usageError{errors.New("--arms: the configuration has no ab.arms to compare")}
	}
	arms := make([]bench.Arm, len(cfg.AB.Arms))
	for i, a := range cfg.AB.Arms {
		arms[i] = bench.Arm{Name: a.Name, Strategy: router.Strategy(cmp.Or(a.Strategy, cfg.Routing.Strategy))}
		if a.Embedder != nil {
			build, name, err := benchBuilder(cfg, *a.Embedder)
			if err != nil {
				return nil, fmt.Errorf("ab arm %q: %w", a.Name, err)
			}
			arms[i].Build, arms[i].Embedder = build, name
		}
	}
	return arms, nil
}

func parseStrategies(s string) ([]router.Strategy, error) {
	var out []router.Strategy
	seen := map[router.Strategy]bool{}
	for _, part := range splitList(s) {
		st := router.Strategy(part)
		if !router.ValidStrategy(st) {
			return nil, fmt.Errorf("--strategies: unknown strategy %q (want %s)", part, oneOf(strategyNames))
		}
		if !seen[st] {
			seen[st] = true
			out = append(out, st)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--strategies: no strategy given")
	}
	return out, nil
}

// parseInts reads a comma-separated list of positive integers, in order,
// without repeats.
func parseInts(flag, s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range splitList(s) {
		n, err := strconv.Atoi(part)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--%s: %q is not a positive integer", flag, part)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s: no value given", flag)
	}
	return out, nil
}

func parseEncodings(s string) ([]tokens.Encoding, error) {
	var out []tokens.Encoding
	for _, part := range splitList(s) {
		switch e := tokens.Encoding(part); e {
		case tokens.O200kBase, tokens.Cl100kBase:
			out = append(out, e)
		default:
			return nil, fmt.Errorf("--encoding: unknown encoding %q (want o200k_base or cl100k_base)", part)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--encoding: no encoding given")
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// benchDataset is the library and queries a run uses.
type benchDataset struct {
	name    string
	snap    *skills.Snapshot
	queries []bench.Query
	cleanup func()
}

func loadBenchDataset(ctx context.Context, stderr io.Writer, f benchFlags, cfg *config, try, validate string) (*benchDataset, error) {
	switch {
	case f.queries == "" && f.metatool == "":
		return nil, usageError{errors.New("give --queries FILE.jsonl or --metatool DIR")}
	case f.queries != "" && f.metatool != "":
		return nil, usageError{errors.New("--queries and --metatool are exclusive")}
	}
	sel := bench.Selection{Sample: f.sample, Seed: f.seed, Limit: f.limit}
	ds := &benchDataset{cleanup: func() {}}
	if f.metatool != "" {
		sel.Split = f.split
		m, err := bench.LoadMetaTool(f.metatool, sel)
		if err != nil {
			return nil, err
		}
		// --skills with --metatool adds real skills to the tools as distractors.
		extra, err := resolveRoots(cfg.Skills)
		if err != nil {
			return nil, err
		}
		snap, dir, missing, err := bench.Materialize(ctx, m.SkillFiles(), libraryOptions(cfg), extra...)
		if err != nil {
			return nil, err
		}
		ds.cleanup = func() { os.RemoveAll(dir) }
		for _, ms := range missing {
			fmt.Fprintf(stderr, "warning: tool not loaded as a skill: %s\n", ms)
		}
		ds.snap, ds.queries = snap, m.Queries
		ds.name = describeMetaTool(f)
		return ds, nil
	}
	roots, err := requireRoots(cfg, try)
	if err != nil {
		return nil, err
	}
	snap := skills.Load(ctx, roots, libraryOptions(cfg))
	if err := snap.Err(); err != nil {
		return nil, fmt.Errorf("scanning skills: %w", err)
	}
	printLibraryProblems(stderr, snap, validate)
	qs, err := bench.LoadQueries(f.queries)
	if err != nil {
		return nil, err
	}
	if qs, err = bench.Select(qs, sel); err != nil {
		return nil, err
	}
	ds.snap, ds.queries, ds.name = snap, qs, f.queries
	return ds, nil
}

func describeMetaTool(f benchFlags) string {
	s := "metatool " + f.split
	if f.sample > 0 {
		s += fmt.Sprintf(", sample %d seed %d", f.sample, f.seed)
	}
	if f.limit > 0 {
		s += fmt.Sprintf(", limit %d", f.limit)
	}
	return s
}

func runBench(ctx context.Context, stdout, stderr io.Writer, f benchFlags, cfg config, try, validate string) error {
	strategies, err := parseStrategies(f.strategies)
	if err != nil {
		return usageError{err}
	}
	ks, err := parseInts("k", f.ks)
	if err != nil {
		return usageError{err}
	}
	encs, err := parseEncodings(f.encodings)
	if err != nil {
		return usageError{err}
	}
	var sizes []int
	if f.scale != "" {
		if sizes, err = parseInts("scale", f.scale); err != nil {
			return usageError{err}
		}
	}
	acc, err := bench.NewAccountant(encs...)
	if err != nil {
		return err
	}
	build, embedderName, err := benchBuilder(&cfg, cfg.Embedder)
	if err != nil {
		return err
	}
	arms, err := benchArms(&cfg, f.arms)
	if err != nil {
		return err
	}
	if !f.arms && len(cfg.AB.Arms) > 0 {
		fmt.Fprintf(stderr, "note: the configuration's ab.arms are not compared here (--arms compares them instead of --strategies)\n")
	}
	ds, err := loadBenchDataset(ctx, stderr, f, &cfg, try, validate)
	if err != nil {
		return err
	}
	defer ds.cleanup()

	bc := bench.Config{
		Dataset: ds.name, Snapshot: ds.snap, Queries: ds.queries, Strategies: strategies, Arms: arms, Ks: ks,
		Embedder: embedderName, Build: build, Tokens: acc,
		Rewrite: cfg.rewriteOptions(nil),
	}
	runs := max(len(sizes), 1)
	prog := bench.NewProgress(os.Stderr, runs*max(len(strategies), len(arms))*len(ds.queries))
	if prog != nil && stderr == os.Stderr {
		bc.Progress = prog
		defer prog.Finish()
	}

	var rep *bench.Report
	if len(sizes) > 0 {
		rep, err = bench.RunScale(ctx, bench.ScaleConfig{Config: bc, Sizes: sizes, Seed: f.seed,
			Warnings: func(s string) { fmt.Fprintln(stderr, "warning:", s) }})
	} else {
		rep, err = bench.Run(ctx, bc)
	}
	if bc.Progress != nil {
		prog.Finish()
	}
	if err != nil {
		return err
	}
	warnReport(stderr, rep)
	if f.out != "" {
		if err := writeBenchFiles(f.out, rep); err != nil {
			return err
		}
	}
	if f.json {
		err = writeJSON(stdout, rep)
	} else {
		err = bench.WriteMarkdown(stdout, rep)
	}
	if err != nil {
		return err
	}
	return allFellBack(rep)
}

// allResults are rep's results, each library size's included (--scale).
func allResults(rep *bench.Report) []bench.Result {
	results := slices.Clone(rep.Results)
	for _, p := range rep.Scale {
		results = append(results, p.Results...)
	}
	return results
}

// allFellBack fails a run in which a strategy that uses the embedder fell
// back to bm25 on every query: its row carries bm25's figures under the
// strategy's name, which an A/B comparison would take for the strategy's.
func allFellBack(rep *bench.Report) error {
	for _, r := range allResults(rep) {
		if r.Fallbacks > 0 && r.Fallbacks >= rep.Queries {
			return fmt.Errorf("%s: every decision (%d) fell back to bm25: the embedder did not answer (router doctor checks it), so its row holds bm25's figures", r.Label(), r.Fallbacks)
		}
	}
	return nil
}

func warnReport(w io.Writer, rep *bench.Report) {
	if n := len(rep.UnknownExpected); n > 0 {
		fmt.Fprintf(w, "warning: %d expected skill ids are not in the library and count as misses: %s\n",
			n, strings.Join(rep.UnknownExpected, ", "))
	}
	if n := len(rep.SkippedExpected); n > 0 {
		fmt.Fprintf(w, "warning: %d expected skills are in the library but skipped for errors (`router skills validate` says why) and count as misses: %s\n",
			n, strings.Join(rep.SkippedExpected, ", "))
	}
	for _, r := range allResults(rep) {
		if r.Fallbacks > 0 {
			fmt.Fprintf(w, "warning: %s: %d decisions fell back to bm25 (embedder slow or failing)\n", r.Label(), r.Fallbacks)
		}
	}
}

func writeJSON(w io.Writer, rep *bench.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// writeBenchFiles writes the report files into dir (created if needed).
func writeBenchFiles(dir string, rep *bench.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	files := []struct {
		name  string
		write func(io.Writer, *bench.Report) error
		when  bool
	}{
		{"results.json", writeJSON, true},
		{"results.csv", bench.WriteCSV, true},
		{"results.md", bench.WriteMarkdown, true},
		{"hit_at_k.svg", bench.WriteHitChart, len(rep.Results) > 0},
		{"scale.svg", bench.WriteScaleChart, len(rep.Scale) > 0},
	}
	for _, f := range files {
		if !f.when {
			continue
		}
		p := filepath.Join(dir, f.name)
		if err := writeFileWith(p, func(w io.Writer) error { return f.write(w, rep) }); err != nil {
			return fmt.Errorf("--out: %s: %w", p, err)
		}
	}
	return nil
}

func writeFileWith(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
