package router_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// TestAnchorMemoNotStaleAfterReload: a conversation whose first turn is
// planned while a reload's indexes are still building (Snapshot() already
// returns the new library, ranking still uses the old index) must, once the
// new index is in place, get the catalog shortlist a router built on the
// new library gives it. The conversation memo is keyed by the new
// snapshot's library view, so it keeps the old index's shortlist for the
// conversation's whole life: a skill added by the reload is never listed.
func TestAnchorMemoNotStaleAfterReload(t *testing.T) {
	dir := t.TempDir()
	snap := writeLibrary(t, dir)
	ctx := context.Background()
	remote := &remoteCounter{Builtin: fittedBuiltin(t, snap)}
	r := newRouter(t, snap, router.Options{Embedder: remote})
	opts := router.RewriteOptions{CatalogBudgetTokens: 250}

	writeSkill(t, dir, "skill-new", "Helps with graphql schema design. Use when the user asks about graphql schema design.")
	next := skills.Load(ctx, []string{dir}, skills.Options{})

	hold := make(chan struct{})
	remote.hold.Store(&hold)
	calls := remote.docCalls.Load()
	r.Follow(next)
	deadline := time.Now().Add(10 * time.Second)
	for remote.docCalls.Load() == calls {
		if time.Now().After(deadline) {
			t.Fatal("the rebuild never embedded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	first := []router.Message{{Role: "system", Text: "s"}, {Role: "user", Text: "design a graphql schema for our graphql api"}}
	during, err := r.Prompt(ctx, router.Query{Messages: first}, opts)
	if err != nil {
		t.Fatal(err)
	}
	remote.hold.Store(nil)
	close(hold)
	if err := r.Synced(ctx); err != nil {
		t.Fatal(err)
	}

	later := append(slices.Clone(first),
		router.Message{Role: "assistant", Text: "ok"},
		router.Message{Role: "user", Text: "and the resolvers too"})
	got, err := r.Prompt(ctx, router.Query{Messages: later}, opts)
	if err != nil {
		t.Fatal(err)
	}
	fresh := newRouter(t, next, router.Options{Embedder: &remoteCounter{Builtin: remote.Builtin}})
	want, err := fresh.Prompt(ctx, router.Query{Messages: later}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(want.CatalogShown, "skill-new") {
		t.Fatalf("test premise: a fresh router does not list skill-new: %v", want.CatalogShown)
	}
	if !slices.Equal(got.CatalogShown, want.CatalogShown) {
		t.Errorf("after the reload the conversation's catalog lists %v (during the build: %v); a router built on the new library lists %v",
			got.CatalogShown, during.CatalogShown, want.CatalogShown)
	}
}
