package router_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
)

// TestWarmStart: a router keeps its index in WarmDir; the next one started
// on the same library loads it (no fitting, no embedding call, no BM25
// analysis to speak of) and ranks exactly as the first; a changed library
// is built again and kept anew; a damaged file is rebuilt, not trusted.
func TestWarmStart(t *testing.T) {
	lib := copyLibrary(t)
	warm := filepath.Join(t.TempDir(), "warm") // not there yet: a first start
	base := fittedBuiltin(t, load(t, lib))
	var fits atomic.Int64
	var fitAfterLine atomic.Bool // the build's first work began after its log line
	builtin := func(logs *bytes.Buffer) router.Options {
		b := embed.NewBuiltin(embed.Config{})
		return router.Options{Embedder: b, WarmDir: warm,
			Fit: func(c []string) router.Embedder {
				// Fit runs on the goroutine that logs the line, after it.
				fitAfterLine.Store(strings.Contains(logs.String(), "building the routing index"))
				fits.Add(1)
				return b.Fit(c)
			},
			Restore: func(s []byte) (router.Embedder, error) { return embed.RestoreBuiltin(s) },
			Logger:  slog.New(slog.NewTextHandler(logs, nil))}
	}
	start := func(opts router.Options) *router.Router {
		r, err := router.New(context.Background(), load(t, lib), opts)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	queries := []string{"slow sql query", "write a regex for dates", "hello there", "deploy to kubernetes"}
	rankings := func(r *router.Router) [][]string {
		var out [][]string
		for _, q := range queries {
			for _, s := range router.Strategies {
				d := route(r, s, q)
				out = append(out, append(ranking(d), "|", strings.Join(d.Selected, ",")))
			}
		}
		return out
	}

	var logs bytes.Buffer
	r1 := start(builtin(&logs))
	// A first start has no index kept to be out of date.
	if line := "building the routing index: none kept from an earlier start"; !strings.Contains(logs.String(), line) || strings.Contains(logs.String(), "out of date") ||
		strings.Contains(logs.String(), "cannot be read") {
		t.Errorf("first start, want %q:\n%s", line, logs.String())
	} else if !fitAfterLine.Load() {
		t.Errorf("first start: %q logged after the build, not before it", line)
	}
	want := rankings(r1)
	r1.Close() // waits for the background write
	for _, f := range indexFiles(t, warm, "builtin") {
		if _, err := os.Stat(filepath.Join(warm, f)); err != nil {
			t.Fatalf("warm index lacks %s: %v", f, err)
		}
	}

	fits.Store(0)
	logs.Reset()
	r2 := start(builtin(&logs))
	if n := fits.Load(); n != 0 {
		t.Errorf("fitted %d times on a warm start, want 0", n)
	}
	if !strings.Contains(logs.String(), "loaded the routing index kept from the last start") {
		t.Errorf("no warm-start log line:\n%s", logs.String())
	}
	if got := rankings(r2); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("warm start ranks differently:\n got %v\nwant %v", got, want)
	}
	r2.Close()

	// A prebuilt index of another library beside the warm one of this
	// library: the warm one is loaded, and the log says so rather than
	// that every skill is embedded again.
	other := copyLibrary(t)
	if ms, _ := filepath.Glob(filepath.Join(other, "*", "SKILL.md")); len(ms) < 2 || os.RemoveAll(filepath.Dir(ms[0])) != nil {
		t.Fatalf("cannot shrink the other library: %v", ms)
	}
	pre := t.TempDir()
	rp, err := router.New(context.Background(), load(t, other), router.Options{Embedder: embed.NewBuiltin(embed.Config{}),
		Fit: func(c []string) router.Embedder { return embed.NewBuiltin(embed.Config{}).Fit(c) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.SavePrebuilt(pre); err != nil {
		t.Fatal(err)
	}
	rp.Close()
	fits.Store(0)
	logs.Reset()
	o := builtin(&logs)
	o.Prebuilt = pre
	start(o).Close()
	if line := "the one kept from the last start does and is loaded instead"; !strings.Contains(logs.String(), line) ||
		strings.Contains(logs.String(), "embedded again") || fits.Load() != 0 {
		t.Errorf("a stale prebuilt index beside a matching warm one, want %q and no fit (%d):\n%s", line, fits.Load(), logs.String())
	}

	// A remote embedder makes no call at all on a warm start.
	rlogs := &bytes.Buffer{}
	remote := func(e *remoteFake) router.Options {
		return router.Options{Embedder: e, WarmDir: warm, Logger: slog.New(slog.NewTextHandler(rlogs, nil))}
	}
	e1 := &remoteFake{b: base, model: "m1"}
	start(remote(e1)).Close()
	e2 := &remoteFake{b: base, model: "m1"}
	r3 := start(remote(e2))
	if n := e2.calls(); n != 0 {
		t.Errorf("a remote embedder got %d calls on a warm start, want 0", n)
	}
	r3.Close()

	// A changed library builds again (and is kept for the next start).
	os.MkdirAll(filepath.Join(lib, "new-skill"), 0o755)
	os.WriteFile(filepath.Join(lib, "new-skill", "SKILL.md"), []byte("---\nname: new-skill\ndescription: Brand new. Use when testing warm starts.\n---\nBody.\n"), 0o644)
	fits.Store(0)
	logs.Reset()
	start(builtin(&logs)).Close()
	if n := fits.Load(); n != 1 || !strings.Contains(logs.String(), "out of date") {
		t.Errorf("changed library: fitted %d times, log:\n%s", n, logs.String())
	}
	fits.Store(0)
	start(builtin(&logs)).Close()
	if n := fits.Load(); n != 0 {
		t.Errorf("fitted %d times after the changed library was kept, want 0", n)
	}

	// A damaged lexical file is rebuilt; rankings stay right.
	lex := filepath.Join(warm, indexFiles(t, warm, "builtin")[3])
	b, _ := os.ReadFile(lex)
	os.WriteFile(lex, b[:len(b)/2], 0o644)
	logs.Reset()
	r4 := start(builtin(&logs))
	defer r4.Close()
	if d := route(r4, router.StrategyHybrid, "slow sql query"); d.Fallback || len(d.Ranked) == 0 {
		t.Fatalf("after a damaged warm index: %+v", d)
	}
	if line := "the one kept from the last start is damaged"; !strings.Contains(logs.String(), line) {
		t.Errorf("a damaged lexical file, want %q:\n%s", line, logs.String())
	}
}
