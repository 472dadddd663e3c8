package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// TestPackTextFollowsSwaps: the library's text is packed once the router
// has indexed it, and again after a reload swaps in new skills.
func TestPackTextFollowsSwaps(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		text := "---\nname: " + name + "\ndescription: Skill " + name + " for testing.\n---\n" + strings.Repeat(body+" ", 80)
		writeSkillFile(t, filepath.Join(dir, name, "SKILL.md"), text)
	}
	write("alpha", "Review the migration plan.")
	write("beta", "Resize the images in the folder.")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg, r, err := buildRouter(ctx, []string{dir}, skills.Options{}, embed.Config{}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	packText(ctx, slog.New(slog.DiscardHandler), reg, r)
	waitPacked(t, reg.Snapshot())
	write("gamma", "Draft the release notes.")
	snap := reg.Reload(ctx)
	if len(snap.Skills()) != 3 {
		t.Fatalf("%d skills after the reload", len(snap.Skills()))
	}
	waitPacked(t, snap)
	if s, _ := snap.Get("gamma"); !strings.Contains(s.Body(), "release notes") {
		t.Errorf("packed body %q", s.Body())
	}
	if s, _ := snap.Get("alpha"); !strings.Contains(s.Body(), "migration plan") {
		t.Errorf("packed body taken from the earlier snapshot %q", s.Body())
	}
}

func waitPacked(t *testing.T, snap *skills.Snapshot) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		packed := 0
		for _, s := range snap.Skills() {
			if s.Packed() {
				packed++
			}
		}
		if packed == len(snap.Skills()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d skills packed", packed, len(snap.Skills()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
