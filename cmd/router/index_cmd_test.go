package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// benchSkills is the 407-skill library in ../shared/bench; tests that need
// it skip when it is absent.
func benchSkills(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "bench", "skills")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("bench library not found at " + dir)
	}
	return dir
}

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	err := cmd.ExecuteContext(context.Background())
	return stdout.String(), stderr.String(), err
}

// TestIndexBuildThenServe is the replica start-up: `router index build`
// embeds the 407-skill library once through a remote (OpenAI-compatible)
// embedder; a proxy started with --index on the same library then
// becomes ready without a single request to the embedder, and routes.
func TestIndexBuildThenServe(t *testing.T) {
	lib := benchSkills(t)
	var requests headerLog
	emb := fakeEmbeddings(t, &requests)
	out := filepath.Join(t.TempDir(), "index")
	embedFlags := []string{"--embedder", "openai", "--embed-url", emb.URL + "/v1", "--embed-model", "fake"}
	stdout, stderr, err := runCLI(t, append([]string{"index", "build", "--skills", lib, "--out", out}, embedFlags...)...)
	if err != nil {
		t.Fatalf("index build: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "routing index of 407 skills (embedder openai)") || !strings.Contains(stdout, "prebuilt-openai-") || !strings.Contains(stdout, "embeddings/") {
		t.Errorf("index build output:\n%s", stdout)
	}
	built := len(requests.all())
	if built == 0 {
		t.Fatal("index build made no embedding request")
	}

	up, _ := recordingUpstream(t)
	cfg, err := loadFor(t, append([]string{"--upstream", up.URL + "/v1", "--skills", lib, "--index", out, "--watch=false"}, embedFlags...),
		map[string]string{"XDG_CACHE_HOME": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Embedder.CacheDir = "-" // nothing to fall back on but the prebuilt index
	var logs syncbuf.Buffer
	_, _, build, err := buildProxy(context.Background(), cfg, cfg.Skills, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(requests.all()) - built; n != 0 {
		t.Fatalf("serve --index made %d embedding requests at start, want 0\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "loaded the prebuilt routing index") {
		t.Errorf("no log line for the prebuilt index:\n%s", logs.String())
	}
}

// TestServeIndexMismatch: an index of another library is refused with a
// log line saying why, and the proxy builds its own index.
func TestServeIndexMismatch(t *testing.T) {
	lib := filepath.Join("..", "..", "examples", "skills")
	other := t.TempDir()
	if err := os.CopyFS(other, os.DirFS(lib)); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(other, "regex-builder"))
	out := filepath.Join(t.TempDir(), "index")
	if _, stderr, err := runCLI(t, "index", "build", "--skills", other, "--out", out); err != nil {
		t.Fatalf("index build: %v\n%s", err, stderr)
	}
	up, _ := recordingUpstream(t)
	cfg, err := loadFor(t, []string{"--upstream", up.URL + "/v1", "--skills", lib, "--index", out, "--watch=false"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	_, _, build, err := buildProxy(context.Background(), cfg, cfg.Skills, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "the prebuilt routing index does not match") || !strings.Contains(logs.String(), "9 skills then, 10 now") {
		t.Errorf("mismatch not logged with its reason:\n%s", logs.String())
	}
}

func TestIndexBuildErrors(t *testing.T) {
	if _, _, err := runCLI(t, "index", "build", "--skills", filepath.Join("..", "..", "examples", "skills")); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("missing --out: %v", err)
	}
	// An embedder that is down: no partial index is left behind as complete.
	out := filepath.Join(t.TempDir(), "index")
	_, _, err := runCLI(t, "index", "build", "--skills", filepath.Join("..", "..", "examples", "skills"), "--out", out,
		"--embedder", "openai", "--embed-url", "http://127.0.0.1:1/v1", "--embed-model", "x")
	if err == nil || !strings.Contains(err.Error(), "vector index could not be built") {
		t.Errorf("embedder down: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(out, "prebuilt-*.json")); len(m) > 0 {
		t.Error("a manifest was written for an incomplete index")
	}
	// An empty library (a build job pointed at an empty mount) fails.
	empty := t.TempDir()
	out = filepath.Join(t.TempDir(), "index")
	if _, _, err := runCLI(t, "index", "build", "--skills", empty, "--out", out); err == nil || !strings.Contains(err.Error(), "nothing to index") {
		t.Errorf("empty library: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(out, "prebuilt-*.json")); len(m) > 0 {
		t.Error("a manifest was written for an empty library")
	}
}

// TestIndexBuildWritesSettledIndex: `router index build` writes an index
// as a fresh build makes it, even when the folder holds an index of the
// same library kept before its router settled it (a warm index, which
// carries the fit and calibration of an older library).
func TestIndexBuildWritesSettledIndex(t *testing.T) {
	lib := t.TempDir()
	if err := os.CopyFS(lib, os.DirFS(filepath.Join("..", "..", "examples", "skills"))); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "index")
	cfg, err := loadFor(t, []string{"--skills", lib}, map[string]string{"XDG_CACHE_HOME": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := withEmbedder(cfg.Embedder, router.Options{WarmDir: out, SettleAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reg, err := loadRegistry(ctx, []string{lib}, skills.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(ctx, reg.Snapshot(), opts)
	if err != nil {
		t.Fatal(err)
	}
	skill := filepath.Join(lib, "regex-builder", "SKILL.md")
	text, _ := os.ReadFile(skill)
	os.WriteFile(skill, bytes.Replace(text, []byte("description: "), []byte("description: Edited. "), 1), 0o644)
	if err := r.Update(ctx, reg.Reload(ctx)); err != nil {
		t.Fatal(err)
	}
	r.Close() // the unsettled index is kept in out
	settled := func() string {
		m, _ := filepath.Glob(filepath.Join(out, "prebuilt-builtin-*.json"))
		if len(m) != 1 {
			t.Fatalf("manifests: %v", m)
		}
		b, _ := os.ReadFile(m[0])
		var v struct{ Settled bool }
		json.Unmarshal(b, &v)
		return fmt.Sprint(v.Settled)
	}
	if got := settled(); got != "false" {
		t.Fatalf("the kept index after an edit: settled %s", got)
	}
	if _, stderr, err := runCLI(t, "index", "build", "--skills", lib, "--out", out); err != nil {
		t.Fatalf("index build: %v\n%s", err, stderr)
	} else if !strings.Contains(stderr, "loaded the prebuilt routing index") || !strings.Contains(stderr, "routing index settled") {
		t.Errorf("index build did not load and settle the index in the folder:\n%s", stderr)
	}
	if got := settled(); got != "true" {
		t.Errorf("index build wrote an index with settled %s", got)
	}
}
