package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func modelsUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"llama3.2","object":"model"},{"id":"qwen3","object":"model"}]}`)
	}))
	t.Cleanup(up.Close)
	return up
}

func TestDoctor(t *testing.T) {
	examples, _ := filepath.Abs(examplesLib)
	isolate(t)
	up := modelsUpstream(t)
	listen := freeAddr(t)

	out, _, err := run(t, "doctor", "--skills", examples, "--upstream", up.URL+"/v1", "--listen", listen)
	if err != nil {
		t.Fatalf("all well: %v\n%s", err, out)
	}
	for _, want := range []string{
		"config    ok       no config file",
		"library   ok       10 skills from " + examples,
		"upstream  ok       " + up.URL + "/v1: ok: 2 models",
		"(llama3.2, qwen3)",
		"embedder  ok       builtin",
		"1024 dimensions",
		"cache     ok",
		"is writable",
		"listen    ok       " + listen + " is free",
		"sandbox   skipped  exec.enabled is false",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}

	// A separate Anthropic upstream gets its own row.
	out, _, err = run(t, "doctor", "--skills", examples, "--upstream", up.URL+"/v1", "--listen", listen,
		"--anthropic-upstream", up.URL+"/anthropic/v1")
	if exitStatus(err) != 1 || !strings.Contains(out, "anthropic  FAIL") || !strings.Contains(out, up.URL+"/anthropic/v1: GET /models answered 404") {
		t.Errorf("anthropic upstream: %v\n%s", err, out)
	}

	// The README's Claude Code setup: Anthropic's API answers 401 to a
	// probe without a key, and Claude Code sends its own. A warning, not a
	// failure; and the default upstream, unset and not answering, only warns
	// in a setup that gave Anthropic's alone.
	anthropic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"}}`)
	}))
	defer anthropic.Close()
	out, _, err = run(t, "doctor", "--skills", examples, "--upstream", up.URL+"/v1", "--listen", listen, "--anthropic-upstream", anthropic.URL+"/v1")
	if err != nil || !strings.Contains(out, "anthropic  warn") || !strings.Contains(out, "clients must send their own") {
		t.Errorf("anthropic upstream wanting the clients' keys: %v\n%s", err, out)
	}
	t.Setenv("OLLAMA_HOST", "")
	out, _, err = run(t, "doctor", "--skills", examples, "--listen", listen, "--anthropic-upstream", anthropic.URL+"/v1")
	if strings.Contains(out, "upstream  FAIL") || (strings.Contains(out, "upstream  warn") && !strings.Contains(out, "is not set")) {
		t.Errorf("the default upstream, unset, with Anthropic's given: %v\n%s", err, out)
	}

	// A wrong upstream URL and a taken address: exit 1, each with its fix.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	out, errOut, err := run(t, "doctor", "--skills", examples, "--upstream", up.URL, "--listen", busy.Addr().String())
	if exitStatus(err) != 1 || !strings.Contains(errOut, "1 check failed") {
		t.Fatalf("exit %d (%v), stderr %q", exitStatus(err), err, errOut)
	}
	for _, want := range []string{
		"upstream  FAIL     " + up.URL + ": GET /models answered 404",
		"fix: did you mean " + up.URL + "/v1?",
		"listen    warn     " + busy.Addr().String() + ": address already in use",
		"fix: another process",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}

	// A configuration error stops there, with where and what is accepted.
	file := writeFile(t, "c.yaml", "routing:\n  strategy: hybird\n")
	out, _, err = run(t, "doctor", "--config", file)
	if exitStatus(err) != 1 || !strings.Contains(out, "config  FAIL    config "+file+`:2: routing.strategy "hybird": want keyword, bm25, embedding or hybrid`) ||
		strings.Contains(out, "upstream") {
		t.Errorf("config error: %v\n%s", err, out)
	}

	// No library: the command to try.
	out, _, err = run(t, "doctor", "--upstream", up.URL+"/v1", "--listen", listen)
	if exitStatus(err) != 1 || !strings.Contains(out, "library   FAIL") ||
		!strings.Contains(out, "router doctor --upstream "+up.URL+"/v1 --listen "+listen+" --skills builtin:examples") {
		t.Errorf("no library: %v\n%s", err, out)
	}
}

// TestNoLibraryHint: every command that needs a library, run where none
// exists, says where it looked and prints the exact command to try with
// the built-in example library.
func TestNoLibraryHint(t *testing.T) {
	isolate(t)
	for _, tc := range []struct {
		args []string
		try  string
	}{
		{[]string{"serve"}, "router serve --skills builtin:examples"},
		{[]string{"serve", "--upstream", "https://api.openai.com/v1", "--upstream-api-key", "sk-x"},
			`router serve --upstream https://api.openai.com/v1 --upstream-api-key "$SKILLROUTER_UPSTREAM_API_KEY" --skills builtin:examples`},
		{[]string{"route", "--strategy", "bm25", "my postgres query is slow"}, "router route --strategy bm25 --skills builtin:examples 'my postgres query is slow'"},
		{[]string{"skills", "list"}, "router skills list --skills builtin:examples"},
		{[]string{"skills", "show", "sql-query-tuning"}, "router skills show --skills builtin:examples sql-query-tuning"},
		{[]string{"bench", "--queries", "q.jsonl"}, "router bench --queries q.jsonl --skills builtin:examples"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), "none of the default folders exists") || !strings.Contains(err.Error(), "\n  "+tc.try+"\n") ||
			strings.Contains(err.Error(), "sk-x") {
			t.Errorf("%v: %v\nwant the command %s", tc.args, err, tc.try)
		}
	}
	// And the command works.
	out, _, err := run(t, "route", "--strategy", "bm25", "--skills", "builtin:examples", "my postgres query is slow")
	if err != nil || !strings.Contains(out, "sql-query-tuning") {
		t.Errorf("route with the built-in library: %v\n%s", err, out)
	}
}

// The sandbox row's fix is about confinement only when confinement is what
// failed; an unusable output folder's error says its own fix.
func TestDoctorSandboxRowFix(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.Exec.Enabled = true
	cfg.Exec.OutputDir = filepath.Join(file, "out") // under a file: cannot be made
	row := sandboxRow(&cfg)
	if row.status != checkFail || row.fix != "" || !strings.Contains(row.detail, "output") {
		t.Errorf("%+v", row)
	}
}

// A cache folder that cannot be written is a warning, as serve treats it
// (it runs; every start embeds the library again), not a failure.
func TestDoctorCacheNotWritableWarns(t *testing.T) {
	examples, _ := filepath.Abs(examplesLib)
	isolate(t)
	up := modelsUpstream(t)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SKILLROUTER_EMBEDDER_CACHE_DIR", filepath.Join(file, "cache")) // below a file: never a folder
	out, _, err := run(t, "doctor", "--skills", examples, "--upstream", up.URL+"/v1", "--listen", freeAddr(t))
	if err != nil || !strings.Contains(out, "cache     warn") || !strings.Contains(out, "every start embeds the library again") {
		t.Errorf("an unwritable cache folder: %v\n%s", err, out)
	}
}

// TestDoctorArmEmbedders: an A/B arm's own embedder is checked too, and the
// fix follows what failed: a server that refused (no such model) is not
// told to start.
func TestDoctorArmEmbedders(t *testing.T) {
	examples, _ := filepath.Abs(examplesLib)
	isolate(t)
	up := modelsUpstream(t)
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":"model \"nosuch\" not found, try pulling it first"}`)
	}))
	defer ollama.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	cfgFile := writeFile(t, "ab.yaml", "ab:\n  arms:\n    - {name: base, percent: 50}\n"+
		"    - {name: oai, percent: 25, embedder: {provider: openai, base_url: \""+down+"/v1\", model: m1, retries: -1}}\n"+
		"    - {name: oll, percent: 25, embedder: {provider: ollama, base_url: \""+ollama.URL+"\", model: nosuch, retries: -1}}\n")
	out, _, err := run(t, "doctor", "--config", cfgFile, "--skills", examples, "--upstream", up.URL+"/v1", "--listen", freeAddr(t))
	if exitStatus(err) != 1 {
		t.Errorf("exit %v, want 1: an arm's embedder is down", err)
	}
	for _, want := range []string{"embedder (arm oai)", "is the embedding server running", "embedder (arm oll)", "answered and refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

// The sandbox row says why scripts run unconfined (the setting, not the
// kernel, when exec.confinement is none), warns of an output folder under
// one every user can write, as serve does, and fails one that overlaps the
// library.
func TestDoctorSandboxRowCauses(t *testing.T) {
	lib := t.TempDir()
	private := filepath.Join(t.TempDir(), "priv")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, out, confinement string
		status                 checkStatus
		detail                 string
	}{
		{"configured none", filepath.Join(private, "out"), "none", checkWarn, "(exec.confinement: none)"},
		{"overlapping the library", filepath.Join(lib, "out"), "auto", checkFail, "overlaps the skill library"},
	} {
		cfg := defaultConfig()
		cfg.Exec.Enabled, cfg.Exec.OutputDir, cfg.Exec.Confinement, cfg.Skills = true, tc.out, tc.confinement, []string{lib}
		if row := sandboxRow(&cfg); row.status != tc.status || !strings.Contains(row.detail, tc.detail) {
			t.Errorf("%s: %+v", tc.name, row)
		}
	}
	// A world-writable parent (the sticky /tmp kind) with Landlock present.
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o777); err != nil || os.Chmod(shared, 0o1777) != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.Exec.Enabled, cfg.Exec.OutputDir, cfg.Skills = true, filepath.Join(shared, "out"), []string{lib}
	if row := sandboxRow(&cfg); row.status == checkOK {
		t.Errorf("an output folder under a world-writable one: %+v", row)
	}
}
