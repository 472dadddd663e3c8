package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/embed"
	"github.com/skillrouter/skillrouter/router"
)

func TestBenchFlagParsing(t *testing.T) {
	ss, err := parseStrategies("bm25, hybrid,bm25")
	if err != nil || !slices.Equal(ss, []router.Strategy{router.StrategyBM25, router.StrategyHybrid}) {
		t.Fatalf("strategies %v %v", ss, err)
	}
	if _, err := parseStrategies("bm25,magic"); err == nil || !strings.Contains(err.Error(), `"magic"`) {
		t.Fatalf("unknown strategy: %v", err)
	}
	if _, err := parseStrategies(" , "); err == nil {
		t.Fatal("empty strategies accepted")
	}
	ks, err := parseInts("k", "1,3,5,10,3")
	if err != nil || !slices.Equal(ks, []int{1, 3, 5, 10}) {
		t.Fatalf("ks %v %v", ks, err)
	}
	for _, bad := range []string{"0", "-1", "x", ""} {
		if _, err := parseInts("k", bad); err == nil {
			t.Errorf("parseInts(%q) accepted", bad)
		}
	}
	encs, err := parseEncodings("cl100k_base,o200k_base")
	if err != nil || len(encs) != 2 || encs[0] != "cl100k_base" {
		t.Fatalf("encodings %v %v", encs, err)
	}
	if _, err := parseEncodings("p50k_base"); err == nil {
		t.Fatal("unknown encoding accepted")
	}
}

func runBenchCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(append([]string{"bench"}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

const fixtureMetaTool = "../../bench/testdata/metatool"

func TestBenchCommandMetaTool(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, err := runBenchCmd(t, "--metatool", fixtureMetaTool, "--split", "single",
		"--strategies", "keyword,bm25,hybrid", "--k", "1,3", "--json", "--out", out)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, stderr)
	}
	var doc struct {
		Dataset string `json:"dataset"`
		Skills  int    `json:"skills"`
		Queries int    `json:"queries"`
		Results []struct {
			Strategy     string             `json:"strategy"`
			HitAt        map[string]float64 `json:"hit_at"`
			PromptTokens struct {
				Router struct{ Mean, P95 float64 } `json:"router"`
			} `json:"prompt_tokens"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	if doc.Skills != 4 || doc.Queries != 5 || len(doc.Results) != 3 || doc.Results[2].Strategy != "hybrid" {
		t.Fatalf("report %+v", doc)
	}
	if _, ok := doc.Results[1].HitAt["3"]; !ok || doc.Results[1].PromptTokens.Router.Mean <= 0 {
		t.Fatalf("result %+v", doc.Results[1])
	}
	for _, f := range []string{"results.json", "results.csv", "results.md", "hit_at_k.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "scale.svg")); err == nil {
		t.Error("scale.svg written without --scale")
	}
	// Not a terminal: no progress bar on stderr.
	if strings.Contains(stderr, "\r") {
		t.Errorf("progress output on a non-terminal stderr: %q", stderr)
	}
}

func TestBenchCommandQueriesAndScale(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "skills")
	for _, s := range []struct{ id, desc string }{
		{"pdf-tools", "Extract text and tables from PDF files, merge and split PDFs."},
		{"git-helper", "Write commit messages and resolve merge conflicts in git repositories."},
		{"chart-maker", "Plot charts and graphs from CSV data with matplotlib."},
	} {
		if err := os.MkdirAll(filepath.Join(lib, s.id), 0o755); err != nil {
			t.Fatal(err)
		}
		body := "---\nname: " + s.id + "\ndescription: " + s.desc + "\n---\n\n# " + s.id + "\n\nSteps for " + s.desc + "\n"
		if err := os.WriteFile(filepath.Join(lib, s.id, "SKILL.md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	qfile := filepath.Join(dir, "q.jsonl")
	if err := os.WriteFile(qfile, []byte(`{"query": "merge two PDF files", "expected": ["pdf-tools"]}
{"query": "plot a chart of this CSV", "expected": ["chart-maker"], "note": "extra keys are ignored"}

{"query": "what is the capital of Australia?", "expected": []}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runBenchCmd(t, "--skills", lib, "--queries", qfile, "--strategies", "bm25")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "3 skills, 3 queries (2 with expected skills, 1 with `expected: []`)") ||
		!strings.Contains(stdout, "| bm25 |") {
		t.Fatalf("markdown:\n%s", stdout)
	}

	out := filepath.Join(dir, "scale-out")
	stdout, stderr, err = runBenchCmd(t, "--skills", lib, "--queries", qfile, "--strategies", "bm25",
		"--scale", "2,5", "--encoding", "o200k_base", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "| 5 | 3 | 2 |") {
		t.Fatalf("scale markdown:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "scale.svg")); err != nil {
		t.Fatal(err)
	}
}

func TestBenchCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"query\": \"a\", \"expected\": []}\n{broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no dataset", []string{"--skills", dir}, "give --queries"},
		{"both datasets", []string{"--queries", bad, "--metatool", fixtureMetaTool}, "exclusive"},
		{"malformed line", []string{"--skills", dir, "--queries", bad}, bad + ":2:"},
		{"bad strategy", []string{"--metatool", fixtureMetaTool, "--strategies", "nope"}, `unknown strategy "nope"`},
		{"bad k", []string{"--metatool", fixtureMetaTool, "--k", "0"}, "--k"},
		{"bad split", []string{"--metatool", fixtureMetaTool, "--split", "both"}, "--split"},
		{"split without metatool", []string{"--queries", bad, "--split", "multi"}, "--split applies to --metatool only"},
		{"bad catalog", []string{"--metatool", fixtureMetaTool, "--catalog", "some"}, "--catalog"},
		{"bad scale", []string{"--metatool", fixtureMetaTool, "--scale", "10,x"}, "--scale"},
		{"bad embedder", []string{"--metatool", fixtureMetaTool, "--embedder", "magic"}, "magic"},
		// Its row would hold bm25's figures under hybrid's name.
		{"embedder down throughout", []string{"--metatool", fixtureMetaTool, "--strategies", "hybrid", "--embedder", "ollama", "--embed-url", "http://127.0.0.1:1"}, "every decision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runBenchCmd(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want containing %q", err, tt.want)
			}
		})
	}
}

// --arms compares the configuration's ab.arms as rows of their own (an arm
// without a strategy runs the default one; one with an embedder of its
// own gets its own router); without it, a configuration with arms gets a
// note that they are not compared rather than silence.
func TestBenchCommandArms(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "ab.yaml")
	if err := os.WriteFile(cfgFile, []byte(`routing:
  strategy: hybrid
ab:
  arms:
    - {name: control, percent: 50}
    - name: lexical
      percent: 25
      strategy: bm25
      embedder: {provider: builtin}
    - name: small
      percent: 25
      embedder: {provider: builtin, dimensions: 512}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runBenchCmd(t, "--config", cfgFile, "--metatool", fixtureMetaTool, "--arms")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	// Two builtin arms of different sizes tell apart by their labels.
	for _, want := range []string{"| control (hybrid) | builtin (1024 d) |", "| lexical (bm25) | none |", "| small (hybrid) | builtin (512 d) |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no row %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "| bm25 |") || strings.Contains(stdout, "| embedding |") {
		t.Errorf("--strategies rows beside the arms:\n%s", stdout)
	}

	_, stderr, err = runBenchCmd(t, "--config", cfgFile, "--metatool", fixtureMetaTool, "--strategies", "bm25")
	if err != nil || !strings.Contains(stderr, "ab.arms are not compared here (--arms") {
		t.Errorf("err %v, no note on the arms left out:\n%s", err, stderr)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", cfgFile, "--metatool", fixtureMetaTool, "--arms", "--strategies", "bm25"}, "leave out --strategies"},
		{[]string{"--metatool", fixtureMetaTool, "--arms"}, "no ab.arms"},
	} {
		_, _, err := runBenchCmd(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !isUsage(err) {
			t.Errorf("%v: err = %v, want a usage error containing %q", tt.args, err, tt.want)
		}
	}
}

type labelEmbedder struct {
	name, model string
	dims        int
}

func (e labelEmbedder) Embed(context.Context, []string) ([][]float32, error) { return nil, nil }
func (e labelEmbedder) Name() string                                         { return e.name }
func (e labelEmbedder) Model() string                                        { return e.model }
func (e labelEmbedder) Dimensions() int                                      { return e.dims }

func TestEmbedderLabel(t *testing.T) {
	tests := []struct {
		e    router.Embedder
		want string
	}{
		{embed.NewBuiltin(embed.Config{Dimensions: 512}), "builtin (512 d)"},
		{labelEmbedder{"ollama", "nomic-embed-text", 768}, "ollama nomic-embed-text (768 d)"},
		{labelEmbedder{"openai", "text-embedding-3-small", 0}, "openai text-embedding-3-small"},
	}
	for _, tt := range tests {
		if got := embedderLabel(tt.e); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.e.Name(), got, tt.want)
		}
	}
}

// --metatool without --skills adds the default folders' skills as
// distractors, scanned as serve scans them: a skill folder another user
// could change is skipped.
func TestBenchMetaToolDefaultRootsScannedAsServe(t *testing.T) {
	fixture, err := filepath.Abs(fixtureMetaTool)
	if err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	for _, name := range []string{"mine", "open"} {
		dir := filepath.Join(project, ".claude", "skills", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + name + "\ndescription: A distractor skill named " + name + ".\n---\nBody.\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(project, ".claude", "skills", "open"), 0o777); err != nil {
		t.Fatal(err)
	}
	t.Chdir(project)
	count := func(args ...string) int {
		t.Helper()
		stdout, stderr, err := runBenchCmd(t, append([]string{"--metatool", fixture, "--split", "single", "--strategies", "bm25", "--k", "1", "--json"}, args...)...)
		if err != nil {
			t.Fatalf("%v\nstderr: %s", err, stderr)
		}
		var doc struct {
			Skills int `json:"skills"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Skills
	}
	given := count("--skills", filepath.Join(project, ".claude", "skills")) // read whoever can change it
	if conventional := count(); conventional != given-1 {
		t.Errorf("%d skills with the default folder, %d with it given: the open folder was read", conventional, given)
	}
}
