package router

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/skills"
)

// TestShallowRankingSamePrompt: a rewrite that ranks only the top of the
// library (RankDepth, and deeper only when the catalog runs out) plans
// exactly what planning from the whole ranking gives, for every strategy and
// for catalogs that skip most of the ranking (enabled mode).
func TestShallowRankingSamePrompt(t *testing.T) {
	const n = 300
	snap := synthLibrary(t, n, func(i int) string { return wordsDesc(i, 6+i%9) })
	r := builtinRouter(t, snap)
	var allow []string
	for i := 0; i < n; i += 10 {
		allow = append(allow, fmt.Sprintf("skill-%05d", i))
	}
	options := map[string]RewriteOptions{
		"auto":           {},
		"auto, small":    {CatalogBudgetTokens: 300},
		"enabled, small": {CatalogMode: CatalogEnabled, Allowlist: allow, CatalogBudgetTokens: 300},
		"all":            {CatalogMode: CatalogAll},
	}
	queries := []string{"parse the invoice table and export a chart", "deploy the model and monitor alerts",
		"encrypt and sign the backup", "hello there", "#skill-00007 summarize this report"}
	ctx := context.Background()
	for _, strategy := range Strategies {
		for _, name := range slices.Sorted(maps.Keys(options)) {
			opts := options[name]
			for _, text := range queries {
				msgs := []Message{{Role: "system", Text: "s"}, {Role: "user", Text: text}}
				shallow, err := r.Prompt(ctx, Query{Messages: msgs, Strategy: strategy}, opts)
				if err != nil {
					t.Fatal(err)
				}
				full := r.Route(ctx, Query{Messages: msgs, Strategy: strategy})
				if len(full.Ranked) != n {
					t.Fatalf("Ranked 0 listed %d of %d skills", len(full.Ranked), n)
				}
				want, err := BuildPrompt(ctx, snap, full, msgs, opts)
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s, %s, %q", strategy, name, text)
				if len(shallow.Decision.Ranked) >= n && name != "all" {
					t.Errorf("%s: the rewrite ranked the whole library (%d)", what, len(shallow.Decision.Ranked))
				}
				if !slices.Equal(shallow.Decision.Ranked, full.Ranked[:len(shallow.Decision.Ranked)]) {
					t.Errorf("%s: shallow ranking is not the start of the whole one", what)
				}
				if shallow.Catalog != want.Catalog || shallow.AddedTokens != want.AddedTokens ||
					!slices.Equal(shallow.Decision.Selected, want.Decision.Selected) ||
					!maps.Equal(shallow.Decision.Reasons, want.Decision.Reasons) {
					t.Errorf("%s: shallow plan differs:\n got %v %v %d\nwant %v %v %d", what,
						shallow.CatalogShown, shallow.Decision.Selected, shallow.AddedTokens,
						want.CatalogShown, want.Decision.Selected, want.AddedTokens)
				}
			}
		}
	}
}

// TestShallowRankExact: the top of a shallow ranking, whose cosines are
// approximated first and rescored exactly where they can matter, equals the
// start of the whole ranking bit for bit.
func TestShallowRankExact(t *testing.T) {
	snap := synthLibrary(t, 400, func(i int) string { return wordsDesc(i, 5+i%11) })
	r := builtinRouter(t, snap)
	ix := r.cur.Load()
	ctx := context.Background()
	for _, strategy := range Strategies {
		for k := range 40 {
			text := wordsDesc(k*31+7, 3+k%9)
			q := func() rankQuery { return newRankQuery([]Message{{Role: "user", Text: text}}, r.opts, nil) }
			all := r.rank(ctx, ix, strategy, q(), 0)
			for _, depth := range []int{1, 5, 64, 399} {
				got := r.rank(ctx, ix, strategy, q(), depth)
				if !slices.Equal(got.top, all.top[:depth]) {
					t.Fatalf("%s, %q, depth %d: shallow top differs from the whole ranking", strategy, text, depth)
				}
			}
		}
	}
}

// The rendered-envelope caches stay under envelopeCacheBytes however many
// skills are loaded, and keep answering with the same text.
func TestEnvelopeCacheBounded(t *testing.T) {
	snap := fixture(t)
	l := newLibrary(snap.Skills())
	for round := range 3 {
		for _, s := range l.skills {
			e := l.envelope(s)
			if e.text != skills.Envelope(s) {
				t.Fatalf("%s: cached envelope differs", s.ID)
			}
			l.envelopeJSON(s.ID, e.text)
		}
		if round == 0 {
			l.mu.Lock()
			l.envBytes = envelopeCacheBytes - 1 // as if full
			l.mu.Unlock()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.envBytes > envelopeCacheBytes || len(l.envelopes) == 0 {
		t.Errorf("%d bytes in %d envelopes, bound %d", l.envBytes, len(l.envelopes), envelopeCacheBytes)
	}
}

// TestMixerAffine: the affine form of the hybrid score stays within its
// slack of hybridScore, for calibrations as built and degenerate ones.
func TestMixerAffine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	scales := []scale{{0.1, 0.6}, {-0.2, 0.05}, {0, 0}, {0.3, 0.3 + 1e-10}, {2, 40}}
	worst := 0.0
	defer SetHybridBM25Weight(0.4)()
	for trial := range 2000 {
		SetHybridBM25Weight([]float64{0.4, 0, 1, 0.75}[trial%4])
		m := mixer{ncal: scales[trial%len(scales)], ccal: scales[(trial/len(scales))%len(scales)]}
		if trial%7 != 0 {
			m.ceiling = 1 + r.Float64()*50
		}
		cmax := []float64{1.1, 3, 40}[trial%3]
		a, b, c, slack := m.affine(cmax)
		if !(slack > 0) {
			t.Fatalf("%+v: slack %g", m, slack)
		}
		for range 50 {
			bm25 := r.Float64() * max(m.ceiling, 1)
			if m.ceiling == 0 {
				bm25 = 0 // BM25 never exceeds its ceiling
			}
			cos := (r.Float64()*2 - 1) * cmax
			got, want := a*bm25+b*cos+c, m.hybridScore(bm25, cos)
			if d := math.Abs(got - want); d > slack {
				t.Fatalf("%+v, bm25 %v, cosine %v: affine %v, exact %v (off %g, slack %g)", m, bm25, cos, got, want, d, slack)
			} else {
				worst = max(worst, d/slack)
			}
		}
	}
	t.Logf("largest difference: %.3f of the slack", worst)
}

// embedOnly hides the builtin's EmbedTerms: the embedder of a router that
// analyses every query for BM25 itself.
type embedOnly struct{ *embed.Builtin }

func (e embedOnly) EmbedTerms() {}

// silentTerms has EmbedTerms but hands no terms over, as telemetry's
// wrapper of an embedder without them does.
type silentTerms struct{ *embed.Builtin }

func (e silentTerms) EmbedTerms(ctx context.Context, texts []string, _ func(int, []string)) ([][]float32, error) {
	return e.Embed(ctx, texts)
}

// TestTermsHandedOver: the terms the builtin hands over while embedding a
// query are the ones BM25's own analysis gives (every turn, its weight, its
// order), and the rankings with and without the hand-over are the same.
func TestTermsHandedOver(t *testing.T) {
	snap := synthLibrary(t, 200, func(i int) string { return wordsDesc(i, 5+i%11) })
	r := builtinRouter(t, snap)
	ix := r.cur.Load()
	hidden := *ix
	hidden.emb = embedOnly{ix.emb.(*embed.Builtin)}
	ctx := context.Background()
	for k := range 30 {
		msgs := []Message{{Role: "user", Text: wordsDesc(k*17+3, 2+k%7)}, {Role: "assistant", Text: "ok"},
			{Role: "user", Text: "The the and " + wordsDesc(k*5+1, 1+k%4) + "\n```\nfunc main() { deploy() }\n```\n" + wordsDesc(k, 3)}}
		q := newRankQuery(msgs, r.opts, nil)
		if len(q.turns) < 3 {
			t.Fatalf("%d turns: the test wants history and a code turn", len(q.turns))
		}
		sc := getRankScratch(len(ix.list))
		r.cosines(ctx, ix, &q, sc, false)
		rankScratches.Put(sc)
		if q.terms == nil {
			t.Fatal("no terms handed over")
		}
		fresh := newRankQuery(msgs, r.opts, nil)
		if !slices.Equal(q.terms, fresh.analysed()) {
			t.Fatalf("handed-over terms %v, BM25's analysis %v", q.terms, fresh.analysed())
		}
		for _, strategy := range Strategies {
			got, want := r.rank(ctx, ix, strategy, newRankQuery(msgs, r.opts, nil), 20), r.rank(ctx, &hidden, strategy, newRankQuery(msgs, r.opts, nil), 20)
			if !slices.Equal(got.top, want.top) {
				t.Fatalf("%s: ranking differs with the terms handed over", strategy)
			}
		}
	}
	q := newRankQuery([]Message{{Role: "user", Text: "deploy the model"}}, r.opts, nil)
	sc := getRankScratch(len(ix.list))
	defer rankScratches.Put(sc)
	if r.cosines(ctx, &hidden, &q, sc, false); q.terms != nil {
		t.Error("terms set by an embedder that does not hand them over")
	}
	silent := *ix
	silent.emb = silentTerms{ix.emb.(*embed.Builtin)}
	if r.cosines(ctx, &silent, &q, sc, false); q.terms != nil {
		t.Error("terms set although none were handed over")
	}
}

// builtinRouter is a router over snap with the builtin embedder, fitted to
// it, closed at the test's end.
func builtinRouter(t testing.TB, snap *skills.Snapshot) *Router {
	t.Helper()
	emb := embed.NewBuiltin(embed.Config{})
	r, err := New(context.Background(), snap, Options{Embedder: emb, Fit: func(c []string) Embedder { return emb.Fit(c) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}
