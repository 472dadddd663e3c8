//go:build unix

package main

import (
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGHUP makes `router serve` read again what it reads from files that
// change while it runs, as nginx and Prometheus do: the library and the
// client keys of auth.api_keys_file (a revoked key stops working without
// a restart; a file left empty keeps the keys in force). Before, the
// signal's default ended the process at once, with no drain and no log.
func TestServeReloadsOnHangup(t *testing.T) {
	// The test process must outlive a SIGHUP the server does not handle.
	safety := make(chan os.Signal, 4)
	signal.Notify(safety, syscall.SIGHUP)
	defer signal.Stop(safety)

	lib := t.TempDir()
	writeSkill := func(name string) {
		dir := filepath.Join(lib, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: Use for "+name+".\n---\nSteps.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeSkill("alpha")
	keysFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keysFile, []byte("k-old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := defaultsFor(t)
	cfg.Upstream.CheckInterval = 0
	cfg.MCP.Enabled = false
	cfg.Routing.IndexDir = t.TempDir()
	cfg.Auth.APIKeysFile = keysFile
	cfg.Auth.APIKeys = []string{"k-inline"} // an emptied file must not leave only these
	sp := startServeOn(t, cfg, http.NotFoundHandler(), lib)
	defer func() {
		if err := sp.stop(); err != nil {
			t.Error(err)
		}
		if !strings.Contains(sp.logs(), "skillrouter stopped") {
			t.Errorf("no last line after a clean stop:\n%s", sp.logs())
		}
	}()
	logHas := func(s string) bool { return strings.Contains(sp.logs(), s) }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%s", what, sp.logs())
			}
		}
	}
	get := func(path, key string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+sp.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	list := func(key string) (int, string) { return get("/v1/skills", key) }
	if code, _ := list("k-old"); code != 200 {
		t.Fatalf("k-old: %d", code)
	}

	writeSkill("beta")
	if err := os.WriteFile(keysFile, []byte("# rotated\nk-new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("the library reloaded", func() bool { return logHas("SIGHUP: skill library reloaded") })
	if code, _ := list("k-old"); code != 401 {
		t.Errorf("the revoked key k-old: %d, want 401", code)
	}
	if code, body := list("k-new"); code != 200 || !strings.Contains(body, `"beta"`) {
		t.Errorf("k-new: %d %s, want 200 with the skill added", code, body)
	}
	// The library's life in the metrics: a reload, and two builds (the
	// start's and the change's).
	waitFor("the change's build", func() bool {
		_, m := get("/metrics", "k-new")
		return strings.Contains(m, "skillrouter_library_reloads_total 1\n") &&
			strings.Contains(m, `skillrouter_index_build_seconds_count{kind="built"} 2`) &&
			strings.Contains(m, "skillrouter_library_last_reload_timestamp_seconds ") &&
			strings.Contains(m, "skillrouter_index_keep_failures_total 0\n")
	})

	if err := os.WriteFile(keysFile, []byte("# emptied by mistake\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("the refusal logged", func() bool { return logHas("the client keys in force stay") })
	if code, _ := list("k-new"); code != 200 {
		t.Errorf("k-new after an empty key file: %d, want the keys in force kept", code)
	}
	if code, _ := list(""); code != 401 {
		t.Errorf("no key after an empty key file: %d, want 401", code)
	}
	if code, _ := list("k-inline"); code != 200 {
		t.Errorf("the inline key: %d, want 200", code)
	}
}
