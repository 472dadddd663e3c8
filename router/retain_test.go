package router_test

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// TestEditFreesOldLibrary: once an edit's index is in place and settled,
// nothing keeps the previous snapshot or its skills alive, although a
// conversation was planned on them (its shortlist is memoised per library)
// and the text was packed, as `router serve` does.
func TestEditFreesOldLibrary(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	opts := builtinOptions()
	opts.SettleAfter = time.Millisecond
	opts.WarmDir = t.TempDir()
	r := newRouter(t, snap, opts)
	plan := func() {
		t.Helper()
		msgs := []router.Message{{Role: "system", Text: "s"}, {Role: "user", Text: "regular expressions for dates"}}
		p, err := r.Prompt(ctx, router.Query{Messages: msgs}, router.RewriteOptions{CatalogBudgetTokens: 250})
		if err != nil {
			t.Fatal(err)
		}
		if p.CatalogHidden == 0 {
			t.Fatal("the catalog was not cut down: no conversation ranking was kept")
		}
	}
	plan()
	snap.Pack(ctx)
	oldSnap, oldSkill := weak.Make(snap), weak.Make(snap.Skills()[0])
	snap = nil
	writeSkill(t, dir, "skill-03", "Helps with regular expressions for ISO dates and times.")
	next := skills.Load(ctx, []string{dir}, skills.Options{})
	r.Follow(next)
	if err := r.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	next.Pack(ctx)
	settled(t, r)
	plan()
	// Freeing takes two collections with the library cache's cleanup
	// between them; a loaded machine may need more.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		if oldSnap.Value() == nil && oldSkill.Value() == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if oldSnap.Value() != nil {
		t.Error("the previous snapshot is still reachable")
	}
	if oldSkill.Value() != nil {
		t.Error("a skill of the previous snapshot is still reachable")
	}
}
