package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// holdingFit is the builtin embedder, fitted per library, whose embedding
// of the whole library (a settle's, not an edit's two texts) can be held
// until released or cancelled.
type holdingFit struct {
	base      *embed.Builtin
	entered   chan struct{}                 // one send per whole-library call
	hold      atomic.Pointer[chan struct{}] // closed: calls go through
	whole     atomic.Int64                  // whole-library calls
	cancelled atomic.Int64                  // held calls whose context ended
}

func newHoldingFit() *holdingFit {
	h := &holdingFit{base: embed.NewBuiltin(embed.Config{}), entered: make(chan struct{}, 8)}
	h.hold.Store(new(chan struct{}))
	*h.hold.Load() = make(chan struct{})
	return h
}

func (h *holdingFit) options() router.Options {
	return router.Options{Embedder: h.base, SettleAfter: time.Millisecond,
		Fit: func(c []string) router.Embedder { return &heldBuiltin{Builtin: h.base.Fit(c), h: h} }}
}

type heldBuiltin struct {
	*embed.Builtin
	h *holdingFit
}

func (e *heldBuiltin) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) > 2 {
		e.h.whole.Add(1)
		e.h.entered <- struct{}{}
		select {
		case <-*e.h.hold.Load():
		case <-ctx.Done():
			e.h.cancelled.Add(1)
			return nil, ctx.Err()
		}
	}
	return e.Builtin.Embed(ctx, texts)
}

// TestSettle: the settle after an edit is overtaken (cancelled, never
// installed) by a further edit and settles that one instead; a reload
// that finds the library unchanged does not cancel it.
func TestSettle(t *testing.T) {
	for _, tc := range []struct {
		name          string
		reload        func(t *testing.T, dir string) // while the settle runs
		wantCancelled int64
		wantWhole     int64 // whole-library embeddings: the settles started
	}{
		{"overtaken by an edit", func(t *testing.T, dir string) {
			writeSkill(t, dir, "skill-05", "Helps with shrinking docker images with multi-stage builds.")
		}, 1, 2},
		{"not cancelled by an unchanged reload", func(t *testing.T, dir string) {}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			snap := writeLibrary(t, dir)
			h := newHoldingFit()
			close(*h.hold.Load()) // the start embeds the whole library too
			r := newRouter(t, snap, h.options())
			<-h.entered
			held := make(chan struct{})
			h.hold.Store(&held)

			writeSkill(t, dir, "skill-03", "Helps with regular expressions for ISO dates and times.")
			if err := r.Update(ctx, skills.Load(ctx, []string{dir}, skills.Options{})); err != nil {
				t.Fatal(err)
			}
			<-h.entered // the settle is embedding
			tc.reload(t, dir)
			next := skills.Load(ctx, []string{dir}, skills.Options{})
			r.Follow(next)
			if tc.wantCancelled > 0 {
				if err := r.Synced(ctx); err != nil { // the edit's build is in place, the settle cancelled
					t.Fatal(err)
				}
			}
			close(held)
			settled(t, r)
			if got := h.cancelled.Load(); got != tc.wantCancelled {
				t.Errorf("%d settles cancelled, want %d", got, tc.wantCancelled)
			}
			if got := h.whole.Load() - 1; got != tc.wantWhole {
				t.Errorf("%d settles embedded the library, want %d", got, tc.wantWhole)
			}
			assertRanksAsFresh(t, r, newRouter(t, next, builtinOptions()))
		})
	}
}

// TestSettleRemoteEmbedsNothing: an embedder without a fit (ollama,
// openai) keeps every vector when the index settles; only the calibration,
// which depends on the whole library, is done again (its queries).
func TestSettleRemoteEmbedsNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	remote := &remoteCounter{Builtin: fittedBuiltin(t, snap)}
	var logs syncbuf.Buffer
	r := newRouter(t, snap, router.Options{Embedder: remote, SettleAfter: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	writeSkill(t, dir, "skill-03", "Helps with regular expressions for ISO dates and times.")
	if err := r.Update(ctx, skills.Load(ctx, []string{dir}, skills.Options{})); err != nil {
		t.Fatal(err)
	}
	docs := remote.docCalls.Load()
	settled(t, r)
	if n := remote.docCalls.Load() - docs; n != 0 {
		t.Errorf("settling made %d document embedding calls, want 0", n)
	}
	if !strings.Contains(logs.String(), `msg="routing index settled" skills=30`) || !strings.Contains(logs.String(), "embedded=0 reused=30") {
		t.Errorf("no settle log line:\n%s", logs.String())
	}
}

// TestWarmStartSettles: an index kept before its router settled it (the
// process stopped within the quiet period) says so in its manifest; the
// router that loads it settles it after the start and keeps the settled
// one, which the next start loads as it is.
func TestWarmStartSettles(t *testing.T) {
	ctx := context.Background()
	dir, warm := t.TempDir(), t.TempDir()
	snap := writeLibrary(t, dir)
	var logs syncbuf.Buffer
	opts := func(settleAfter time.Duration) router.Options {
		o := builtinOptions()
		o.WarmDir, o.SettleAfter = warm, settleAfter
		o.Restore = func(s []byte) (router.Embedder, error) { return embed.RestoreBuiltin(s) }
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		return o
	}
	r1 := newRouter(t, snap, opts(-1))
	writeSkill(t, dir, "skill-03", "Helps with regular expressions for ISO dates and times.")
	next := skills.Load(ctx, []string{dir}, skills.Options{})
	if err := r1.Update(ctx, next); err != nil {
		t.Fatal(err)
	}
	r1.Close() // waits for the kept index
	if manifestSettled(t, warm) {
		t.Fatal("the index kept after an edit says it is settled")
	}

	logs.Reset()
	r2 := newRouter(t, next, opts(time.Millisecond))
	settled(t, r2)
	r2.Close()
	for _, line := range []string{"loaded the routing index kept from the last start", "routing index settled"} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("no %q in the log:\n%s", line, logs.String())
		}
	}
	if !manifestSettled(t, warm) {
		t.Fatal("the settled index was not kept")
	}

	logs.Reset()
	r3 := newRouter(t, next, opts(time.Millisecond))
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := r3.Settled(done); err != nil {
		t.Errorf("a start from a settled index is not settled: %v", err)
	}
	if strings.Contains(logs.String(), "routing index settled") || !strings.Contains(logs.String(), "loaded the routing index kept") {
		t.Errorf("the start from a settled index:\n%s", logs.String())
	}
	assertRanksAsFresh(t, r3, newRouter(t, next, builtinOptions()))
}

// TestPrebuiltIsFresh: SavePrebuilt (`router index build`) writes an
// index as a fresh build makes it, even from a router that reached its
// library by an edit and never settled; a replica loading it has nothing
// to settle and ranks as a fresh start.
func TestPrebuiltIsFresh(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	restore := func(o router.Options) router.Options {
		o.Restore = func(s []byte) (router.Embedder, error) { return embed.RestoreBuiltin(s) }
		return o
	}
	for _, tc := range []struct {
		name string
		edit bool
	}{{"cold", false}, {"after an edit, not settled", true}} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			o := builtinOptions()
			o.SettleAfter = -1
			r := newRouter(t, snap, o)
			lib := snap
			if tc.edit {
				writeSkill(t, dir, "skill-03", "Helps with regular expressions for ISO dates and times.")
				lib = skills.Load(ctx, []string{dir}, skills.Options{})
				if err := r.Update(ctx, lib); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.SavePrebuilt(out); err != nil {
				t.Fatal(err)
			}
			if !manifestSettled(t, out) {
				t.Error("the prebuilt index is not settled")
			}
			replica := restore(builtinOptions())
			replica.Prebuilt = out
			rep := newRouter(t, lib, replica)
			done, cancel := context.WithCancel(ctx)
			cancel()
			if err := rep.Settled(done); err != nil {
				t.Errorf("a replica on the prebuilt index is not settled: %v", err)
			}
			assertRanksAsFresh(t, rep, newRouter(t, lib, builtinOptions()))
		})
	}
}

// manifestSettled reads the settled flag of dir's builtin manifest.
func manifestSettled(t *testing.T, dir string) bool {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "prebuilt-builtin-*.json"))
	if len(paths) != 1 {
		t.Fatalf("manifests in %s: %v", dir, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Settled *bool `json:"settled"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Settled == nil {
		t.Fatalf("manifest %s: %v, settled %v\n%s", paths[0], err, m.Settled, bytes.TrimSpace(b))
	}
	return *m.Settled
}

// TestOnSettlePacesTheSettle: a settle build starts on its own, so the
// caller's pacing hook (cmd/router lifts its memory cap during builds) is
// called around it, once per settle, and its done func after it.
func TestOnSettlePacesTheSettle(t *testing.T) {
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	var started, done atomic.Int64
	opts := builtinOptions()
	opts.SettleAfter = time.Millisecond
	opts.OnSettle = func() func() {
		started.Add(1)
		return func() { done.Add(1) }
	}
	r := newRouter(t, snap, opts)
	if started.Load() != 0 {
		t.Fatalf("a fresh start called OnSettle %d times", started.Load())
	}
	writeSkill(t, dir, "skill-03", "Helps with regular expressions for ISO dates and times.")
	if err := r.Update(context.Background(), skills.Load(context.Background(), []string{dir}, skills.Options{})); err != nil {
		t.Fatal(err)
	}
	settled(t, r)
	for i := 0; i < 1000 && done.Load() == 0; i++ { // done runs after the waiters are told
		time.Sleep(time.Millisecond)
	}
	if started.Load() != 1 || done.Load() != 1 {
		t.Errorf("OnSettle called %d times, its done %d; want 1 and 1", started.Load(), done.Load())
	}
}

// TestEarlierManifests: a manifest written before the settled field is
// read by where it was found. A prebuilt one is `router index build`'s, a
// fresh build: settled, never settled again after each start of a replica
// that cannot write it. A warm one may be an incremental build's: it
// settles once.
func TestEarlierManifests(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	o := builtinOptions()
	o.SettleAfter = -1
	out := t.TempDir()
	if err := newRouter(t, snap, o).SavePrebuilt(out); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(out, "prebuilt-builtin-*.json"))
	if len(paths) != 1 {
		t.Fatalf("manifests: %v", paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m["settled"] == nil {
		t.Fatalf("manifest %s: %v", b, err)
	}
	delete(m, "settled")
	delete(m, "self") // an earlier manifest had neither
	old, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths[0], old, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		set     func(*router.Options)
		settled bool
	}{
		{"prebuilt", func(o *router.Options) { o.Prebuilt = out }, true},
		{"warm", func(o *router.Options) { o.WarmDir = out }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := builtinOptions()
			ro.Restore = func(s []byte) (router.Embedder, error) { return embed.RestoreBuiltin(s) }
			ro.SettleAfter = -1
			tc.set(&ro)
			r := newRouter(t, snap, ro)
			done, cancel := context.WithCancel(ctx)
			cancel()
			if err := r.Settled(done); (err == nil) != tc.settled {
				t.Errorf("settled at the start: %v, want %v", err == nil, tc.settled)
			}
		})
	}
}

// TestReloadBuildSaysSettled: the line of a library change's build says
// whether the index is settled, since docs/rewrite.md tells users to wait
// for the index to settle: an edit past a tenth of the library refits at
// once and nothing settles later (no "routing index settled" line would
// come; every edit of a library under 10 skills is such an edit), while
// a smaller edit's index settles after the quiet period.
func TestReloadBuildSaysSettled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edited int // of the library's 30 skills
		want   string
	}{
		{"small edit", 1, "settled=false"},
		{"past a tenth", 4, "settled=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			snap := writeLibrary(t, dir)
			var logs syncbuf.Buffer
			o := builtinOptions()
			o.SettleAfter = -1
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			r := newRouter(t, snap, o)
			// The first build has nothing to compare with: no "changed"
			// count (it would call every skill changed, a kept index or not).
			if first := logs.String(); !strings.Contains(first, `msg="routing index built" skills=30 took=`) || strings.Contains(first, "changed=") {
				t.Errorf("first build's line:\n%s", first)
			}
			logs.Reset()
			for i := range tc.edited {
				writeSkill(t, dir, fmt.Sprintf("skill-%02d", i), "Helps with regular expressions for ISO dates and times.")
			}
			next := skills.Load(ctx, []string{dir}, skills.Options{})
			if err := r.Update(ctx, next); err != nil {
				t.Fatal(err)
			}
			line := fmt.Sprintf(`msg="routing index built" skills=30 changed=%d %s`, tc.edited, tc.want)
			if !strings.Contains(logs.String(), line) {
				t.Errorf("no %q in the log:\n%s", line, logs.String())
			}
			done, cancel := context.WithCancel(ctx)
			cancel()
			if err := r.Settled(done); (err == nil) != (tc.want == "settled=true") {
				t.Errorf("Settled: %v, the log says %s", err, tc.want)
			}
		})
	}
}

// A skill added by an edit is embedded with the library's fit, which does
// not know its new words. Those words must not land in the slot that holds
// a query's unknown words, or every query of words the library does not
// know (gibberish, another topic) would match the new skill through it
// until the index settles, and be auto-loaded.
func TestEditedSkillDoesNotMatchUnknownWords(t *testing.T) {
	r, _ := editedRouter(t, "json-fixer", "Repairs malformed JSON documents with trailing commas, unquoted keys and smart quotes. Use when JSON fails to parse.")
	for _, q := range []string{"zebra quixotic marmalade", "xylophone lessons for toddlers"} {
		for _, s := range []router.Strategy{router.StrategyHybrid, router.StrategyEmbedding} {
			d := route(r, s, q)
			if slices.Contains(d.Selected, "json-fixer") {
				t.Errorf("%s %q auto-loaded the edited skill: %v", s, q, topScores(d, 3))
			}
			for _, sc := range d.Ranked {
				if sc.ID == "json-fixer" && cosineOf(sc) > 0.05 {
					t.Errorf("%s %q: the edited skill's cosine %.3f, from words neither knows", s, q, cosineOf(sc))
				}
			}
		}
	}
	// Its own words still find it.
	if d := route(r, router.StrategyHybrid, "my JSON has trailing commas and fails to parse"); !slices.Contains(d.Selected, "json-fixer") {
		t.Errorf("the edited skill is not found by its own words: %v", topScores(d, 3))
	}
}

func cosineOf(s router.Scored) float64 {
	v, _ := s.Components.Get("cosine")
	return v
}

// TestSettledShortlistIsAFreshStarts: a conversation whose catalog
// shortlist was ranked by an edit's incremental index gets, once the index
// settled, the shortlist a process started on the same files gives it,
// not the one memoised before the settle: replicas agree again.
func TestSettledShortlistIsAFreshStarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	o := builtinOptions()
	o.SettleAfter = 2 * time.Second
	r := newRouter(t, snap, o)
	writeSkill(t, dir, "skill-05", "Repairs malformed JSON documents with trailing commas, unquoted keys and smart quotes. Use when JSON fails to parse.")
	if err := r.Update(ctx, skills.Load(ctx, []string{dir}, skills.Options{})); err != nil {
		t.Fatal(err)
	}
	q := router.Query{Messages: []router.Message{{Role: "user", Text: "my JSON config has trailing commas and smart quotes, and the parser fails on dates"}},
		Strategy: router.StrategyHybrid}
	ro := router.RewriteOptions{CatalogBudgetTokens: 300}
	before, err := r.Prompt(ctx, q, ro) // ranked by the edit's index, memoised for the conversation
	if err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.Settled(wait); err != nil {
		t.Fatal(err)
	}
	after, err := r.Prompt(ctx, q, ro)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := newRouter(t, skills.Load(ctx, []string{dir}, skills.Options{}), builtinOptions()).Prompt(ctx, q, ro)
	if err != nil {
		t.Fatal(err)
	}
	if before.CatalogHidden == 0 {
		t.Fatal("the catalog is not a shortlist: nothing is memoised")
	}
	if after.Catalog != fresh.Catalog {
		t.Errorf("settled shortlist %v, a fresh start's %v (before the settle %v)", after.CatalogShown, fresh.CatalogShown, before.CatalogShown)
	}
}

// A skill added by an edit is embedded with the library's older fit, which
// does not know most of its words. Its known words must not carry its
// whole vector: its similarity to a query of them stays near what the
// settled index (a fresh fit) gives, instead of several times it, and a
// generic request does not auto-load it.
func TestEditedSkillKnownWordsNotOverweighted(t *testing.T) {
	r, edited := editedRouter(t, "zz-novel", "Quuxify the flarbnog zorblatt with snazzleberry. Use for help with any project.")
	fresh := newRouter(t, edited, builtinOptions())
	const q = "I need help with my project"
	cos := func(r *router.Router) float64 {
		for _, sc := range route(r, router.StrategyHybrid, q).Ranked {
			if sc.ID == "zz-novel" {
				return cosineOf(sc)
			}
		}
		return 0
	}
	inc, settled := cos(r), cos(fresh)
	if settled <= 0 || inc > 1.5*settled {
		t.Errorf("the edited skill's cosine %.3f on the edit's build, %.3f on a fresh one", inc, settled)
	}
	if d := route(r, router.StrategyHybrid, q); slices.Contains(d.Selected, "zz-novel") {
		t.Errorf("a generic request auto-loaded the edited skill: %v", topScores(d, 3))
	}
}

// editedRouter is a router over the test library that then had the skill
// id (description desc) added, still on the edit's incremental build, and
// the library as edited.
func editedRouter(t *testing.T, id, desc string) (*router.Router, *skills.Snapshot) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	o := builtinOptions()
	o.SettleAfter = -1 // stay on the edit's incremental build
	r := newRouter(t, writeLibrary(t, dir), o)
	writeSkill(t, dir, id, desc)
	edited := skills.Load(ctx, []string{dir}, skills.Options{})
	if err := r.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	return r, edited
}
