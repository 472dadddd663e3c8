package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/internal/private/privatetest"
)

// TestExposedSecrets: a config file or key file that holds a secret and
// that other users can read is warned about (serve's log, doctor's row);
// one without a secret, or readable by this user alone, is not.
func TestExposedSecrets(t *testing.T) {
	for _, c := range []struct {
		name     string
		config   string      // YAML; "" for no config file
		mode     os.FileMode // of the config file
		keys     os.FileMode // of an api keys file; 0 for none
		wantFile string      // "config" or "keys"; "" when nothing is warned of
		holds    string
	}{
		{"upstream.api_key in a 0644 config", "upstream:\n  api_key: sk-upstream\n", 0o644, 0, "config", "upstream.api_key"},
		{"auth.api_keys in a 0644 config", "auth:\n  api_keys: [sk-a, sk-b]\n", 0o644, 0, "config", "auth.api_keys"},
		{"auth.admin_token in a group-readable config", "auth:\n  admin_token: adm-1\n", 0o640, 0, "config", "auth.admin_token"},
		{"several secrets", "upstream:\n  api_key: sk-up\nembedder:\n  api_key: sk-emb\nexec:\n  env: [TOKEN=t1]\n", 0o644, 0,
			"config", "upstream.api_key, embedder.api_key, exec.env"},
		{"an A/B arm's embedder key", "ab:\n  arms:\n    - name: a\n      percent: 50\n      strategy: bm25\n    - name: b\n      percent: 50\n      strategy: embedding\n      embedder:\n        provider: openai\n        api_key: sk-arm\n", 0o644, 0,
			"config", "ab.arms.embedder.api_key"},
		{"a secret in a private config", "upstream:\n  api_key: sk-upstream\n", 0o600, 0, "", ""},
		{"no secret in a 0644 config", "listen: 127.0.0.1:8080\nexec:\n  env: [HOME]\nupstream:\n  url: http://127.0.0.1:11434/v1\n", 0o644, 0, "", ""},
		{"an empty key in a 0644 config", "upstream:\n  api_key: \"\"\n", 0o644, 0, "", ""},
		{"a 0644 keys file", "", 0, 0o644, "keys", "client keys (auth.api_keys_file)"},
		{"a 0640 keys file", "", 0, 0o640, "keys", "client keys (auth.api_keys_file)"},
		{"a private keys file", "", 0, 0o600, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var args []string
			files := map[string]string{}
			if c.config != "" {
				p := filepath.Join(dir, "config.yaml")
				writeMode(t, p, c.config, c.mode)
				args = append(args, "--config", p)
				files["config"] = p
			}
			if c.keys != 0 {
				p := filepath.Join(dir, "keys")
				writeMode(t, p, "sk-client\n", c.keys)
				args = append(args, "--api-keys-file", p)
				files["keys"] = p
			}
			cfg, err := loadFor(t, args, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := exposedSecrets(&cfg)
			row := secretsRow(&cfg)
			var logs bytes.Buffer
			warnExposedSecrets(slog.New(slog.NewTextHandler(&logs, nil)), &cfg)
			if c.wantFile == "" {
				if len(got) != 0 || row.status != checkOK || logs.Len() != 0 {
					t.Fatalf("warned: %+v; doctor %+v; log %s", got, row, logs.String())
				}
				return
			}
			if len(got) != 1 || got[0].path != files[c.wantFile] || got[0].holds != c.holds || got[0].exposed == "" {
				t.Fatalf("exposedSecrets = %+v, want %s holding %s", got, files[c.wantFile], c.holds)
			}
			if row.status != checkWarn || !strings.Contains(row.detail, files[c.wantFile]) || !strings.Contains(row.detail, c.holds) ||
				!strings.Contains(row.fix, "chmod 600 "+files[c.wantFile]) {
				t.Errorf("doctor row: %+v", row)
			}
			l := logs.String()
			if !strings.Contains(l, "level=WARN") || !strings.Contains(l, "can be read by other users") || !strings.Contains(l, files[c.wantFile]) {
				t.Errorf("log: %s", l)
			}
			for _, secret := range []string{"sk-upstream", "sk-a", "adm-1", "sk-client", "sk-arm", "t1"} {
				if strings.Contains(l, secret) || strings.Contains(row.detail, secret) {
					t.Errorf("a secret shown: %s / %s", l, row.detail)
				}
			}
		})
	}
}

// A secret in the defaults file (SKILLROUTER_DEFAULTS) counts as well.
func TestExposedSecretsDefaultsFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "defaults.yaml")
	writeMode(t, p, "auth:\n  admin_token: adm-1\n", 0o644)
	cfg, err := loadFor(t, nil, map[string]string{envDefaults: p})
	if err != nil {
		t.Fatal(err)
	}
	if got := exposedSecrets(&cfg); len(got) != 1 || got[0].path != p || got[0].holds != "auth.admin_token" {
		t.Fatalf("exposedSecrets = %+v", got)
	}
}

// TestServeWarnsOfExposedSecrets: serve says so at start.
func TestServeWarnsOfExposedSecrets(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "config.yaml")
	writeMode(t, conf, "upstream:\n  api_key: sk-upstream\n", 0o644)
	sp := startServe(t, defaultsFor(t, "--config", conf), http.NotFoundHandler())
	if err := sp.stop(); err != nil {
		t.Fatal(err)
	}
	l := sp.logs()
	if !strings.Contains(l, "a file holding secrets can be read by other users: every user can read it (mode 0644)") ||
		!strings.Contains(l, conf) || !strings.Contains(l, "holds=upstream.api_key") || strings.Contains(l, "sk-upstream") {
		t.Errorf("serve's log:\n%s", l)
	}
}

func writeMode(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if mode&0o040 != 0 {
		privatetest.ShareGroup(t, p) // group-readable by others, not by a private group
	}
}
