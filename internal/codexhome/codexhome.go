// Package codexhome writes a throwaway Codex CLI configuration for tests
// that run the real `codex exec` against a fake model on loopback.
package codexhome

import (
	"fmt"
	"os"
	"path/filepath"
)

// KeyEnv is the environment variable Codex reads the provider's key from.
const KeyEnv = "SKILLROUTER_TEST_API_KEY"

// base is the configuration every test shares: one model provider at
// %[1]q, its key in the variable %[2]q, speaking the Responses API; no
// retries (a fake that refuses a request should fail the run at once), no
// approvals to wait for, the read-only sandbox, nothing that phones home,
// and OAuth tokens in files rather than the desktop keyring.
const base = `model = "fake-model"
model_provider = "skillrouter-test"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false
mcp_oauth_credentials_store = "file"

[features]
plugins = false
remote_plugin = false
apps = false

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.skillrouter-test]
name = "skillrouter test upstream"
base_url = %[1]q
env_key = %[2]q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`

// Config is the configuration for a model at baseURL (ending in /v1),
// followed by extra (more TOML tables, such as [mcp_servers.NAME]).
func Config(baseURL, extra string) string {
	cfg := fmt.Sprintf(base, baseURL, KeyEnv)
	if extra != "" {
		cfg += "\n" + extra
	}
	return cfg
}

// Write writes Config(baseURL, extra) to codexHome/config.toml.
func Write(codexHome, baseURL, extra string) error {
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(Config(baseURL, extra)), 0o644); err != nil {
		return fmt.Errorf("codex config: %w", err)
	}
	return nil
}
