package router_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire/chat"
)

// topics make a library of distinct skills for the reload tests.
var topics = []string{"postgres query plans", "kubernetes pod crashes", "pdf form filling", "regex for dates",
	"git commit messages", "docker image size", "csv data profiling", "incident postmortems", "api pagination",
	"changelog entries", "terraform state drift", "react hooks bugs", "python packaging", "go race conditions",
	"sql index tuning", "css grid layouts", "bash script safety", "kafka consumer lag", "redis eviction",
	"nginx rewrite rules", "latex tables", "excel pivot tables", "jwt validation", "oauth scopes",
	"s3 bucket policies", "grpc deadlines", "rust lifetimes", "swift concurrency", "unit test flakiness", "load testing"}

// writeLibrary writes one skill per topic under dir and returns its snapshot.
func writeLibrary(t testing.TB, dir string) *skills.Snapshot {
	t.Helper()
	for i, topic := range topics {
		id := fmt.Sprintf("skill-%02d", i)
		writeSkill(t, dir, id, "Helps with "+topic+". Use when the user asks about "+topic+".")
	}
	return skills.Load(context.Background(), []string{dir}, skills.Options{})
}

func writeSkill(t testing.TB, dir, id, desc string) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, id), 0o755)
	body := "---\nname: " + id + "\ndescription: " + desc + "\n---\n# " + id + "\n\nSteps for " + desc + "\n"
	if err := os.WriteFile(filepath.Join(dir, id, "SKILL.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// remoteCounter is a remote embedder stand-in (the builtin underneath)
// that counts its calls and can hold document calls until released.
type remoteCounter struct {
	*embed.Builtin
	docCalls, docTexts, queries atomic.Int64
	hold                        atomic.Pointer[chan struct{}]
	cancelled                   atomic.Int64 // document calls that saw their context end
}

func (c *remoteCounter) Name() string  { return "remote-fake" }
func (c *remoteCounter) Model() string { return "m" }
func (c *remoteCounter) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.queries.Add(1)
	return c.Builtin.Embed(ctx, texts)
}
func (c *remoteCounter) EmbedTerms(ctx context.Context, texts []string, terms func(int, []string)) ([][]float32, error) {
	c.queries.Add(1)
	return c.Builtin.EmbedTerms(ctx, texts, terms)
}
func (c *remoteCounter) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	// hold is read before the call is counted: a test that waits for the
	// count and then clears hold must find this call already holding.
	h := c.hold.Load()
	c.docCalls.Add(1)
	c.docTexts.Add(int64(len(texts)))
	if h != nil {
		select {
		case <-*h:
		case <-ctx.Done():
			c.cancelled.Add(1)
			return nil, ctx.Err()
		}
	}
	return c.Builtin.Embed(ctx, texts)
}

// TestReloadEmbedsOnlyChangedSkills (issue 14, repro 4): after a library
// change, only the skills whose text changed are embedded: one embedding
// call with a remote embedder (no calibration queries), no new fit of the
// builtin; an added and a deleted skill count as changes too.
func TestReloadEmbedsOnlyChangedSkills(t *testing.T) {
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	ctx := context.Background()

	remote := &remoteCounter{Builtin: fittedBuiltin(t, snap)}
	r := newRouter(t, snap, router.Options{Embedder: remote})

	var fits atomic.Int64
	b := embed.NewBuiltin(embed.Config{})
	builtin := newRouter(t, snap, router.Options{Embedder: b, Fit: func(c []string) router.Embedder { fits.Add(1); return b.Fit(c) }})

	for _, change := range []struct {
		name string
		do   func()
	}{
		{"edit", func() { writeSkill(t, dir, "skill-03", "Helps with regular expressions for ISO dates and times.") }},
		{"add", func() { writeSkill(t, dir, "skill-new", "Helps with graphql schema design.") }},
		{"delete", func() { os.RemoveAll(filepath.Join(dir, "skill-07")) }},
	} {
		change.do()
		next := skills.Load(ctx, []string{dir}, skills.Options{})
		calls, texts, queries, fitsBefore := remote.docCalls.Load(), remote.docTexts.Load(), remote.queries.Load(), fits.Load()
		if err := r.Update(ctx, next); err != nil {
			t.Fatal(err)
		}
		if err := builtin.Update(ctx, next); err != nil {
			t.Fatal(err)
		}
		wantCalls, maxTexts := int64(1), int64(2)
		if change.name == "delete" {
			wantCalls, maxTexts = 0, 0
		}
		if got := remote.docCalls.Load() - calls; got != wantCalls {
			t.Errorf("%s: %d embedding calls, want %d", change.name, got, wantCalls)
		}
		if got := remote.docTexts.Load() - texts; got > maxTexts {
			t.Errorf("%s: %d texts embedded, want at most %d", change.name, got, maxTexts)
		}
		if got := remote.queries.Load() - queries; got != 0 {
			t.Errorf("%s: %d calibration queries, want none", change.name, got)
		}
		if got := fits.Load() - fitsBefore; got != 0 {
			t.Errorf("%s: the builtin was fitted again", change.name)
		}
	}
	// The edited skill ranks by its new text.
	if d := route(builtin, router.StrategyHybrid, "regular expressions for ISO dates"); len(d.Selected) == 0 || d.Selected[0] != "skill-03" {
		t.Errorf("after the edit: %v", d.Selected)
	}
}

// TestReloadRefitsWhenTheLibraryDrifts: past a tenth of the library
// changed since the fit, the builtin is fitted again.
func TestReloadRefitsWhenTheLibraryDrifts(t *testing.T) {
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	var fits atomic.Int64
	b := embed.NewBuiltin(embed.Config{})
	r := newRouter(t, snap, router.Options{Embedder: b, Fit: func(c []string) router.Embedder { fits.Add(1); return b.Fit(c) }})
	for i := 0; i < 4; i++ { // 4 of 30 > 10%
		writeSkill(t, dir, fmt.Sprintf("skill-%02d", i), "Rewritten: helps with something else entirely, number "+fmt.Sprint(i))
		if err := r.Update(context.Background(), skills.Load(context.Background(), []string{dir}, skills.Options{})); err != nil {
			t.Fatal(err)
		}
	}
	if n := fits.Load(); n != 2 {
		t.Errorf("fitted %d times, want 2 (start, then once the drift passed a tenth)", n)
	}
}

// TestDeletedSkillIsNeverRouted: once the router is handed a snapshot
// without a skill, that skill is neither ranked nor selected, even while
// the new indexes are still building.
func TestDeletedSkillIsNeverRouted(t *testing.T) {
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	emb := &remoteCounter{Builtin: fittedBuiltin(t, snap)}
	r := newRouter(t, snap, router.Options{Embedder: emb, EmbedTimeout: -1})
	const q = "my postgres query plans are slow"
	if d := route(r, router.StrategyHybrid, q); !slices.Contains(d.Selected, "skill-00") {
		t.Fatalf("before: %v", d.Selected)
	}
	hold := make(chan struct{})
	emb.hold.Store(&hold)
	os.RemoveAll(filepath.Join(dir, "skill-00"))
	writeSkill(t, dir, "skill-99", "Helps with something new.") // the build must embed: it blocks
	r.Follow(skills.Load(context.Background(), []string{dir}, skills.Options{}))
	d := route(r, router.StrategyHybrid, q)
	for _, s := range d.Ranked {
		if s.ID == "skill-00" {
			t.Fatalf("deleted skill ranked while the build runs: %v", d.Ranked)
		}
	}
	if slices.Contains(d.Selected, "skill-00") {
		t.Fatalf("deleted skill selected: %v", d.Selected)
	}
	for _, s := range r.Search(context.Background(), "postgres query plans", 0) {
		if s.ID == "skill-00" {
			t.Fatal("deleted skill found by search_skills")
		}
	}
	if _, ok := r.Snapshot().Get("skill-00"); ok {
		t.Fatal("Snapshot is not the newest library")
	}
	close(hold)
	if err := r.Synced(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestOvertakenBuildIsCancelled: a change that arrives while a build runs
// cancels it (its result is never installed) and the newest library is
// built; Update callers of the older snapshot return once the newer is in.
func TestOvertakenBuildIsCancelled(t *testing.T) {
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	emb := &remoteCounter{Builtin: fittedBuiltin(t, snap)}
	r := newRouter(t, snap, router.Options{Embedder: emb})
	hold := make(chan struct{})
	emb.hold.Store(&hold)
	writeSkill(t, dir, "skill-first", "Helps with the first change.")
	first := skills.Load(context.Background(), []string{dir}, skills.Options{})
	var wg sync.WaitGroup
	wg.Add(1)
	var firstErr error
	calls := emb.docCalls.Load()
	go func() { defer wg.Done(); firstErr = r.Update(context.Background(), first) }()
	for emb.docCalls.Load() == calls { // the first build is embedding
		runtimeGosched()
	}
	emb.hold.Store(nil)
	writeSkill(t, dir, "skill-second", "Helps with the second change.")
	second := skills.Load(context.Background(), []string{dir}, skills.Options{})
	if err := r.Update(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(hold)
	if firstErr != nil {
		t.Fatalf("the overtaken Update: %v", firstErr)
	}
	if emb.cancelled.Load() != 1 {
		t.Errorf("the overtaken build was not cancelled")
	}
	if r.Snapshot() != second {
		t.Error("not the newest snapshot")
	}
	d := route(r, router.StrategyHybrid, "the second change")
	if len(d.Ranked) != len(topics)+2 || !strings.HasPrefix(d.Ranked[0].ID, "skill-second") {
		t.Errorf("ranking after both changes: %v", d.Ranked[:2])
	}
}

func runtimeGosched() { runtime.Gosched() }

// TestPromptSameAfterReloadAsFresh: the same library and request give the
// same prompt whether the router started on that library or reached it by a
// small edit. The edit's build keeps the old fit and calibration (below
// refreshDrift), so until the router settles the index its scores depend
// on the edit history; once the library has been quiet for SettleAfter it
// is built again as a fresh start would, and ranks and rewrites bit for
// bit as one. For a remote embedder (no fit) the calibration drifts too.
func TestPromptSameAfterReloadAsFresh(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(*skills.Snapshot) router.Options
	}{
		{"builtin", func(*skills.Snapshot) router.Options { return builtinOptions() }},
		{"remote", func(s *skills.Snapshot) router.Options {
			return router.Options{Embedder: &remoteCounter{Builtin: fittedBuiltin(t, s)}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			snap := writeLibrary(t, dir)
			opts := tc.opts(snap)
			opts.SettleAfter = time.Millisecond
			reloaded := newRouter(t, snap, opts)
			writeSkill(t, dir, "skill-03", "Helps with regular expressions for ISO dates and times.")
			next := skills.Load(context.Background(), []string{dir}, skills.Options{})
			if err := reloaded.Update(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			settled(t, reloaded)
			opts.SettleAfter = -1 // a fresh start needs no settling
			assertRanksAsFresh(t, reloaded, newRouter(t, next, opts))
		})
	}
}

// settled waits until r's index is settled.
func settled(t *testing.T, r *router.Router) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Settled(ctx); err != nil {
		t.Fatal(err)
	}
}

// assertRanksAsFresh checks that got ranks, selects and rewrites exactly
// as fresh, a router started on the same library: every score bit, and
// the prompt's every byte.
func assertRanksAsFresh(t *testing.T, got, fresh *router.Router) {
	t.Helper()
	for _, msg := range []string{"regular expressions for ISO dates", "my kafka consumer lags behind", "flaky unit tests in CI"} {
		for _, s := range router.Strategies {
			a, b := route(got, s, msg), route(fresh, s, msg)
			if !reflect.DeepEqual(a.Ranked, b.Ranked) || !slices.Equal(a.Selected, b.Selected) {
				t.Errorf("%s %q: ranked %v selected %v, a fresh start %v %v", s, msg, a.Ranked[:3], a.Selected, b.Ranked[:3], b.Selected)
			}
		}
		body := []byte(`{"model":"m","messages":[{"role":"user","content":` + strconv.Quote(msg) + `}]}`)
		if a, b := rewriteChat(t, got, body), rewriteChat(t, fresh, body); !bytes.Equal(a, b) {
			i := 0
			for i < min(len(a), len(b)) && a[i] == b[i] {
				i++
			}
			t.Errorf("%q: the prompt differs from a fresh start's at byte %d: %q, fresh %q", msg, i, a[i:min(len(a), i+80)], b[i:min(len(b), i+80)])
		}
	}
}

// rewriteChat rewrites a Chat Completions body as the proxy does.
func rewriteChat(t *testing.T, r *router.Router, body []byte) []byte {
	t.Helper()
	req, err := chat.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := r.Rewrite(context.Background(), req.View(), router.RewriteOptions{}, router.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := req.Render(rw.Plan)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
