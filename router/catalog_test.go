package router

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
	"github.com/skillrouter/skillrouter/wire"
)

func norm(t testing.TB, o RewriteOptions) *RewriteOptions {
	t.Helper()
	n, err := o.normalized()
	if err != nil {
		t.Fatal(err)
	}
	return &n
}

func fixed(ids ...string) rankingFunc { return func(bool) []string { return ids } }

var footerRE = regexp.MustCompile(`(?m)^(\d+) more skills? (?:are|is) not listed here`)

// checkCatalog asserts the invariants every catalog must keep.
func checkCatalog(t *testing.T, name string, l *skillLib, o *RewriteOptions, c catalogResult) {
	t.Helper()
	if got := tokens.Default().Count(c.text); got != c.tokens {
		t.Fatalf("%s: reported %d tokens, tokenizer counts %d", name, c.tokens, got)
	}
	if o.CatalogMode != CatalogAll && c.tokens > o.CatalogBudgetTokens {
		t.Fatalf("%s: %d tokens over the budget of %d", name, c.tokens, o.CatalogBudgetTokens)
	}
	if c.text == "" {
		if len(c.shown) != 0 {
			t.Fatalf("%s: no text but %d shown", name, len(c.shown))
		}
	} else {
		for _, id := range c.shown {
			if !strings.Contains(c.text, id) {
				t.Fatalf("%s: shown %s missing from the text", name, id)
			}
		}
	}
	if len(c.shown)+c.hidden != len(l.eligible) {
		t.Fatalf("%s: %d shown + %d hidden != %d eligible", name, len(c.shown), c.hidden, len(l.eligible))
	}
	m := footerRE.FindStringSubmatch(c.text)
	switch {
	case c.text == "":
	case c.hidden == 0 && m != nil:
		t.Fatalf("%s: footer %q but nothing hidden", name, m[0])
	case c.hidden > 0 && m == nil:
		t.Fatalf("%s: %d hidden but no footer:\n%s", name, c.hidden, c.text)
	case c.hidden > 0:
		if n, _ := strconv.Atoi(m[1]); n != c.hidden {
			t.Fatalf("%s: footer says %d hidden, %d are", name, n, c.hidden)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(c.shown)))) != len(c.shown) {
		t.Fatalf("%s: duplicate entries: %v", name, c.shown)
	}
}

func TestCatalogAllMode(t *testing.T) {
	l := libraryOf(fixture(t))
	o := norm(t, RewriteOptions{CatalogMode: CatalogAll, CatalogBudgetTokens: 10})
	c := l.planCatalog(o, nil, fixed("sql-review", "pdf-tools"), true, true)
	checkCatalog(t, "all", l, o, c)
	if !slices.IsSorted(c.shown) || len(c.shown) != 10 || slices.Contains(c.shown, "legacy-fax") {
		t.Fatalf("all mode: shown %v, want the 10 enabled skills sorted by id", c.shown)
	}
	if want := skills.RenderCatalog(l.eligible, skills.CatalogOptions{}); c.text != want {
		t.Fatalf("all mode text differs from RenderCatalog:\n%s", c.text)
	}
}

func TestCatalogAutoFitsWhole(t *testing.T) {
	l := libraryOf(fixture(t))
	o := norm(t, RewriteOptions{})
	c := l.planCatalog(o, nil, fixed("sql-review", "pdf-tools"), true, true)
	checkCatalog(t, "auto", l, o, c)
	if !slices.Equal(c.shown, skillIDs(l.eligible)) || c.truncated {
		t.Fatalf("auto mode with room: shown %v truncated=%v, want every skill by id, untruncated", c.shown, c.truncated)
	}
}

func TestCatalogTruncatesBeforeDropping(t *testing.T) {
	l := libraryOf(fixture(t))
	full := l.planCatalog(norm(t, RewriteOptions{CatalogMode: CatalogAll}), nil, fixed(), true, true)
	// A budget just under the full catalog: truncating data-pipeline's long
	// description is enough, so nothing is dropped.
	o := norm(t, RewriteOptions{CatalogBudgetTokens: full.tokens - 5})
	c := l.planCatalog(o, nil, fixed("sql-review"), true, true)
	checkCatalog(t, "truncated", l, o, c)
	if !c.truncated || c.hidden != 0 || !slices.IsSorted(c.shown) {
		t.Fatalf("want all skills with truncated descriptions, got truncated=%v hidden=%d shown=%v", c.truncated, c.hidden, c.shown)
	}
	if !strings.Contains(c.text, "…</description>") {
		t.Fatalf("no truncated description in:\n%s", c.text)
	}
}

func TestCatalogAutoShortlist(t *testing.T) {
	l := libraryOf(fixture(t))
	o := norm(t, RewriteOptions{CatalogBudgetTokens: 330})
	c := l.planCatalog(o, []string{"docker-deploy"}, fixed("sql-review", "legacy-fax", "nope", "pdf-tools", "csv-analysis"), true, true)
	checkCatalog(t, "shortlist", l, o, c)
	if len(c.shown) < 3 || !slices.Equal(c.shown[:3], []string{"docker-deploy", "sql-review", "pdf-tools"}) {
		t.Fatalf("shortlist order %v: want pinned, then ranked (disabled and unknown ids skipped)", c.shown)
	}
	if c.hidden == 0 || !strings.Contains(c.text, "search_skills") || !strings.Contains(c.text, "<prioritized_skills>docker-deploy</prioritized_skills>") {
		t.Fatalf("want footer naming search_skills and a priority line:\n%s", c.text)
	}
	noSearch := l.planCatalog(o, nil, fixed("sql-review"), false, true)
	checkCatalog(t, "shortlist without search", l, o, noSearch)
	if strings.Contains(noSearch.text, "search_skills") {
		t.Fatalf("footer names search_skills although it is not offered:\n%s", noSearch.text)
	}
	// Same ranking, same text (prompt caches); different ranking, different order.
	again := l.planCatalog(o, []string{"docker-deploy"}, fixed("sql-review", "legacy-fax", "nope", "pdf-tools", "csv-analysis"), true, true)
	if again.text != c.text {
		t.Fatal("same library and ranking rendered different catalogs")
	}
}

func TestCatalogEnabledMode(t *testing.T) {
	l := libraryOf(fixture(t))
	o := norm(t, RewriteOptions{CatalogMode: CatalogEnabled, Allowlist: []string{"sql-review", "legacy-fax"}})
	c := l.planCatalog(o, nil, fixed("pdf-tools"), true, true)
	checkCatalog(t, "enabled", l, o, c)
	if want := []string{"api-design", "brand-voice", "sql-review"}; !slices.Equal(c.shown, want) {
		t.Fatalf("enabled mode shows %v, want %v (opted in + allowlisted, never disabled)", c.shown, want)
	}
	if c.hidden != 7 {
		t.Fatalf("hidden = %d, want 7", c.hidden)
	}
	for _, opted := range []string{"pdf-tools", "csv-analysis", "legacy-fax"} {
		if strings.Contains(c.text, "<id>"+opted+"</id>") {
			t.Fatalf("enabled mode shows opt-out skill %s", opted)
		}
	}
}

func TestCatalogEmptyLibrary(t *testing.T) {
	l := newLibrary(nil)
	c := l.planCatalog(norm(t, RewriteOptions{}), nil, fixed(), true, true)
	if c.text != "" || c.hidden != 0 {
		t.Fatalf("empty library: %+v", c)
	}
}

// TestCatalogBudgetNeverExceeded sweeps budgets, modes, formats and
// priorities over the fixture.
func TestCatalogBudgetNeverExceeded(t *testing.T) {
	l := libraryOf(fixture(t))
	rank := fixed("data-pipeline", "pdf-tools", "team/release-notes", "csv-analysis", "image-resize")
	for _, f := range skills.Formats {
		for _, mode := range []CatalogMode{CatalogAuto, CatalogEnabled} {
			for _, prio := range [][]string{nil, {"docker-deploy", "git-commit-messages"}} {
				for budget := 1; budget <= 900; budget += 7 {
					o := norm(t, RewriteOptions{CatalogFormat: f, CatalogMode: mode, CatalogBudgetTokens: budget, DescriptionLimit: 60})
					c := l.planCatalog(o, prio, rank, true, true)
					checkCatalog(t, fmt.Sprintf("%s/%s/%v/%d", f, mode, prio, budget), l, o, c)
				}
			}
		}
	}
}

func TestCatalogBudgetPathological(t *testing.T) {
	tests := []struct {
		name string
		desc func(i int) string
	}{
		{"one long word", func(i int) string { return strings.Repeat(string(rune('a'+i%26)), 1000) }},
		{"escapes", func(i int) string { return strings.Repeat("<&> ", 250) }},
		{"cjk", func(i int) string { return strings.Repeat("数据处理报告生成", 40) }},
		{"long words", func(i int) string { return wordsDesc(i, 150) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := libraryOf(synthLibrary(t, 60, tt.desc))
			var rank []string
			for i := 59; i >= 0; i -= 3 {
				rank = append(rank, fmt.Sprintf("skill-%05d", i))
			}
			for _, budget := range []int{1, 50, 120, 300, 1500, 4000} {
				for _, limit := range []int{0, 30, 1024} {
					o := norm(t, RewriteOptions{CatalogBudgetTokens: budget, DescriptionLimit: limit})
					checkCatalog(t, fmt.Sprintf("budget %d limit %d", budget, limit), l, o, l.planCatalog(o, nil, fixed(rank...), true, true))
				}
			}
		})
	}
}

func TestCatalogHugeLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 3,000 skills")
	}
	snap := synthLibrary(t, 3000, func(i int) string { return wordsDesc(i, 20+i%60) })
	l := libraryOf(snap)
	var rank []string
	for i := range 600 {
		rank = append(rank, fmt.Sprintf("skill-%05d", (i*7919)%3000))
	}
	for _, budget := range []int{200, 1500, 6000} {
		o := norm(t, RewriteOptions{CatalogBudgetTokens: budget})
		c := l.planCatalog(o, nil, fixed(rank...), true, true)
		checkCatalog(t, fmt.Sprintf("3000 skills, budget %d", budget), l, o, c)
		if budget >= 1500 && c.tokens < budget*9/10 {
			t.Errorf("budget %d: only %d tokens used; the shortlist should fill the budget", budget, c.tokens)
		}
		if !slices.Equal(c.shown, rank[:len(c.shown)]) {
			t.Errorf("budget %d: shortlist does not follow the ranking", budget)
		}
	}
}

// TestRenderCatalogAssembled: catalogs assembled from cached entries are
// byte-identical to skills.RenderCatalog, and so are their JSON strings to
// quoting the whole catalog (escapes included: the fixture's descriptions
// carry quotes, <, & and non-ASCII).
func TestRenderCatalogAssembled(t *testing.T) {
	l := libraryOf(fixture(t))
	lists := [][]*skills.Skill{nil, l.skills[:1], l.skills, {l.skills[3], l.skills[0], l.skills[7]}}
	for _, f := range skills.Formats {
		for _, list := range lists {
			for _, opts := range []skills.CatalogOptions{
				{Format: f},
				{Format: f, MaxDescription: 40, Priority: []string{"a", "b"}, Footer: catalogFooter(4, true)},
			} {
				got, quoted := l.renderCatalog(list, opts)
				if want := skills.RenderCatalog(list, opts); got != want {
					t.Fatalf("%s, %d skills: assembled catalog differs:\n%s\n---\n%s", f, len(list), got, want)
				}
				if quoted == nil {
					t.Fatalf("%s, %d skills: no assembled JSON string", f, len(list))
				}
				if want := wire.Quote(got); !bytes.Equal(quoted, want) {
					t.Fatalf("%s, %d skills: assembled JSON string differs:\n%s\n---\n%s", f, len(list), quoted, want)
				}
				if l.entry(l.skills[0], opts.Format, opts.MaxDescription).text == "" {
					t.Fatalf("%s: entries do not split out of the catalog; assembly falls back to rendering", f)
				}
			}
		}
	}
}

// TestLibraryCacheIsWeak: a snapshot's cached view is shared while the
// snapshot lives and dropped once it is collected (reloads must not leak).
func TestLibraryCacheIsWeak(t *testing.T) {
	count := func() int {
		skillLibs.Lock()
		defer skillLibs.Unlock()
		return len(skillLibs.m)
	}
	snap := skills.Load(context.Background(), []string{fixtureRoot}, skills.Options{})
	if libraryOf(snap) != libraryOf(snap) || libraryOf(snap) == libraryOf(fixture(t)) {
		t.Fatal("one view per snapshot")
	}
	before := count()
	snap = nil
	deadline := time.Now().Add(5 * time.Second)
	for count() >= before {
		if time.Now().After(deadline) {
			t.Fatalf("cached view not released after the snapshot was collected (%d entries)", count())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRenderCatalogQuotedEscapes: the assembled JSON string equals quoting
// the whole catalog when descriptions need escapes of every kind.
func TestRenderCatalogQuotedEscapes(t *testing.T) {
	dir := t.TempDir()
	descs := []string{
		`"Escape \"quotes\", <tags> & ampersands, back\\slash"`,
		`"naïve café 日本語 \u2028 line separator, emoji 🚀"`,
		`"tab\there, a control \u0001 char"`,
	}
	for i, d := range descs {
		p := filepath.Join(dir, fmt.Sprintf("s%d", i))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		md := fmt.Sprintf("---\nname: s%d\ndescription: %s\n---\nBody.\n", i, d)
		if err := os.WriteFile(filepath.Join(p, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := skills.Load(context.Background(), []string{dir}, skills.Options{})
	l := libraryOf(snap)
	if len(l.skills) != len(descs) {
		t.Fatalf("%d skills loaded: %v", len(l.skills), snap.Problems())
	}
	for _, f := range skills.Formats {
		opts := skills.CatalogOptions{Format: f, Footer: catalogFooter(2, true)}
		got, quoted := l.renderCatalog(l.skills, opts)
		if want := wire.Quote(got); !bytes.Equal(quoted, want) {
			t.Fatalf("%s: assembled JSON string differs:\n%s\n---\n%s", f, quoted, want)
		}
	}
}

// entry is entryAt for a skill of l.
func (l *skillLib) entry(s *skills.Skill, format skills.Format, maxDesc int) catalogEntry {
	return l.entryAt(l.entryTable(format, maxDesc), l.at[s.ID])
}

// renderCatalog is renderCatalogAt for skills of l.
func (l *skillLib) renderCatalog(list []*skills.Skill, opts skills.CatalogOptions) (string, []byte) {
	at := make([]int32, len(list))
	for i, s := range list {
		at[i] = l.at[s.ID]
	}
	return l.renderCatalogAt(at, opts)
}

// TestEntryTablesBounded: past maxEntryTables description limits, entries
// are rendered afresh, the same as a kept table's.
func TestEntryTablesBounded(t *testing.T) {
	l := libraryOf(fixture(t))
	for maxDesc := 10; maxDesc < 10+2*maxEntryTables; maxDesc++ {
		for i := range l.skills {
			got := l.entryAt(l.entryTable(skills.FormatAgentSkills, maxDesc), int32(i))
			want := renderEntry(l.skills[i], skills.FormatAgentSkills, maxDesc)
			if got.text != want.text || got.cost != want.cost || !bytes.Equal(got.json, want.json) {
				t.Fatalf("limit %d, skill %d: %+v, want %+v", maxDesc, i, got, want)
			}
		}
	}
	if n := len(*l.tables.Load()); n != maxEntryTables {
		t.Fatalf("%d tables kept, want %d", n, maxEntryTables)
	}
}

// TestShortlistMemo: a shortlist kept for a repeated ranking is the one
// computed afresh, whatever was asked in between, and rankings, pins,
// budgets and the search tool each give their own.
func TestShortlistMemo(t *testing.T) {
	l := libraryOf(synthLibrary(t, 120, func(i int) string { return wordsDesc(i, 10+i%30) }))
	rankOf := func(seed int) []string {
		var r []string
		for i := range 50 {
			r = append(r, fmt.Sprintf("skill-%05d", (i*seed+seed)%120))
		}
		return r
	}
	type ask struct {
		seed, budget int
		pinned       []string
		search       bool
	}
	var asks []ask
	for _, seed := range []int{7, 11, 13} {
		for _, budget := range []int{300, 1500} {
			asks = append(asks, ask{seed, budget, nil, true}, ask{seed, budget, nil, false}, ask{seed, budget, []string{"skill-00003"}, true})
		}
	}
	plan := func(a ask) catalogResult {
		o := norm(t, RewriteOptions{CatalogBudgetTokens: a.budget})
		return l.planCatalog(o, a.pinned, fixed(rankOf(a.seed)...), a.search, true)
	}
	fresh := make([]catalogResult, len(asks))
	for i, a := range asks {
		l.shortlists.m.Clear()
		fresh[i] = plan(a)
	}
	kept := 0
	for range 2 {
		for i := len(asks) - 1; i >= 0; i-- {
			if got := plan(asks[i]); !reflect.DeepEqual(got, fresh[i]) {
				t.Fatalf("%+v: the memo gave %q, afresh %q", asks[i], got.text, fresh[i].text)
			}
		}
	}
	l.shortlists.m.Range(func(any, any) bool { kept++; return true })
	if kept == 0 {
		t.Fatal("no shortlist was kept")
	}
	// A ranking that did not repeat is not kept.
	l.shortlists.m.Clear()
	o := norm(t, RewriteOptions{CatalogBudgetTokens: 300})
	if c := l.planCatalog(o, nil, fixed(rankOf(17)...), true, false); c.text == "" {
		t.Fatal("no catalog")
	}
	l.shortlists.m.Range(func(any, any) bool { t.Fatal("a shortlist asked not to be kept was kept"); return false })
	for i := range asks {
		for j := range i {
			if asks[i].seed != asks[j].seed && fresh[i].text == fresh[j].text {
				t.Errorf("%+v and %+v: different rankings, one catalog", asks[i], asks[j])
			}
		}
	}
}
