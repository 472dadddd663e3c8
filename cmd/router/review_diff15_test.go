package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// values.schema.json takes a duration written as the number 0 ("a bare
// number refused but 0", enum [0, null]), and the chart renders config with
// toYaml, so `--set config.upstream.timeout=0` (or timeout: 0 in a values
// file) renders `timeout: 0` into config.yaml. serve refuses exactly that
// ("cannot unmarshal !!int `0` into time.Duration"): helm installs a
// release whose every pod fails at start, which the schema exists to
// prevent. Same for "8MIB": serve reads it (parseSize lowercases), the
// schema's pattern refuses it; the schema and serve disagree both ways.
func TestDiff15HelmSchemaDurationZeroServeRefuses(t *testing.T) {
	schema, err := os.ReadFile(valuesSchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Properties struct {
			Config struct {
				Properties struct {
					Upstream struct {
						Properties map[string]struct {
							AnyOf []struct {
								Enum []any `json:"enum"`
							} `json:"anyOf"`
						} `json:"properties"`
					} `json:"upstream"`
				} `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &sc); err != nil {
		t.Fatal(err)
	}
	zero := false
	for _, a := range sc.Properties.Config.Properties.Upstream.Properties["timeout"].AnyOf {
		zero = zero || slices.Contains(a.Enum, any(0.0))
	}
	if !zero {
		t.Skip("the schema no longer accepts the number 0 for durations")
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	// What toYaml renders for config.upstream.timeout=0.
	if err := os.WriteFile(p, []byte("upstream:\n  timeout: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.src = newProvenance()
	if err := loadConfigFile(p, &cfg); err != nil {
		t.Errorf("the values schema accepts a duration of 0, which serve refuses: %v", err)
	}
}
