//go:build unix

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

	up := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(up.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
	cfg.Listen = ln.Addr().String()
	ln.Close()
	cfg.Upstream.URL = up.URL + "/v1"
	cfg.Upstream.CheckInterval = 0
	cfg.Skills = []string{lib}
	cfg.Watch = false
	cfg.MCP.Enabled = false
	cfg.Routing.IndexDir = t.TempDir()
	cfg.Auth.APIKeysFile = keysFile
	cfg.Auth.APIKeys = []string{"k-inline"} // an emptied file must not leave only these
	logPath := filepath.Join(t.TempDir(), "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, cfg, cfg.Skills, logFile) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "skillrouter stopped") {
			t.Errorf("no last line after a clean stop:\n%s", b)
		}
	}()
	logHas := func(s string) bool { b, _ := os.ReadFile(logPath); return strings.Contains(string(b), s) }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(logPath)
				t.Fatalf("timed out waiting for %s:\n%s", what, b)
			}
		}
	}
	list := func(key string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+cfg.Listen+"/v1/skills", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b := new(strings.Builder)
		_, _ = io.Copy(b, resp.Body)
		return resp.StatusCode, b.String()
	}
	waitFor("ready", func() bool { return logHas("proxy ready") })
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
		req, _ := http.NewRequest("GET", "http://"+cfg.Listen+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer k-new")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := string(b)
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
