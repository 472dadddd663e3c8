package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// remoteFake stands in for a remote embedder: it counts every call, and
// like Ollama or OpenAI without configured dimensions it knows its
// dimension only after it has answered once.
type remoteFake struct {
	b        *embed.Builtin
	model    string
	queries  atomic.Int64 // Embed calls
	docs     atomic.Int64 // EmbedDocuments calls
	answered atomic.Bool
}

func (f *remoteFake) Name() string  { return "fake" }
func (f *remoteFake) Model() string { return f.model }
func (f *remoteFake) Dimensions() int {
	if f.answered.Load() {
		return f.b.Dimensions()
	}
	return 0
}

func (f *remoteFake) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.queries.Add(1)
	f.answered.Store(true)
	return f.b.Embed(ctx, texts)
}

func (f *remoteFake) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	f.docs.Add(1)
	f.answered.Store(true)
	return f.b.Embed(ctx, texts)
}

func (f *remoteFake) calls() int64 { return f.queries.Load() + f.docs.Load() }

// dirState lists a folder's files with their sizes and times, to show a
// prebuilt index is never written.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		fmt.Fprintln(&b, p, info.ModTime(), info.Size())
		return nil
	})
	return b.String()
}

func ranking(d *router.Decision) []string {
	var out []string
	for _, s := range d.Ranked {
		out = append(out, s.ID)
	}
	return out
}

// copyLibrary copies the ranking fixture, so a test can change it.
func copyLibrary(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lib")
	if err := os.CopyFS(dir, os.DirFS(rankingFixture)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func load(t *testing.T, dir string) *skills.Snapshot {
	t.Helper()
	snap := skills.Load(context.Background(), []string{dir}, skills.Options{})
	if len(snap.Skills()) == 0 {
		t.Fatalf("no skills in %s: %v", dir, snap.Problems())
	}
	return snap
}

// TestPrebuiltRemoteEmbedder: a router started from a prebuilt index of
// its library makes no embedding call at all (documents or calibration),
// ranks exactly as the router that built it, and writes nothing there.
func TestPrebuiltRemoteEmbedder(t *testing.T) {
	snap := rankingLibrary(t)
	base := fittedBuiltin(t, snap)
	dir := t.TempDir()
	builder := &remoteFake{b: base, model: "m1"}
	r1 := newRouter(t, snap, router.Options{Embedder: builder})
	if err := r1.SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	if builder.calls() == 0 {
		t.Fatal("the builder embedded nothing")
	}
	before := dirState(t, dir)

	var logs bytes.Buffer
	replica := &remoteFake{b: base, model: "m1"}
	r2 := newRouter(t, snap, router.Options{Embedder: replica, Prebuilt: dir, IndexDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if n := replica.calls(); n != 0 {
		t.Fatalf("a replica made %d embedding calls at start, want 0", n)
	}
	if !strings.Contains(logs.String(), "loaded the prebuilt routing index") {
		t.Errorf("no log line for the prebuilt index:\n%s", logs.String())
	}
	for _, q := range []string{"slow sql query", "write a regex for dates", "hello there"} {
		for _, s := range []router.Strategy{router.StrategyHybrid, router.StrategyEmbedding} {
			a, b := route(r1, s, q), route(r2, s, q)
			if b.Fallback || !slices.Equal(ranking(a), ranking(b)) || !slices.Equal(a.Selected, b.Selected) {
				t.Errorf("%s %q: replica ranked %v selected %v (fallback %v %s), builder %v selected %v",
					s, q, ranking(b), b.Selected, b.Fallback, b.FallbackReason, ranking(a), a.Selected)
			}
		}
	}
	if after := dirState(t, dir); after != before {
		t.Errorf("the prebuilt index was written:\nbefore %s\nafter %s", before, after)
	}
}

// TestPrebuiltMismatch: a changed library or another embedder is said in
// the log and built as usual; with a changed library, only the changed
// skill is embedded again.
func TestPrebuiltMismatch(t *testing.T) {
	lib := copyLibrary(t)
	snap := load(t, lib)
	base := fittedBuiltin(t, snap)
	dir := t.TempDir()
	if err := newRouter(t, snap, router.Options{Embedder: &remoteFake{b: base, model: "m1"}}).SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	// Change one skill's body.
	var changed string
	filepath.WalkDir(lib, func(p string, d fs.DirEntry, err error) error {
		if changed == "" && d.Name() == "SKILL.md" {
			changed = p
		}
		return nil
	})
	b, _ := os.ReadFile(changed)
	if err := os.WriteFile(changed, append(b, []byte("\nOne more line of instructions.\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	snap2 := load(t, lib)

	cases := []struct {
		name   string
		snap   *skills.Snapshot
		model  string
		reason string
	}{
		{"library changed", snap2, "m1", "built for another library"},
		{"other model", snap, "m2", "no index for embedder fake/m2 in the folder (prebuilt-fake-"},
		{"other model, named", snap, "m2", "it holds indexes built with fake/m1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			e := &remoteFake{b: base, model: c.model}
			r := newRouter(t, c.snap, router.Options{Embedder: e, Prebuilt: dir,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if !strings.Contains(logs.String(), "does not match") || !strings.Contains(logs.String(), c.reason) {
				t.Errorf("log does not say why:\n%s", logs.String())
			}
			if e.queries.Load() == 0 {
				t.Error("not calibrated again")
			}
			if d := route(r, router.StrategyEmbedding, "slow sql query"); d.Fallback {
				t.Errorf("fallback: %s", d.FallbackReason)
			}
		})
	}
	// Only the changed skill was embedded: one document call of its parts.
	e := &remoteFake{b: base, model: "m1"}
	var calls atomic.Int64
	counting := &partsCounter{remoteFake: e, texts: &calls}
	newRouter(t, snap2, router.Options{Embedder: counting, Prebuilt: dir})
	if n := calls.Load(); n == 0 || n > 2 {
		t.Errorf("%d document texts embedded after one skill changed, want that skill's parts (1-2)", n)
	}
}

type partsCounter struct {
	*remoteFake
	texts *atomic.Int64
}

func (p *partsCounter) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	p.texts.Add(int64(len(texts)))
	return p.remoteFake.EmbedDocuments(ctx, texts)
}

// TestPrebuiltBuiltin: the builtin's fitted state is restored, not fitted
// again, and ranks as the fitted one; a library change fits again.
func TestPrebuiltBuiltin(t *testing.T) {
	lib := copyLibrary(t)
	snap := load(t, lib)
	var fits atomic.Int64
	opts := func() router.Options {
		b := embed.NewBuiltin(embed.Config{})
		return router.Options{
			Embedder: b,
			Fit: func(corpus []string) router.Embedder {
				fits.Add(1)
				return b.Fit(corpus)
			},
			Restore: func(state []byte) (router.Embedder, error) { return embed.RestoreBuiltin(state) },
		}
	}
	dir := t.TempDir()
	r1 := newRouter(t, snap, opts())
	if err := r1.SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range indexFiles(t, dir, "builtin") {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("prebuilt index lacks %s: %v", f, err)
		}
	}
	fits.Store(0)
	o := opts()
	o.Prebuilt = dir
	r2 := newRouter(t, snap, o)
	if n := fits.Load(); n != 0 {
		t.Errorf("fitted %d times with a matching prebuilt index, want 0", n)
	}
	for _, q := range []string{"slow sql query", "regex for ISO dates"} {
		a, b := route(r1, router.StrategyHybrid, q), route(r2, router.StrategyHybrid, q)
		if !slices.Equal(ranking(a), ranking(b)) || a.Ranked[0].Score != b.Ranked[0].Score {
			t.Errorf("%q: restored ranks %v (%v), fitted %v (%v)", q, ranking(b), b.Ranked[0].Score, ranking(a), a.Ranked[0].Score)
		}
	}
	// A reload into a changed library fits again.
	os.MkdirAll(filepath.Join(lib, "new-skill"), 0o755)
	os.WriteFile(filepath.Join(lib, "new-skill", "SKILL.md"), []byte("---\nname: new-skill\ndescription: Brand new. Use when testing reloads.\n---\nBody.\n"), 0o644)
	if err := r2.Update(context.Background(), load(t, lib)); err != nil {
		t.Fatal(err)
	}
	if n := fits.Load(); n != 1 {
		t.Errorf("fitted %d times after the library changed, want 1", n)
	}
}

// indexFiles returns the files of provider's index in dir: its manifest,
// then the state, vectors and lexical files the manifest names.
func indexFiles(t *testing.T, dir, provider string) []string {
	t.Helper()
	// One manifest per provider and model: prebuilt-<provider>-<key>.json.
	found, _ := filepath.Glob(filepath.Join(dir, "prebuilt-"+provider+"-*.json"))
	if len(found) != 1 {
		t.Fatalf("%d manifests of %s in %s, want 1: %v", len(found), provider, dir, found)
	}
	manifest := filepath.Base(found[0])
	b, err := os.ReadFile(found[0])
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ State, Vectors, Lexical string }
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.State == "" || m.Vectors == "" || m.Lexical == "" {
		t.Fatalf("manifest names no state, vectors or lexical file: %s", b)
	}
	return []string{manifest, m.State, m.Vectors, m.Lexical}
}

// TestPrebuiltFilesTiedToManifest: an index saved to a folder that holds
// another one (a warm folder two routers share, a restart after a library
// change) writes its files under names of its own, so a router that read
// the previous manifest still finds that manifest's files, and never a mix;
// the same index saved again keeps its names; files no manifest names are
// removed once they are older than the grace period.
func TestPrebuiltFilesTiedToManifest(t *testing.T) {
	dir := t.TempDir()
	lib1 := t.TempDir()
	for i, d := range []string{"Tune slow SQL queries and indexes.", "Write regular expressions for dates.", "Deploy services to Kubernetes."} {
		writeSkill(t, lib1, fmt.Sprintf("skill-%d", i), d)
	}
	snap1 := skills.Load(context.Background(), []string{lib1}, skills.Options{})
	opts := func() router.Options {
		return router.Options{Embedder: embed.NewBuiltin(embed.Config{}), Fit: func(c []string) router.Embedder { return embed.NewBuiltin(embed.Config{}).Fit(c) }}
	}
	r1 := newRouter(t, snap1, opts())
	if err := r1.SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	first := indexFiles(t, dir, "builtin")
	oldManifest, _ := os.ReadFile(filepath.Join(dir, first[0]))
	if err := r1.SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	if again := indexFiles(t, dir, "builtin"); !slices.Equal(again, first) {
		t.Errorf("the same index saved again changed its files: %v, then %v", first, again)
	}

	// The first index was written long ago: its grace period starts when
	// the next save stops naming its files, not when they were written.
	long := time.Now().Add(-time.Hour)
	for _, f := range first[1:] {
		os.Chtimes(filepath.Join(dir, f), long, long)
	}
	writeSkill(t, lib1, "skill-new", "Design GraphQL schemas.")
	snap2 := skills.Load(context.Background(), []string{lib1}, skills.Options{})
	r2 := newRouter(t, snap2, opts())
	if err := r2.SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	second := indexFiles(t, dir, "builtin")
	for i := 1; i < len(first); i++ {
		if second[i] == first[i] {
			t.Errorf("another library's index reused the file name %s", first[i])
		}
		if _, err := os.Stat(filepath.Join(dir, first[i])); err != nil {
			t.Errorf("the previous manifest's %s is gone within the grace period: %v", first[i], err)
		}
	}
	// A router that read the previous manifest loads that index whole:
	// its library's, with nothing built.
	old := t.TempDir()
	os.WriteFile(filepath.Join(old, first[0]), oldManifest, 0o644)
	for _, f := range first[1:] {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(old, f), b, 0o644)
	}
	var logs bytes.Buffer
	o := opts()
	o.Prebuilt, o.Logger = old, slog.New(slog.NewTextHandler(&logs, nil))
	newRouter(t, snap1, o)
	if !strings.Contains(logs.String(), "loaded the prebuilt routing index") {
		t.Errorf("the previous manifest's index did not load:\n%s", logs.String())
	}

	defer router.SetStaleAfter(0)()
	if err := r2.SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	if names := folderNames(dir); !sameSet(names, second) {
		t.Errorf("after the grace period the folder holds %v, want only %v", names, second)
	}
}

// folderNames lists the files of dir, sorted.
func folderNames(dir string) []string {
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// sameSet reports whether sorted names holds exactly want's names.
func sameSet(names, want []string) bool {
	want = slices.Clone(want)
	slices.Sort(want)
	return slices.Equal(names, want)
}

// TestPrebuiltEarlierFormatFilesRemoved: a folder written before format 3
// (a manifest prebuilt-<provider>.json, files <kind><provider>.bin in
// format 1 and <kind><provider>-<generation>.bin in format 2) is never read
// again; a save of this version removes those files of its own provider
// once they are as old as the grace period, and nothing else: another
// provider's, a file whose name only starts like one, a format-2 file
// written a moment ago (a router of the earlier version saving beside
// this one).
func TestPrebuiltEarlierFormatFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	lib := t.TempDir()
	writeSkill(t, lib, "skill-0", "Tune slow SQL queries and indexes.")
	writeSkill(t, lib, "skill-1", "Write regular expressions for dates.")
	snap := skills.Load(context.Background(), []string{lib}, skills.Options{})
	const gen = "0123456789abcdef"
	files := []struct {
		name  string
		old   bool // written an hour ago
		stays bool
	}{
		{"prebuilt-builtin.json", true, false},
		{"vectors-builtin-" + gen + ".bin", true, false},
		{"state-builtin-" + gen + ".bin", true, false},
		{"lexical-builtin-" + gen + ".bin", true, false},
		{"vectors-builtin.bin", true, false}, // format 1
		{"state-builtin.bin", true, false},
		{"lexical-builtin.bin", true, false},
		{"lexical-builtin-fedcba9876543210.bin", false, true}, // written a moment ago
		{"prebuilt-fake.json", true, true},                    // another provider's: its own save removes them
		{"vectors-fake-" + gen + ".bin", true, true},
		{"vectors-builtin-x-" + gen + ".bin", true, true}, // provider "builtin-x"
		{"vectors-builtin-notes.bin", true, true},         // not an index file
		{"notes.txt", true, true},
	}
	long := time.Now().Add(-time.Hour)
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("format 2"), 0o644); err != nil {
			t.Fatal(err)
		}
		if f.old {
			os.Chtimes(p, long, long)
		}
	}
	b := embed.NewBuiltin(embed.Config{})
	r := newRouter(t, snap, router.Options{Embedder: b, Fit: func(c []string) router.Embedder { return b.Fit(c) }})
	if err := r.SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if stays := err == nil; stays != f.stays {
			t.Errorf("%s: kept %v after a save, want %v", f.name, stays, f.stays)
		}
	}
	for _, f := range indexFiles(t, dir, "builtin") {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the saved index lacks %s: %v", f, err)
		}
	}
}

// A prebuilt index folder that is not there (a wrong path, a volume not
// mounted) is named as such, not as a manifest missing from it.
func TestPrebuiltFolderMissing(t *testing.T) {
	var logs bytes.Buffer
	o := builtinOptions()
	o.Prebuilt = filepath.Join(t.TempDir(), "not-mounted")
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	r, err := router.New(context.Background(), load(t, copyLibrary(t)), o)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if !strings.Contains(logs.String(), "the folder cannot be read") || strings.Contains(logs.String(), "json missing") {
		t.Errorf("log:\n%s", logs.String())
	}
}

// A library that stops changing keeps no earlier generation once the grace
// period has passed after the last save: a save removes only what was
// retired a grace period before it, so the files the last save retired
// stayed until the next edit (400 MB after 50 edits at 1,267 skills).
func TestPrebuiltRetiredRemovedAfterLastSave(t *testing.T) {
	dir, lib := t.TempDir(), t.TempDir()
	writeSkill(t, lib, "skill-0", "Tune slow SQL queries and indexes.")
	writeSkill(t, lib, "skill-1", "Write regular expressions for dates.")
	opts := func() router.Options {
		return router.Options{Embedder: embed.NewBuiltin(embed.Config{}), Fit: func(c []string) router.Embedder { return embed.NewBuiltin(embed.Config{}).Fit(c) }}
	}
	defer router.SetStaleAfter(100 * time.Millisecond)()
	r1 := newRouter(t, skills.Load(context.Background(), []string{lib}, skills.Options{}), opts())
	if err := r1.SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	first := indexFiles(t, dir, "builtin")
	writeSkill(t, lib, "skill-2", "Design GraphQL schemas.")
	r2 := newRouter(t, skills.Load(context.Background(), []string{lib}, skills.Options{}), opts())
	if err := r2.SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	second := indexFiles(t, dir, "builtin")
	if _, err := os.Stat(filepath.Join(dir, first[1])); err != nil {
		t.Fatalf("the retired generation went within its grace period: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, first[1])); err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if names := folderNames(dir); !sameSet(names, second) {
		t.Errorf("with no save after the grace period the folder holds %v, want only %v", names, second)
	}
}

// A manifest changed in place (its calibration edited, a digit flipped by
// bit rot) is rebuilt from, not served: the data files had digests, the
// manifest that names them and holds the calibration had none.
func TestPrebuiltManifestChangedInPlace(t *testing.T) {
	snap := load(t, copyLibrary(t))
	base := fittedBuiltin(t, snap)
	dir := t.TempDir()
	if err := newRouter(t, snap, router.Options{Embedder: &remoteFake{b: base, model: "m1"}}).SavePrebuilt(dir); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "prebuilt-*.json"))
	if len(names) != 1 {
		t.Fatalf("manifests %v", names)
	}
	b, _ := os.ReadFile(names[0])
	i := strings.Index(string(b), `"Cosine": [`)
	if i < 0 {
		t.Fatalf("no cosine calibration in %s", b)
	}
	j := i + len(`"Cosine": [`) + 2 // a digit of its noise level
	for b[j] < '0' || b[j] > '9' {
		j++
	}
	b[j] = '0' + (b[j]-'0'+1)%10
	if err := os.WriteFile(names[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	e := &remoteFake{b: base, model: "m1"}
	newRouter(t, snap, router.Options{Embedder: e, Prebuilt: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !strings.Contains(logs.String(), "does not match its digest") {
		t.Errorf("a changed manifest was loaded:\n%s", logs.String())
	}
}

// A start that loads the index an earlier run kept sweeps the generations
// earlier runs retired: it saves nothing itself, so a library that does
// not change again kept every one (342 MB after 30 edits of a 1,176-skill
// library, stopped before their grace had passed).
func TestWarmStartSweepsRetiredGenerations(t *testing.T) {
	warm, lib := t.TempDir(), t.TempDir()
	writeSkill(t, lib, "skill-0", "Tune slow SQL queries and indexes.")
	writeSkill(t, lib, "skill-1", "Write regular expressions for dates.")
	opts := func() router.Options {
		return router.Options{Embedder: embed.NewBuiltin(embed.Config{}), Fit: func(c []string) router.Embedder { return embed.NewBuiltin(embed.Config{}).Fit(c) },
			WarmDir: warm}
	}
	defer router.SetStaleAfter(100 * time.Millisecond)()
	r1 := newRouter(t, skills.Load(context.Background(), []string{lib}, skills.Options{}), opts())
	if err := r1.SavePrebuilt(warm); err != nil {
		t.Fatal(err)
	}
	r1.Close()
	first := indexFiles(t, warm, "builtin")
	writeSkill(t, lib, "skill-2", "Design GraphQL schemas.")
	r2 := newRouter(t, skills.Load(context.Background(), []string{lib}, skills.Options{}), opts())
	if err := r2.SavePrebuilt(warm); err != nil {
		t.Fatal(err)
	}
	r2.Close() // stopped before its sweep: the first generation stays behind
	second := indexFiles(t, warm, "builtin")
	if _, err := os.Stat(filepath.Join(warm, first[1])); err != nil {
		t.Fatalf("the retired generation went before the restart: %v", err)
	}
	var logs bytes.Buffer
	o := opts()
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	newRouter(t, skills.Load(context.Background(), []string{lib}, skills.Options{}), o)
	if !strings.Contains(logs.String(), "loaded the routing index kept from the last start") {
		t.Fatalf("not a warm start:\n%s", logs.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !sameSet(folderNames(warm), second) {
		time.Sleep(50 * time.Millisecond)
	}
	if names := folderNames(warm); !sameSet(names, second) {
		t.Errorf("after a warm start the folder holds %v, want only %v", names, second)
	}
}
