package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// Router is the part of *router.Router the harness drives.
type Router interface {
	Route(ctx context.Context, q router.Query) *router.Decision
}

// Builder builds a router (its indexes) for a library.
type Builder func(ctx context.Context, snap *skills.Snapshot) (Router, error)

// Config is one benchmark run over one library.
type Config struct {
	Dataset    string // label for reports (e.g. the queries file)
	Snapshot   *skills.Snapshot
	Queries    []Query
	Strategies []router.Strategy
	// Arms, when set, are the rows to compare instead of Strategies: an
	// A/B test's arms, each its own strategy and perhaps its own embedder.
	Arms     []Arm
	Ks       []int
	Embedder string // label used when a decision does not name its embedder
	// Rewrite is how prompts are rendered (catalog mode and budgets), as in
	// the proxy; the zero value takes the proxy's defaults (catalog auto).
	Rewrite  router.RewriteOptions
	Build    Builder
	Tokens   *Accountant
	Progress Progress // nil = none
}

func (c *Config) validate() error {
	switch {
	case c.Snapshot == nil:
		return errors.New("bench: no library")
	case len(c.Snapshot.Skills()) == 0:
		return errors.New("bench: the library has no loadable skill")
	case len(c.Queries) == 0:
		return errors.New("bench: no queries")
	case len(c.Strategies) == 0 && len(c.Arms) == 0:
		return errors.New("bench: no strategy")
	case len(c.Ks) == 0:
		return errors.New("bench: no k")
	case c.Build == nil || c.Tokens == nil:
		return errors.New("bench: incomplete configuration")
	}
	for _, k := range c.Ks {
		if k <= 0 {
			return fmt.Errorf("bench: k must be positive, got %d", k)
		}
	}
	return nil
}

// Run routes every query under every strategy and reports.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	lib, err := prepareLibrary(ctx, cfg.Snapshot, cfg.Build, cfg.Tokens)
	if err != nil {
		return nil, err
	}
	defer lib.close()
	rep := &Report{
		Dataset:         cfg.Dataset,
		Skills:          len(cfg.Snapshot.Skills()),
		Queries:         len(cfg.Queries),
		Encodings:       encodingNames(cfg.Tokens),
		Ks:              slices.Clone(cfg.Ks),
		IndexBuildMS:    durMS(lib.build),
		UnknownExpected: unknownExpected(cfg.Snapshot, cfg.Queries),
		SkippedExpected: skippedExpected(cfg.Snapshot, cfg.Queries),
	}
	for _, q := range cfg.Queries {
		if len(q.Expected) == 0 {
			rep.EmptyQueries++
		} else {
			rep.RankedQueries++
		}
	}
	for _, a := range cfg.rows() {
		if cfg.Progress != nil {
			cfg.Progress.Describe(a.label())
		}
		res, err := runArm(ctx, lib, cfg, a, cfg.Queries, nil)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// Arm is one row of a comparison of configurations, as an A/B test's arm
// is: a strategy, and a router built its own way when Build is set.
type Arm struct {
	Name     string
	Strategy router.Strategy
	Embedder string  // label, as Config.Embedder; "" = Config.Embedder
	Build    Builder // nil: the router Config.Build makes, shared
}

func (a Arm) label() string {
	if a.Name == "" {
		return string(a.Strategy)
	}
	return a.Name + " (" + string(a.Strategy) + ")"
}

// rows are the configurations compared: the arms, or one per strategy.
func (c *Config) rows() []Arm {
	if len(c.Arms) > 0 {
		return c.Arms
	}
	out := make([]Arm, len(c.Strategies))
	for i, s := range c.Strategies {
		out[i] = Arm{Strategy: s}
	}
	return out
}

// runArm routes qs as a says: with shared's router, or with one built for
// the arm over the same library, closed once its queries are done.
func runArm(ctx context.Context, shared *library, cfg Config, a Arm, qs []Query, evaluate func(Query) bool) (Result, error) {
	lib := shared
	if a.Build != nil {
		own, err := prepareLibrary(ctx, shared.snap, a.Build, cfg.Tokens)
		if err != nil {
			return Result{}, fmt.Errorf("arm %s: %w", a.Name, err)
		}
		defer own.close()
		lib = own
	}
	if a.Embedder != "" {
		cfg.Embedder = a.Embedder
	}
	res, err := runStrategy(ctx, lib, cfg, a.Strategy, qs, evaluate)
	res.Arm = a.Name
	return res, err
}

// library is a built router plus the library-wide token constants.
type library struct {
	snap     *skills.Snapshot
	router   Router
	build    time.Duration
	stuffAll Counts
	catOnly  Counts
}

func prepareLibrary(ctx context.Context, snap *skills.Snapshot, build Builder, acc *Accountant) (*library, error) {
	start := time.Now()
	r, err := build(ctx, snap)
	if err != nil {
		return nil, fmt.Errorf("bench: building the router: %w", err)
	}
	lib := &library{snap: snap, router: r, build: time.Since(start)}
	// Catalog-only is tier 1 alone for the whole library: every skill not
	// disabled in its frontmatter, as catalog mode `all` shows it.
	var enabled []*skills.Skill
	for _, s := range snap.Skills() {
		if !s.Disabled() {
			enabled = append(enabled, s)
		}
	}
	lib.catOnly = acc.Count(skills.RenderCatalog(enabled, skills.CatalogOptions{}))
	lib.stuffAll = acc.StuffAll(snap)
	// The text is then kept as `router serve` keeps it (skills.Snapshot.Pack),
	// so the figures per request and the RSS are the server's.
	snap.Pack(ctx)
	return lib, nil
}

// close releases the router's resources when it has any (router.Router.Close).
func (l *library) close() {
	if c, ok := l.router.(interface{ Close() }); ok {
		c.Close()
	}
}

// observation is one query under one strategy.
type observation struct {
	judged  Judged
	latency time.Duration
	cpu     time.Duration
	tokens  RouterTokens
	fallbk  bool
	emb     string
	dropped int // selected by the router but not auto-loaded (auto-load budget)
}

// runStrategy routes qs with strategy s. evaluate, when non-nil, says which
// queries enter the quality metrics (all enter latency and tokens).
func runStrategy(ctx context.Context, lib *library, cfg Config, s router.Strategy, qs []Query, evaluate func(Query) bool) (Result, error) {
	// Routing is timed as the proxy routes: for the top of the ranking its
	// catalog can use (router.RankDepth). The metrics need the whole
	// ranking (MRR looks at every rank), so each query is then routed once
	// more, untimed, for all of it; its top is the same.
	depth := router.RankDepth(cfg.Rewrite)
	// One untimed query first: lazy initialisation (a fitted embedder's first
	// call, page faults in fresh indexes) is not routing latency.
	warm := toRouterQuery(qs[0], s)
	warm.Ranked = depth
	lib.router.Route(ctx, warm)

	obs := make([]observation, 0, len(qs))
	for _, q := range qs {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		rq := toRouterQuery(q, s)
		rq.Ranked = depth
		cpu0, start := ProcessCPU(), time.Now()
		d := lib.router.Route(ctx, rq)
		lat, cpu := time.Since(start), ProcessCPU()-cpu0
		if d == nil {
			return Result{}, fmt.Errorf("bench: %s: router returned no decision for query %s", s, q.ID)
		}
		rq.Ranked = 0
		if d = lib.router.Route(ctx, rq); d == nil {
			return Result{}, fmt.Errorf("bench: %s: router returned no decision for query %s", s, q.ID)
		}
		// What the proxy would add for this decision, rendered apart from the
		// timed routing: the catalog as shown (a shortlist in auto mode), the
		// envelopes that fit the auto-load budget, the tools.
		p, err := router.BuildPrompt(ctx, lib.snap, d, rq.Messages, cfg.Rewrite)
		if err != nil {
			return Result{}, fmt.Errorf("bench: %s: rendering the prompt for query %s: %w", s, q.ID, err)
		}
		loaded := make([]string, len(p.Envelopes))
		for i, e := range p.Envelopes {
			loaded[i] = e.ID
		}
		obs = append(obs, observation{
			judged: Judged{
				Expected:   q.Expected,
				Ranked:     rankedIDs(d),
				Selected:   loaded,
				Shown:      p.CatalogShown,
				ShownKnown: true,
			},
			latency: lat,
			cpu:     cpu,
			tokens:  cfg.Tokens.Router(p),
			fallbk:  d.Fallback,
			emb:     d.Embedder,
			dropped: max(len(dedupe(d.Selected))-len(loaded), 0),
		})
		if cfg.Progress != nil {
			cfg.Progress.Add(1)
		}
	}
	return summarize(lib, cfg, s, qs, obs, evaluate), nil
}

func toRouterQuery(q Query, s router.Strategy) router.Query {
	return router.Query{Messages: []router.Message{{Role: "user", Text: q.Text}}, Strategy: s}
}

// rankedIDs returns the decision's ranking as ids, in the router's order.
func rankedIDs(d *router.Decision) []string {
	if d == nil {
		return nil
	}
	out := make([]string, len(d.Ranked))
	for i, sc := range d.Ranked {
		out[i] = sc.ID
	}
	return out
}

// unknownExpected lists expected ids that are not skills of the library,
// sorted: they can never be hit, so a report must say so.
func unknownExpected(snap *skills.Snapshot, qs []Query) []string {
	return expectedWhere(qs, func(id string) bool {
		_, loaded := snap.Get(id)
		sk, found := snap.Lookup(id)
		return !loaded && !(found && sk.Skipped)
	})
}

// skippedExpected lists the expected ids of skills the library has but
// skipped for errors: not unknown, but as unrankable.
func skippedExpected(snap *skills.Snapshot, qs []Query) []string {
	return expectedWhere(qs, func(id string) bool {
		sk, found := snap.Lookup(id)
		return found && sk.Skipped
	})
}

// expectedWhere lists, sorted and once each, the expected ids of qs that
// match.
func expectedWhere(qs []Query, match func(id string) bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, q := range qs {
		for _, id := range q.Expected {
			if !seen[id] && match(id) {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}
