package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillrouter/skillrouter/skills"
)

// Options configures ranking. Zero values take documented defaults.
type Options struct {
	Strategy     Strategy                       // default hybrid
	Embedder     Embedder                       // nil: embedding and hybrid fall back to bm25
	Fit          func(corpus []string) Embedder // non-nil for embedders that learn from the library (builtin); called per snapshot
	EmbedTimeout time.Duration                  // latency budget for the query embedding; default 250ms
	MaxAutoLoad  int                            // default 2
	MinScore     map[Strategy]float64           // overrides of calibrated thresholds
	IndexDir     string                         // where the vector index persists; "" = memory only
	Logger       *slog.Logger

	// Prebuilt is a folder written by SavePrebuilt (`router index build`),
	// read and never written. When it matches the library and the
	// embedder, building loads the vectors, the fitted embedder (through
	// Restore) and the calibration from it and embeds nothing.
	Prebuilt string
	// Restore rebuilds a fitted embedder from the state SavePrebuilt stored
	// (the builtin's MarshalBinary); nil fits as usual.
	Restore func(state []byte) (Embedder, error)
	// WarmDir is a folder the router keeps its own prebuilt index in:
	// written in the background after a build, loaded at the next start
	// when the library and embedder are unchanged (warm.go). "" = none.
	WarmDir string
	// SettleAfter is how long the library must stay unchanged after a
	// build that reused the old fit and calibration before the router
	// settles the index: builds it again in the background as a fresh
	// start would (settle.go). 0 = DefaultSettleAfter; <0 = never.
	SettleAfter time.Duration
	// OnSettle, when set, is called as a settle build starts, and the
	// func it returns once that build is over. A library change's build
	// is started by its caller, who can pace memory around it; a settle
	// starts on its own, so this is the caller's hook for it (cmd/router
	// lifts its tight collector pacing during builds).
	OnSettle func() (done func())
	// OnIndex, when set, is told of the router's index work, for metrics:
	// each build ended (IndexBuilt, IndexSettled, with how long it took)
	// and each index that could not be kept for the next start
	// (IndexKeepFailed). It must not block.
	OnIndex func(ev IndexEvent, took time.Duration)

	// HistoryTurns is how many earlier user turns are blended into the query
	// (default 2; <0 = none), each weighted HistoryDecay times the one after
	// it (default 0.35), so a follow-up like "now do the same for the API"
	// keeps the topic without the old topic outvoting the new message.
	HistoryTurns int
	HistoryDecay float64
	// MaxQueryChars caps each message's text used for ranking (default
	// 4000); longer text keeps its start and end, where the ask usually is.
	MaxQueryChars int
	// RankCache is how many recent rankings each index remembers (0: up to
	// 1,024, within 32 MiB; <0: none). Rankings keep only their top, so
	// the default holds for any library size. See rankCache.
	RankCache int

	// RelativeScore: a skill after the best one is auto-loaded only when its
	// score is at least this fraction of the best one's (default 0.8; <0 =
	// no such rule). A clear winner then loads alone instead of dragging
	// the runner-up's body into the prompt.
	RelativeScore float64
}

// Defaults of Options.
const (
	DefaultStrategy      = StrategyHybrid
	DefaultEmbedTimeout  = 250 * time.Millisecond
	DefaultMaxAutoLoad   = 2
	DefaultHistoryTurns  = 2
	DefaultHistoryDecay  = 0.35
	DefaultMaxQueryChars = 4000
	DefaultRelativeScore = 0.8
)

func (o Options) withDefaults() Options {
	if o.Strategy == "" {
		o.Strategy = DefaultStrategy
	}
	if o.EmbedTimeout <= 0 {
		o.EmbedTimeout = DefaultEmbedTimeout
	}
	if o.MaxAutoLoad == 0 {
		o.MaxAutoLoad = DefaultMaxAutoLoad
	}
	if o.HistoryTurns == 0 {
		o.HistoryTurns = DefaultHistoryTurns
	}
	if o.HistoryDecay <= 0 || o.HistoryDecay > 1 {
		o.HistoryDecay = DefaultHistoryDecay
	}
	if o.RelativeScore == 0 {
		o.RelativeScore = DefaultRelativeScore
	}
	if o.MaxQueryChars <= 0 {
		o.MaxQueryChars = DefaultMaxQueryChars
	}
	if o.SettleAfter == 0 {
		o.SettleAfter = DefaultSettleAfter
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// ValidStrategy reports whether s names a strategy.
func ValidStrategy(s Strategy) bool {
	for _, x := range Strategies {
		if s == x {
			return true
		}
	}
	return false
}

// Router ranks one snapshot at a time; Update swaps in a new one atomically.
// It is safe for concurrent use: Route and Search read the current indexes
// through an atomic pointer and never wait for an Update.
type Router struct {
	opts Options
	cur  atomic.Pointer[rankIndex]

	mu sync.Mutex // serializes builds (the builder, background retry)

	// latest is the newest snapshot handed to Follow: the library as it is
	// now. Until its indexes are built, ranking hides the skills it no
	// longer has.
	latest atomic.Pointer[skills.Snapshot]
	upd    updater

	// Background retry of a vector index whose build failed (embedder down).
	bg    sync.WaitGroup
	bgCtx context.Context
	// retryEvery is vectorRetryEvery as the router was made with it.
	retryEvery time.Duration
	bgCancel   context.CancelFunc
	retrying   atomic.Bool
	lastRetry  atomic.Int64  // unix nanos
	indexGen   atomic.Uint64 // builds made, for rankIndex.gen
	// vectorsWait is when the embedder said the library's vectors may be
	// tried again (unix nanos; a Retry-After on the last build's error).
	vectorsWait atomic.Int64

	lastFallback atomic.Pointer[string] // last fallback reason logged
	embedBreak   breaker                // skips a failing remote embedder for a while

	warm    latestWriter // writes the index to Options.WarmDir
	vecSave latestWriter // writes the vector file to Options.IndexDir
	sweep   laterSweep   // removes the files saves retired (prebuilt.go)
}

// vectorRetryEvery is how often Route may start a background rebuild of a
// vector index that failed to build (e.g. Ollama was not up yet).
var vectorRetryEvery = 30 * time.Second

// New builds the indexes for snap. It fails only when ctx ends or the
// options are invalid: an embedder that cannot embed the library leaves the
// router ranking with bm25 (Decision.Fallback) and retrying in the background.
func New(ctx context.Context, snap *skills.Snapshot, opts Options) (*Router, error) {
	opts = opts.withDefaults()
	if !ValidStrategy(opts.Strategy) {
		return nil, fmt.Errorf("router: unknown strategy %q (want %s)", opts.Strategy, StrategyList())
	}
	r := &Router{opts: opts, retryEvery: vectorRetryEvery} // read once: tests change it between routers
	r.bgCtx, r.bgCancel = context.WithCancel(context.Background())
	if err := r.Update(ctx, snap); err != nil {
		r.bgCancel()
		return nil, err
	}
	// A vector index that failed to build is retried by the requests that
	// rank with it; this retries it on an idle proxy too, so that one whose
	// embedder came back is ready to rank with it before traffic does
	// (and /readyz stops listing it as degraded).
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		t := time.NewTicker(r.retryEvery)
		defer t.Stop()
		for {
			select {
			case <-r.bgCtx.Done():
				return
			case <-t.C:
				if ix := r.cur.Load(); ix != nil {
					r.maybeRetryVectors(ix)
				}
			}
		}
	}()
	return r, nil
}

// Update hands snap to the router (Follow) and waits until its indexes, or
// those of a newer snapshot handed in meanwhile, are in place. Vectors and
// counts of skills whose text did not change are reused. It fails only
// when ctx ends (or the router is closed); the previous indexes then stay
// in place.
func (r *Router) Update(ctx context.Context, snap *skills.Snapshot) error {
	if snap == nil {
		return errors.New("router: nil snapshot")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("router: building indexes: %w", err)
	}
	return r.wait(ctx, r.Follow(snap))
}

// Follow hands snap to the router and returns at once: skills it no longer
// has stop being ranked now, and its indexes are built in the background.
// A build still running for an older snapshot is cancelled, its result
// discarded: the newest snapshot wins. Follow is what a registry's reload
// subscriber calls (it must not wait on a build, or every later change
// would queue behind it); Synced waits for the result.
func (r *Router) Follow(snap *skills.Snapshot) uint64 {
	u := &r.upd
	u.mu.Lock()
	defer u.mu.Unlock()
	// A reload of an unchanged library (the watcher reloads on any event)
	// must not cancel the build in progress: reloads more frequent than a
	// build would starve it forever. The loop builds the new snapshot after
	// it, reusing every skill.
	same := u.want.Same(snap)
	if !same {
		r.stopSettle() // the library is not quiet: settle after its build
	}
	same = same && u.building
	u.want, u.wantGen = snap, u.wantGen+1
	r.latest.Store(snap)
	if u.cancel != nil && !same {
		u.cancel(errOvertaken)
	}
	if !u.building && r.bgCtx.Err() == nil {
		u.building = true
		r.bg.Add(1)
		go r.builder()
	}
	return u.wantGen
}

// Synced waits until the indexes of every snapshot handed to the router so
// far (or a newer one) are in place.
func (r *Router) Synced(ctx context.Context) error {
	r.upd.mu.Lock()
	gen := r.upd.wantGen
	r.upd.mu.Unlock()
	return r.wait(ctx, gen)
}

// errOvertaken cancels a build whose snapshot is no longer the newest.
var errOvertaken = errors.New("router: a newer library snapshot arrived")

// updater is the state of the background builder: the newest snapshot
// wanted, and how far the builds got.
type updater struct {
	mu        sync.Mutex
	want      *skills.Snapshot
	wantGen   uint64 // generation of want (one per Follow)
	installed uint64 // generation whose indexes are in place
	resolved  uint64 // generation up to which waiting is over (installed, or given up)
	err       error  // why generations up to resolved were given up
	building  bool
	cancel    context.CancelCauseFunc // of the build in progress
	changed   chan struct{}           // closed (and replaced) whenever installed, resolved or the index in place moves

	// Settling (settle.go): the quiet-period timer, a token that tells a
	// stopped timer's late call apart, and whether a settle is due.
	settleTimer *time.Timer
	settleToken uint64
	settleDue   bool
}

// builder builds the newest wanted snapshot until none is left: one
// goroutine at a time, started by Follow.
func (r *Router) builder() {
	defer r.bg.Done()
	u := &r.upd
	for {
		u.mu.Lock()
		// Snapshots handed in come first; a settle is due only once the
		// newest is in place (a change clears it, see Follow).
		settle := u.resolved >= u.wantGen
		if settle && (!u.settleDue || u.installed < u.wantGen) {
			u.building = false
			u.mu.Unlock()
			return
		}
		if settle {
			u.settleDue = false
		}
		snap, gen := u.want, u.wantGen
		ctx, cancel := context.WithCancelCause(r.bgCtx)
		u.cancel = cancel
		u.mu.Unlock()

		r.mu.Lock()
		prev := r.cur.Load()
		var ix *rankIndex
		var err error
		var paced func()
		if !settle || !prev.settled { // a settle finds prev built from snap
			if settle && r.opts.OnSettle != nil {
				paced = r.opts.OnSettle()
			}
			ix, err = r.build(ctx, snap, prev, settle)
		}
		overtaken := errors.Is(context.Cause(ctx), errOvertaken)
		if ix != nil && err == nil && !overtaken {
			r.cur.Store(ix)
			r.persistWarm(ix)
		}
		r.mu.Unlock()
		cancel(nil)

		u.mu.Lock()
		u.cancel = nil
		switch {
		case overtaken:
			// Discarded: the loop builds the newer snapshot.
		case settle: // gen was in place already
		case err == nil:
			u.installed, u.resolved = gen, max(u.resolved, gen)
		default: // closed: give up on everything handed in so far
			u.resolved, u.err = u.wantGen, err
		}
		if ix != nil && err == nil && !overtaken && !ix.settled {
			r.armSettle()
		}
		if u.changed != nil {
			close(u.changed)
			u.changed = nil
		}
		u.mu.Unlock()
		if paced != nil {
			paced() // after the waiters are told
		}
	}
}

// wait blocks until generation gen (or a newer one) is in place.
func (r *Router) wait(ctx context.Context, gen uint64) error {
	return r.waitUntil(ctx, "building indexes", func(u *updater) (bool, error) {
		if u.installed >= gen {
			return true, nil
		}
		return u.resolved >= gen, u.err
	})
}

// waitUntil blocks until done, asked under u.mu after every build, says
// so, and returns what done returned; doing names the wait in errors.
func (r *Router) waitUntil(ctx context.Context, doing string, done func(u *updater) (bool, error)) error {
	u := &r.upd
	for {
		u.mu.Lock()
		if ok, err := done(u); ok {
			u.mu.Unlock()
			return err
		}
		if u.changed == nil {
			u.changed = make(chan struct{})
		}
		ch := u.changed
		u.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("router: %s: %w", doing, ctx.Err())
		case <-r.bgCtx.Done(): // closed: no build will come
			return fmt.Errorf("router: closed while %s: %w", doing, context.Cause(r.bgCtx))
		case <-ch:
		}
	}
}

// Close stops background work (a pending vector index retry) and waits for
// it. Routing keeps working on the current indexes.
func (r *Router) Close() {
	// Under the updater's lock: Follow and the settle timer start
	// background work only while the router is open, so none starts
	// once Wait runs.
	r.upd.mu.Lock()
	r.bgCancel()
	r.stopSettle()
	r.upd.mu.Unlock()
	r.bg.Wait()
}

// Snapshot returns the library the router serves: the newest snapshot
// handed to it, whose indexes may still be building (ranking hides the
// skills it no longer has meanwhile). nil before the first is built.
func (r *Router) Snapshot() *skills.Snapshot {
	if r.cur.Load() == nil {
		return nil
	}
	return r.latest.Load()
}

// Ready reports whether the indexes are built.
func (r *Router) Ready() bool { return r.cur.Load() != nil }

// Degraded says why ranking cannot use the embedder now, "" when it can:
// the library's vectors failed to build or are of another size than the
// embedder's (either retried in the background), or the embedder failed
// query after query and is skipped for a while. Either
// way requests are ranked by BM25; readiness is not affected.
func (r *Router) Degraded() string {
	ix := r.cur.Load()
	switch {
	case ix == nil || ix.emb == nil:
		return ""
	case ix.vec == nil:
		return ix.vectorsUnavailable()
	}
	if why := ix.otherSize(); why != "" {
		return why
	}
	if why := r.embedBreak.skipping(); why != "" {
		return "embedder " + ix.emb.Name() + " " + why
	}
	return ""
}

// gone returns a test for skills of ix that the newest snapshot no longer
// has (nil when ix is built from it): a deleted skill is never ranked
// after the reload that saw it gone, even while the new indexes build.
func (r *Router) gone(ix *rankIndex) func(id string) bool {
	latest := r.latest.Load()
	if latest == nil || latest == ix.snap {
		return nil
	}
	return func(id string) bool { _, ok := latest.Get(id); return !ok }
}

// depthWithout is the ranking depth that leaves depth ranks once the skills
// gone reports are left out (depth <= 0: the whole library).
func depthWithout(ix *rankIndex, gone func(id string) bool, depth int) int {
	if gone == nil || depth <= 0 {
		return depth
	}
	for _, s := range ix.list {
		if gone(s.ID) {
			depth++
		}
	}
	return depth
}

// Strategy is the default strategy.
func (r *Router) Strategy() Strategy { return r.opts.Strategy }

// EmbedderName names the current embedder ("" when there is none).
func (r *Router) EmbedderName() string {
	if ix := r.cur.Load(); ix != nil && ix.emb != nil {
		return ix.emb.Name()
	}
	return ""
}

// Route ranks the library for q. It never fails: embedder trouble falls back
// to bm25, and a router without indexes returns an empty decision.
func (r *Router) Route(ctx context.Context, q Query) *Decision {
	start := time.Now()
	strategy := q.Strategy
	if strategy == "" || !ValidStrategy(strategy) {
		strategy = r.opts.Strategy
	}
	d := &Decision{Strategy: strategy, Ranked: []Scored{}, Selected: []string{}}
	ix := r.cur.Load()
	if ix == nil {
		d.Fallback, d.FallbackReason, d.FallbackCode = true, "router has no index", FallbackNoIndex
		d.Latency = time.Since(start)
		return d
	}
	if ix.emb != nil && UsesEmbedder(strategy) {
		d.Embedder = ix.emb.Name()
	}
	var pinned []string
	rq := newRankQuery(q.Messages, r.opts, func(text string) string {
		var rest string
		pinned, rest = ix.men.findStrip(text)
		return rest
	})
	d.Query = rq.latest
	topK := q.TopK
	if topK == 0 {
		topK = r.opts.MaxAutoLoad
	}
	// Selection looks at topK+nearMisses skills past the pinned ones.
	depth := q.Ranked
	if depth > 0 {
		depth = max(depth, max(topK, 0)+nearMisses) + len(pinned)
	}
	// Skills deleted since the indexes were built are left out at once
	// (see Follow): rank deep enough that depth remain without them.
	gone := r.gone(ix)
	key := rq.key(strategy)
	res := ix.cache.get(key)
	if want := depthWithout(ix, gone, depth); res != nil && res.covers(want) {
		d.Cached = true
	} else {
		res = r.rank(ctx, ix, strategy, rq, want)
		ix.cache.put(key, res)
	}
	d.Strategy = res.strategy
	d.Fallback, d.FallbackReason, d.FallbackCode = res.fallback != "", res.fallback, res.fallbackCode
	if gone != nil {
		res = res.without(ix, gone)
		pinned = slices.DeleteFunc(pinned, gone)
	}
	d.Ranked = res.scored(ix, depth)
	ix.selectSkills(d, res, pinned, topK, r.threshold(ix, res.strategy), r.opts.RelativeScore)
	d.Latency = time.Since(start)
	return d
}

// Search ranks the whole library for a free-text query (the search_skills
// tool) with the default strategy, best first; limit <= 0 returns all.
func (r *Router) Search(ctx context.Context, query string, limit int) []Scored {
	ix := r.cur.Load()
	if ix == nil {
		return nil
	}
	rq := newRankQuery([]Message{{Role: "user", Text: query}}, r.opts, nil)
	gone := r.gone(ix)
	res := r.rank(ctx, ix, r.opts.Strategy, rq, depthWithout(ix, gone, limit))
	if gone != nil {
		res = res.without(ix, gone)
	}
	return res.scored(ix, limit)
}

// noteFallback logs a fallback when its reason changes, so an embedder that
// is down logs once, not once per request.
func (r *Router) noteFallback(reason string) {
	if p := r.lastFallback.Load(); p != nil && *p == reason {
		return
	}
	r.lastFallback.Store(&reason)
	r.opts.Logger.Warn("routing with bm25 fallback", "reason", reason, "embedder", r.embedderName())
}

// embedderName names the embedder of the index in use, for log lines.
func (r *Router) embedderName() string {
	if ix := r.cur.Load(); ix != nil && ix.emb != nil {
		return ix.emb.Name() + " " + ix.emb.Model()
	}
	return ""
}

// noteRecovered resets noteFallback after a successful embedding.
func (r *Router) noteRecovered() {
	if p := r.lastFallback.Load(); p != nil {
		r.lastFallback.Store(nil)
		r.opts.Logger.Info("embedder recovered", "embedder", r.embedderName())
	}
}
