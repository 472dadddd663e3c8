package router

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// unicodeLibrary writes skills whose names have lowercase non-ASCII letters
// and digits (the spec allows them; they load with a portability warning).
func unicodeLibrary(t testing.TB) *skills.Snapshot {
	t.Helper()
	root := t.TempDir()
	for id, desc := range map[string]string{
		"l10n/café":  "Bakes French pastries and brews espresso. Use when asked about croissants or coffee.",
		"日本語":        "日本語 の文章を校正する。Use when proofreading Japanese text.",
		"ru/навык-2": "Помогает с отчётами. Use when writing quarterly reports in Russian.",
		"pdf-tools":  "Extract tables from PDF files and merge PDF documents.",
	} {
		dir := filepath.Join(root, filepath.FromSlash(id))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := "---\nname: " + filepath.Base(dir) + "\ndescription: " + desc + "\n---\n# " + id + "\n\nSteps.\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := skills.Load(context.Background(), []string{root}, skills.Options{})
	if n := len(snap.Skills()); n != 4 {
		t.Fatalf("%d skills loaded, want 4: %v", n, snap.Problems())
	}
	return snap
}

// TestUnicodeSkillIDs: a skill id with non-ASCII letters is in the catalog
// and load_skill's enum, loads by id (composed or not), is found by
// search_skills and is force-loaded by a #mention.
func TestUnicodeSkillIDs(t *testing.T) {
	r := newTestRouter(t, unicodeLibrary(t))
	ctx := context.Background()
	rw, err := rewriteChat(ctx, r, chat(t, "user", "#café what should I order with a croissant?"), RewriteOptions{}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rw.Decision.Selected) == 0 || rw.Decision.Selected[0] != "l10n/café" {
		t.Fatalf("#café must force-load l10n/café: %+v", rw.Decision)
	}
	for _, id := range []string{"l10n/café", "日本語", "ru/навык-2"} {
		if !strings.Contains(rw.Prompt.Catalog, id) {
			t.Errorf("catalog lacks %s:\n%s", id, rw.Prompt.Catalog)
		}
	}
	var body struct {
		Tools []struct {
			Function struct {
				Name       string `json:"name"`
				Parameters struct {
					Properties map[string]struct {
						Enum []string `json:"enum"`
					} `json:"properties"`
				} `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(rw.Body, &body); err != nil {
		t.Fatal(err)
	}
	var enum []string
	for _, tl := range body.Tools {
		if tl.Function.Name == ToolLoadSkill {
			enum = tl.Function.Parameters.Properties["skill_id"].Enum
		}
	}
	if !slices.Contains(enum, "日本語") || !slices.Contains(enum, "l10n/café") || !slices.Contains(enum, "ru/навык-2") {
		t.Errorf("load_skill enum %q", enum)
	}
	calls := []struct{ name, args, want string }{
		{ToolLoadSkill, `{"skill_id":"日本語"}`, `<skill_context id="日本語">`},
		{ToolLoadSkill, `{"skill_id":"навык-2"}`, `<skill_context id="ru/навык-2">`},
		{ToolLoadSkill, `{"skill_id":"l10n/cafe\u0301"}`, `already_active`}, // decomposed: the same skill
	}
	for _, c := range calls {
		if got := rw.Session.Call(ctx, "1", c.name, json.RawMessage(c.args)).Content; !strings.Contains(got, c.want) {
			t.Errorf("%s %s: want %q in\n%s", c.name, c.args, c.want, got)
		}
	}
	// search_skills is offered when the catalog leaves skills out.
	small, err := rewriteChat(ctx, r, chat(t, "user", "hi"), RewriteOptions{CatalogBudgetTokens: 1}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{"café": `l10n/café`, "日本語": `"日本語"`, "навык": `ru/навык-2`} {
		args, _ := json.Marshal(map[string]string{"query": q})
		if got := small.Session.Call(ctx, "2", ToolSearchSkills, args).Content; !strings.Contains(got, want) {
			t.Errorf("search_skills %s: want %s in\n%s", q, want, got)
		}
	}
	d := r.Route(ctx, Query{Messages: []Message{{Role: "user", Text: "これは#日本語を校正して"}}, Strategy: StrategyBM25})
	if len(d.Selected) == 0 || d.Selected[0] != "日本語" {
		t.Errorf("CJK mention: %+v", d)
	}
}
