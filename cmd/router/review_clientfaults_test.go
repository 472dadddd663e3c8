package main

import (
	"strings"
	"testing"
	"time"
)

// TestWriteTimeoutConfig: server.write_timeout (default 1 min, from the
// file or SKILLROUTER_SERVER_WRITE_TIMEOUT) reaches the proxy's access
// settings; a bound that is not positive is refused, as for the other
// server timeouts.
func TestWriteTimeoutConfig(t *testing.T) {
	file := writeFile(t, "c.yaml", "server:\n  write_timeout: 45s\n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want time.Duration
		err  string
	}{
		{name: "default", want: time.Minute},
		{name: "file", args: []string{"--config", file}, want: 45 * time.Second},
		{name: "env", env: map[string]string{"SKILLROUTER_SERVER_WRITE_TIMEOUT": "2m"}, want: 2 * time.Minute},
		{name: "zero", env: map[string]string{"SKILLROUTER_SERVER_WRITE_TIMEOUT": "0s"}, err: "server.write_timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadFor(t, tc.args, tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, err := accessConfig(cfg, cfg.Listen)
			if err != nil {
				t.Fatal(err)
			}
			if a.WriteTimeout != tc.want {
				t.Errorf("WriteTimeout %v, want %v", a.WriteTimeout, tc.want)
			}
		})
	}
}
