package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Review first15 (a new user's first hour, then an operator).

// TestReviewF15ListenWithoutPortNamesItsOrigin: README says "Every error
// names where the bad value was written ... and what is accepted". A listen
// address without a port (`listen: 8080`, `--listen localhost`, both common
// first tries) passes the configuration checks (--print-config prints it,
// `router doctor` reports "config ok" and blames the address on "another
// process (a running proxy?)"), and serve then fails with Go's own text and
// no origin: "router: listen: listen tcp: address 8080: missing port in
// address".
func TestReviewF15ListenWithoutPortNamesItsOrigin(t *testing.T) {
	f := writeFile(t, "c.yaml", "listen: 8080\n")
	_, err := loadFor(t, []string{"--config", f}, nil)
	want := "config " + f + `:1: listen "8080": want host:port`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("listen: 8080 in a config file:\ngot  %v\nwant %s…", err, want)
	}
	_, err = loadFor(t, []string{"--listen", "localhost"}, nil)
	want = `flag --listen: listen "localhost": want host:port`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("--listen localhost:\ngot  %v\nwant %s…", err, want)
	}
}

// TestReviewF15ABPercentsCheckedWithConfig: ab.arms whose percents do not
// add up to 100 are accepted by the configuration checks (so
// --print-config and `router doctor` say all is well: "config ok
// c.yaml loads"), and serve refuses them only after start-up has begun,
// without naming the file or line: "router: proxy: A/B arm percents add
// up to 120, want 100". The other A/B mistakes (one arm, a bad strategy,
// a bad embedder) are reported at load time with their line.
func TestReviewF15ABPercentsCheckedWithConfig(t *testing.T) {
	f := writeFile(t, "c.yaml", "ab:\n  arms:\n    - {name: a, percent: 70, strategy: bm25}\n    - {name: b, percent: 50}\n")
	_, err := loadFor(t, []string{"--config", f}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "config "+f+":") || !strings.Contains(err.Error(), "ab.arms") {
		t.Errorf("arms adding up to 120: got %v, want an error naming %s and ab.arms", err, f)
	}
	// Duplicate arm names likewise reach serve only.
	f = writeFile(t, "c.yaml", "ab:\n  arms:\n    - {name: a, percent: 50}\n    - {name: a, percent: 50}\n")
	_, err = loadFor(t, []string{"--config", f}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "config "+f+":") {
		t.Errorf("duplicate arm names: got %v, want an error naming %s", err, f)
	}

	// router doctor "checks everything serve needs": it must fail the config.
	examples, _ := filepath.Abs(examplesLib)
	isolate(t)
	up := modelsUpstream(t)
	f = writeFile(t, "c.yaml", "ab:\n  arms:\n    - {name: a, percent: 70, strategy: bm25}\n    - {name: b, percent: 50}\n")
	out, _, err := run(t, "doctor", "--config", f, "--skills", examples, "--upstream", up.URL+"/v1", "--listen", freeAddr(t))
	if exitStatus(err) != 1 || !regexp.MustCompile(`(?m)^config\s+FAIL\s`).MatchString(out) {
		t.Errorf("doctor with arms adding up to 120: exit %d, want 1 with the config row failing:\n%s", exitStatus(err), out)
	}
}

// TestReviewF15ServeHelpExplainsFileOnlyKeys: README says "`router serve
// --help` documents every key". It lists every key, but the description a
// key carries (configKeys' help) is printed only for keys with a flag: the
// twenty-odd file/env-only keys (auth.api_keys, auth.admin_token,
// exec.env, embedder.dimensions, rewrite.description_limit,
// server.idle_timeout, ...) appear as a bare name and default, and the
// format of list variables is nowhere in the output: SKILLROUTER_SKILLS
// takes folders separated by ":" (os.PathListSeparator), which no help
// text or doc says (SKILLROUTER_SKILLS=a,b is read as one folder "a,b").
func TestReviewF15ServeHelpExplainsFileOnlyKeys(t *testing.T) {
	help, _, err := run(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, k := range configKeys {
		if k.flag == "" && k.help != "" && !strings.Contains(help, k.help) {
			missing = append(missing, k.path)
		}
	}
	if len(missing) > 0 {
		t.Errorf("serve --help shows no description for %d file/env-only keys: %s", len(missing), strings.Join(missing, ", "))
	}
	if !strings.Contains(help, "SKILLROUTER_SKILLS") || !strings.Contains(help, "separated by :") {
		t.Errorf("serve --help does not say how SKILLROUTER_SKILLS lists several folders")
	}
}

// The chart refusing config typos: TestHelmRefusesConfigTypos (helm_schema_test.go).
